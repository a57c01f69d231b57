"""`evalkit check`, deeper: what can be known before running, each problem at file:line.

Systems: a command that does not resolve to an executable (a relative command resolves against
the config's folder, `{python}` is the running interpreter), a `{python} -m module` that cannot
be found, a recorded system's path, predictions and recorded outputs (malformed, not UTF-8).
Cases: regexes that do not compile (regex / not_regex assertions, agentic `regex` matchers),
`python` assertions whose function cannot be imported (tried in a subprocess, importing the way
the grader does), invalid JSON Schemas of `is_json`, empty FAIL_TO_PASS lists, gold and test
patches that are unsafe or do not apply to the case's tree, referenced text files that are not
UTF-8, and sandbox images that are neither present nor buildable (a warning when Docker does not
answer). Problems point at the YAML key's line: the case file's, or suite.yaml's when the value
comes from the suite's `defaults`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evalkit.casemodels import IncidentMatcher, PatchInputs
from evalkit.cases import Case, Project
from evalkit.config import CommandSystem, Config, RecordedSystem
from evalkit.kind_registry import kind
from evalkit.errors import InputError, Problem, rel
from evalkit.yamlio import line_of, load_yaml
from evalkit.artifacts import Sample
from evalkit.fsutil import digest
from evalkit.recorded_judge import load_recorded_grades
from evalkit.sandbox.backends import uses_images
from evalkit.sandbox.patchcheck import PatchRejected, check_patch, git_apply_check
from evalkit.stages.execute import RepoUnmapped, is_remote, official_image, resolve_repo, tree_in_image
from evalkit.systems.base import runs_on
from evalkit.systems.command import system_env
from evalkit.systems.recorded import load_predictions, recorded_system
from evalkit.yamlio import read_input_text, validate
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.sandbox import dockerclient as dockerclient_code
    from evalkit.sandbox import images as images_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    dockerclient_code = later("evalkit.sandbox.dockerclient")
    images_code = later("evalkit.sandbox.images")

PYTHON_IMPORT_TIMEOUT_S = 60.0


@dataclass(frozen=True, order=True)
class CheckWarning(Problem):
    """Something `check` could not verify or that only may go wrong; printed, exit status unaffected."""

    warning = True

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: warning: {self.message}"


def is_warning(problem: Problem) -> bool:
    return bool(getattr(problem, "warning", False))


def exact_line(node: object, loc: tuple[Any, ...]) -> int | None:
    """The line of the key at ``loc`` when the YAML has the whole path, else None."""
    cur = node
    line = None
    for part in loc:
        if isinstance(cur, dict) and part in cur:
            lc = getattr(cur, "lc", None)  # ruamel's CommentedMap knows its keys' lines
            line = lc.key(part)[0] + 1 if lc is not None else None
            cur = cur[part]
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            lc = getattr(cur, "lc", None)  # ruamel's CommentedSeq knows its items' lines
            line = lc.item(part)[0] + 1 if lc is not None else None
            cur = cur[part]
        else:
            return None
    return line


class Locator:
    """file:line of a key of a case: the case file's, or its suite.yaml `defaults` entry."""

    def __init__(self, cfg: Config, project: Project) -> None:
        self.root = Path(cfg.root)
        self.project = project
        self._nodes: dict[str, Any] = {}

    def _node(self, path: str) -> Any:
        if path not in self._nodes:
            try:
                self._nodes[path] = load_yaml(Path(path))
            except InputError:
                self._nodes[path] = None
        return self._nodes[path]

    def shown(self, path: str | Path) -> str:
        return rel(path, self.root)

    def at(self, case: Case, loc: tuple[Any, ...]) -> tuple[str, int | None]:
        node = self._node(case.path)
        line = exact_line(node, loc)
        if line is not None:
            return self.shown(case.path), line
        if loc and loc[0] == "inputs":
            suite_yaml = str(Path(self.project.suites[case.suite].dir) / "suite.yaml")
            sline = exact_line(self._node(suite_yaml), ("defaults",) + tuple(loc[1:]))
            if sline is not None:
                return self.shown(suite_yaml), sline
        return self.shown(case.path), line_of(node, loc) or 1

    def problem(self, case: Case, loc: tuple[Any, ...], message: str, warning: bool = False) -> Problem:
        file, line = self.at(case, loc)
        return (CheckWarning if warning else Problem)(file, line, message)


# ---------------------------------------------------------------- systems


def _config_lines(cfg: Config) -> tuple[Any, dict[str, int]]:
    """The config's YAML node and system name -> index in its `systems` list."""
    try:
        node = load_yaml(Path(cfg.path))
    except InputError:
        return None, {}
    index: dict[str, int] = {}
    for i, raw in enumerate(node.get("systems") or [] if isinstance(node, dict) else []):
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            index.setdefault(raw["name"], i)
    return node, index


def resolve_command(cfg: Config, system: CommandSystem) -> str | None:
    """The executable a command system's argv[0] names, as the run would find it; None when none."""
    prog = system.command[0].replace("{python}", sys.executable)
    if os.sep in prog or (os.altsep and os.altsep in prog):
        path = cfg.resolve(prog)
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(prog, path=_run_env(system).get("PATH", os.defpath))


def _run_env(system: CommandSystem) -> dict[str, str]:
    """The environment the run gives the system (clean: evalkit.systems.command.system_env)."""
    return system_env(system, {})


def _python_module(system: CommandSystem) -> str | None:
    """The module of a `{python} -m module` command."""
    argv = system.command
    if argv[0] == "{python}" and len(argv) >= 3 and argv[1] == "-m":
        return argv[2]
    return None


def _module_found(module: str, env: dict[str, str]) -> str | None:
    """None when ``python -m module`` can find the module (in a fresh process, as the run does), else why not."""
    code = ("import importlib.util, sys\n"
            "try:\n    s = importlib.util.find_spec(sys.argv[1])\n"
            "except Exception as e:\n    print(f'{type(e).__name__}: {e}'); sys.exit(1)\n"
            "sys.exit(0 if s else 3)\n")
    with tempfile.TemporaryDirectory(prefix="evalkit-check-") as tmp:
        try:
            proc = subprocess.run([sys.executable, "-c", code, module], cwd=tmp, env=env,
                                  capture_output=True, text=True, timeout=PYTHON_IMPORT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"looking it up took more than {PYTHON_IMPORT_TIMEOUT_S:.0f} s"
    if proc.returncode == 0:
        return None
    return "no module of that name" if proc.returncode == 3 else (proc.stdout.strip() or proc.stderr.strip())[:300]


INTERPRETERS = ("{python}", "python", "python3", "bash", "sh", "node", "ruby", "perl")


def _missing_script(cfg: Config, system: Any) -> str | None:
    """The script an interpreter is given (``python3 gen/my_generator.py``) when it does not exist (the
    config's folder for a relative path): every run would fail with "can't open file"."""
    argv = system.command
    if len(argv) < 2 or os.path.basename(argv[0]) not in INTERPRETERS or argv[1].startswith("-") or "{" in argv[1]:
        return None
    return None if cfg.resolve(argv[1]).exists() else argv[1]


def check_systems(cfg: Config, project: Project) -> list[Problem]:
    """Commands, recorded paths and suites of every system, each at its line in the config."""
    node, index = _config_lines(cfg)
    shown = cfg.path
    problems: list[Problem] = []
    for system in cfg.systems:
        i = index.get(system.scenario_of or system.name)
        base = ("systems", i) if i is not None else ("systems",)

        def at(*loc: Any, base: tuple[Any, ...] = base) -> int | None:
            return line_of(node, base + loc) if node is not None else None

        if isinstance(system, CommandSystem):
            if resolve_command(cfg, system) is None:
                prog = system.command[0]
                how = ("relative paths resolve against the config's folder" if os.sep in prog
                       else "looked up on PATH")
                problems.append(Problem(shown, at("command", 0), f"system {system.name!r}: command {prog!r} not found "
                                        f"or not executable ({how}); expected an executable program"))
            elif (module := _python_module(system)) and (why := _module_found(module, _run_env(system))):
                problems.append(Problem(shown, at("command", 2), f"system {system.name!r}: `{{python}} -m {module}` "
                                        f"cannot run: {why}; expected an importable module"))
        if system.adapter == "command" and (missing := _missing_script(cfg, system)):
            problems.append(Problem(shown, at("command", 1), f"system {system.name!r}: script {missing!r} not found "
                                    f"(relative paths resolve against the config's folder {cfg.root}); expected an "
                                    "existing file"))
        if system.adapter == "recorded":
            problems.extend(check_recorded(cfg, project, recorded_system(system), shown, at("path")))
            grades = getattr(system, "grades", None)
            if grades:
                if not cfg.resolve(grades).is_file():
                    problems.append(Problem(shown, at("grades"), f"system {system.name!r}: grades file {grades!r} "
                                            "not found (relative paths resolve against the config's folder); expected "
                                            "the recorded-grades JSON written by evalkit import kai-ci / kai-eval"))
                else:
                    try:
                        load_recorded_grades(cfg.resolve(grades), grades)
                    except InputError as exc:
                        problems.extend(Problem(p.file, p.line, f"system {system.name!r} grades: {p.message}")
                                        for p in exc.problems)
        for j, s in enumerate(system.suites or []):
            if s not in project.suites:
                problems.append(Problem(shown, at("suites", j), f"system {system.name!r}: unknown suite {s!r}; "
                                        f"expected one of {', '.join(sorted(project.suites)) or '(none)'}"))
    return problems


def _json_problems(path: Path, shown: str) -> list[Problem]:
    """A recorded output file: UTF-8 JSON of the answer shape, or problems naming file:line."""

    try:
        text = read_input_text(path, shown)
    except InputError as exc:
        return exc.problems
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [Problem(shown, exc.lineno, f"malformed JSON: {exc.msg} (column {exc.colno}); "
                                           f"expected one answer object (files, patch, text, ...)")]
    if not isinstance(data, dict):
        return [Problem(shown, 1, f"expected a JSON object (files, patch, text, ...), got {type(data).__name__}")]
    try:
        Sample.model_validate(data)
    except ValidationError:
        try:  # JSON is YAML: parse it again with line numbers to point at the bad key
            node = load_yaml(path, shown)
        except InputError:
            node = None
        try:
            validate(Sample, node if isinstance(node, dict) else data, shown)
        except InputError as exc:
            return [Problem(p.file, p.line or 1, f"{p.message} (expected the command protocol's answer shape)")
                    for p in exc.problems]
    return []


def check_recorded(cfg: Config, project: Project, system: RecordedSystem, shown: str, line: int | None) -> list[Problem]:
    """A recorded system's predictions file, or every recorded output of the cases it runs on."""

    path = cfg.resolve(system.path)
    if not path.exists():
        return [Problem(shown, line, f"system {system.name!r}: recorded path {system.path!r} does not exist; "
                                     f"expected a folder of <suite>/<case>.json or a predictions .jsonl")]
    if path.is_file():
        try:
            load_predictions(path)
        except InputError as exc:
            return exc.problems
        return []
    problems: list[Problem] = []
    missing: dict[str, list[str]] = {}
    for case in project.cases:
        suite = project.suites.get(case.suite)
        if suite is None or not runs_on(system, case.suite, suite.kind):
            continue
        files = [path / case.suite / f"{case.id}.json"]
        files += [path / case.suite / f"{case.id}.{i}.json" for i in range(1, system.samples)]
        found = [f for f in files if f.exists()]
        if not found:
            missing.setdefault(case.suite, []).append(case.id)
        for f in found:
            problems.extend(_json_problems(f, rel(f, cfg.root)))
    for suite_name, ids in sorted(missing.items()):
        problems.append(CheckWarning(shown, line, f"system {system.name!r}: no recorded output for {len(ids)} case(s) "
                                                  f"of suite {suite_name} ({', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''}); "
                                                  f"they will be recorded as errors"))
    return problems


# ---------------------------------------------------------------- cases


def _python_targets(values: list[str]) -> dict[str, str]:
    """`module:function` -> None when importable and callable, else why not (one subprocess for all)."""
    code = (
        "import importlib, json, sys\n"
        "out = {}\n"
        "for v in json.loads(sys.stdin.read()):\n"
        "    mod, _, fn = v.partition(':')\n"
        "    try:\n"
        "        f = getattr(importlib.import_module(mod), fn)\n"
        "        out[v] = None if callable(f) else f'{fn} is not callable'\n"
        "    except BaseException as e:\n"
        "        out[v] = f'{type(e).__name__}: {e}'\n"
        "sys.stdout.write('\\n@@evalkit@@' + json.dumps(out))\n")
    try:  # the grader imports in the evalkit process: same interpreter, working directory and environment
        proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(values), capture_output=True,
                              text=True, timeout=PYTHON_IMPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {v: f"importing took more than {PYTHON_IMPORT_TIMEOUT_S:.0f} s" for v in values}
    _, sep, tail = proc.stdout.rpartition("\n@@evalkit@@")
    if not sep:
        why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1][:300]
        return {v: f"importing stopped the process: {why}" for v in values}
    return json.loads(tail)


def check_assertions(case: Case, where: Locator, python_calls: list[tuple[Case, int, str]]) -> list[Problem]:
    """Regexes compile, strings are strings, schemas are JSON Schemas, python values name module:function."""
    problems = []
    for i, spec in enumerate(case.assertions):
        typ, value, loc = spec.type, spec.value, ("assertions", i, "value")
        if typ in ("contains", "not_contains", "icontains", "not_icontains", "regex", "not_regex"):
            if not isinstance(value, (str, int, float)) or isinstance(value, bool) or value == "":
                problems.append(where.problem(case, loc if value is not None else ("assertions", i),
                                              f"assertions[{i}] ({typ}): value: expected a non-empty string, "
                                              f"got {json.dumps(value)}"))
                continue
        if typ in ("regex", "not_regex"):
            try:
                re.compile(str(value), re.MULTILINE)
            except re.error as exc:
                problems.append(where.problem(case, loc, f"assertions[{i}] ({typ}): regular expression {value!r} does "
                                                         f"not compile: {exc}; expected a Python regular expression"))
        elif typ == "python":
            if not isinstance(value, str) or not re.match(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", value):
                problems.append(where.problem(case, loc, f"assertions[{i}] (python): value {value!r}: expected "
                                                         f"module:function (e.g. mychecks.grading:has_tests)"))
            else:
                python_calls.append((case, i, value))
        elif typ == "is_json" and spec.schema_ is not None:
            from jsonschema import Draft202012Validator  # deferred: jsonschema, only when a schema is checked
            from jsonschema.exceptions import SchemaError  # deferred: jsonschema, only when a schema is checked

            try:
                Draft202012Validator.check_schema(spec.schema_)
            except SchemaError as exc:
                problems.append(where.problem(case, ("assertions", i, "schema"),
                                              f"assertions[{i}] (is_json): schema is not a valid JSON Schema: "
                                              f"{exc.message[:200]}"))
        elif typ == "file_set" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            problems.append(where.problem(case, loc, f"assertions[{i}] (file_set): value: expected a list of "
                                                     f"output file paths, got {json.dumps(value)}"))
    return problems


def check_matchers(case: Case, where: Locator) -> list[Problem]:
    problems = []
    matchers: dict[str, IncidentMatcher] = getattr(case.inputs, "matchers", {})  # migration and agentic cases
    for rule, m in matchers.items():
        if m.type == "regex":
            try:
                re.compile(m.pattern, re.M)
            except re.error as exc:
                problems.append(where.problem(case, ("inputs", "matchers", rule, "pattern"),
                                              f"inputs.matchers.{rule}.pattern: regular expression {m.pattern!r} "
                                              f"does not compile: {exc}; expected a Python regular expression"))
    return problems


def check_text_files(case: Case, where: Locator) -> list[Problem]:
    """Files the case's stages read as text (`*_file`, `reference.files.*`) must be UTF-8."""
    problems = []
    for dotted, target in case.refs.items():
        if not (dotted.endswith("_file") or dotted.startswith("reference.files.")) or not os.path.isfile(target):
            continue
        if kind(case.kind).execution.executed and dotted.endswith("patch_file"):
            continue  # check_patches says it, with the rest of what is wrong with the patch
        try:
            data = Path(target).read_bytes()
        except OSError as exc:
            problems.append(where.problem(case, _loc(dotted), f"{dotted}: cannot read {rel(target, where.root)}: {exc.strerror}"))
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[:exc.start].count(b"\n") + 1
            problems.append(where.problem(case, _loc(dotted), f"{dotted}: {rel(target, where.root)} is not UTF-8 text "
                                                              f"({exc.reason} at byte {exc.start}, its line {line}); "
                                                              f"expected a UTF-8 text file"))
    return problems


def _loc(dotted: str) -> tuple[Any, ...]:
    if dotted.startswith("reference.files."):  # output paths hold dots of their own
        return ("reference", "files", dotted[len("reference.files."):])
    return tuple(int(p) if p.isdigit() else p for p in dotted.split("."))


# ---------------------------------------------------------------- patches and trees


def _tree(case: Case, cfg: Config, scratch: Path, where: Locator) -> tuple[Path | None, Problem | None]:
    """The case's source tree on the host (a local repo@commit is archived into scratch)."""
    folder = case.ref_path("inputs.source_dir")
    if folder is not None:
        return folder, None
    inputs = case.inputs_as(PatchInputs)  # agentic and e2e cases have a source_dir
    repo, commit = inputs.repo, inputs.base_commit
    if inputs.tree_in_image:
        return None, where.problem(case, ("inputs", "tree_in_image"), f"the tree is in the image "
                                   f"{official_image(cfg, inputs.image)}: check does not open images, "
                                   "so the patches were not checked against it", warning=True)
    if not repo or not commit:
        return None, where.problem(case, ("inputs",), "patch case needs inputs.source_dir, or inputs.repo and "
                                                      "inputs.base_commit")

    try:
        repo = resolve_repo(cfg, str(repo))  # `owner/name` (portable SWE-bench imports) -> this machine's clone
    except RepoUnmapped as exc:
        return None, where.problem(case, ("inputs", "repo"), f"{exc}; the patches were not checked", warning=True)

    cached = cfg.work_path / "cache" / "trees" / digest([repo, commit])[:24]
    if (cached / ".evalkit-complete").exists():
        return cached, None
    if is_remote(repo):
        return None, where.problem(case, ("inputs", "repo"), f"inputs.repo {repo!r} is remote: check does not clone, "
                                                             f"so the patches were not checked against it", warning=True)
    dest = scratch / digest([repo, commit])[:24]
    if not dest.exists():
        archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", str(commit)], capture_output=True)
        if archive.returncode:
            why = archive.stderr.decode(errors="replace").strip().splitlines()
            return None, where.problem(case, ("inputs", "base_commit"), f"cannot check out {commit} of {repo}: "
                                                                        f"{(why or ['git archive failed'])[0][:300]}")
        dest.mkdir(parents=True)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest, None


def patch_problem(tree: Path, data: bytes, strict: bool) -> str | None:
    """Why the patch would be refused or not apply to the tree (None: it applies), as the sandbox tries it:
    `git apply`, then (not strict) `patch --fuzz=3`; nothing in the tree is changed."""

    try:
        check_patch(data)
    except PatchRejected as exc:
        return f"is refused: {exc}; expected a unified diff of files inside the tree"
    text = data.decode("utf-8")
    text = text if text.endswith("\n") else text + "\n"
    err = git_apply_check(tree, text)
    if err is not None and not strict and shutil.which("patch"):
        fuzz = subprocess.run(["patch", "-p1", "--fuzz=3", "--batch", "--forward", "--dry-run", "-r", os.devnull],
                              cwd=tree, input=text.encode(), capture_output=True)
        err = None if fuzz.returncode == 0 else err
    return err and f"does not apply to the case's tree ({tree}): {err}; expected a unified diff against that tree"


def check_patches(case: Case, cfg: Config, scratch: Path, where: Locator) -> list[Problem]:
    """Empty FAIL_TO_PASS; the gold patch and the test patch are diffs that apply to the case's tree."""
    problems: list[Problem] = []
    patches = [(k, p, strict) for k, strict in (("reference.patch_file", False), ("inputs.test_patch_file", True))
               if (p := case.ref_path(k)) is not None and p.is_file()]
    if not patches:
        return problems
    tree, trouble = _tree(case, cfg, scratch, where)
    if trouble is not None:
        return problems + [trouble]
    if tree is None or not tree.is_dir():
        return problems
    for key, path, strict in patches:
        try:
            data = path.read_bytes()
        except OSError as exc:
            problems.append(where.problem(case, _loc(key), f"{key}: cannot read: {exc.strerror}"))
            continue
        if not shutil.which("git"):
            problems.append(where.problem(case, _loc(key), f"{key}: not checked: git is not installed", warning=True))
            continue
        why = patch_problem(tree, data, strict)
        if why:
            what = "test patch" if key.startswith("inputs") else "gold patch"
            problems.append(where.problem(case, _loc(key), f"{key}: the {what} {why.replace(str(tree), rel(tree, where.root))}"))
    return problems


def check_images(cases: list[Case], cfg: Config, where: Locator) -> list[Problem]:
    """Every sandbox image is present or buildable (warnings only when Docker does not answer)."""

    if not uses_images(cfg.sandbox.backend):
        return []
    uses: dict[tuple[str, str | None], list[Case]] = {}
    for case in cases:
        if not kind(case.kind).sandbox_image(case):  # patch: always; agentic, e2e: with a test_command
            continue
        dockerfile = case.ref_path("inputs.dockerfile_dir")
        image = str(getattr(case.inputs, "image", ""))  # every kind that runs tests names its image

        if tree_in_image(case):  # SWE-bench's image: under sandbox.swebench_namespace, as the run names it

            image = official_image(cfg, image)
        uses.setdefault((image, str(dockerfile) if dockerfile else None), []).append(case)
    if not uses:
        return []

    def report(group: list[Case], key: str, message: str, warning: bool = False) -> list[Problem]:
        # One per place the value is written (suite.yaml defaults: once); deep_checks drops repeats.
        return [where.problem(case, ("inputs", key), message, warning) for case in group]

    problems: list[Problem] = []
    for (image, folder), group in uses.items():
        if folder and not (Path(folder) / "Dockerfile").is_file():
            problems += report(group, "dockerfile_dir", f"inputs.dockerfile_dir: no Dockerfile in "
                                                        f"{rel(folder, where.root)}; expected a folder holding "
                                                        f"a Dockerfile to build {image}")
    if not dockerclient_code.docker_available():  # within silence.ANSWER_S: check must not hang on a dead host
        for (image, _), group in uses.items():
            problems += report(group, "image", f"Docker does not answer, so the sandbox image {image} was not "
                                               f"checked", warning=True)
        return problems
    import docker.errors  # deferred: docker-py, only when a container runs

    present: dict[str, bool] = {}
    for (image, folder), group in uses.items():
        try:
            if image not in present:
                present[image] = images_code.image_id(image) is not None
        except dockerclient_code.DOCKER_FAILURES as exc:  # the daemon's failures, a refused name among them
            said = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            if isinstance(exc, docker.errors.APIError) and exc.is_client_error():  # the name: bad input
                problems += report(group, "image", f"inputs.image {image!r}: Docker cannot look it up: {said}")
            else:  # the daemon failed, not the project: as when it does not answer
                problems += report(group, "image", f"Docker failed when asked for the sandbox image {image}, so it "
                                                   f"was not checked: {said}", warning=True)
            continue
        if present[image] or (folder and (Path(folder) / "Dockerfile").is_file()):
            continue
        hint = "; for the default image run scripts/build-base-image.sh" if image.startswith("evalkit/") else \
            f"; pull it first (docker pull {image}) or give inputs.dockerfile_dir"
        problems += report(group, "image", f"inputs.image: image {image!r} is neither present nor buildable "
                                           f"(no inputs.dockerfile_dir){hint}")
    return problems


def check_cases(cfg: Config, project: Project) -> list[Problem]:
    """Deep checks of every case that loaded without problems."""
    where = Locator(cfg, project)
    problems: list[Problem] = []
    calls: list[tuple[Case, int, str]] = []
    ok = [c for c in project.cases if c.ok]
    with tempfile.TemporaryDirectory(prefix="evalkit-check-") as tmp:
        for case in ok:
            problems += check_text_files(case, where)
            problems += check_assertions(case, where, calls)
            problems += check_matchers(case, where)
            problems += kind(case.kind).deep_checks(case, cfg, Path(tmp), where)  # e.g. the patches apply
    if calls:
        verdicts = _python_targets(sorted({v for _, _, v in calls}))
        for case, i, value in calls:
            why = verdicts.get(value)
            if why:
                problems.append(where.problem(case, ("assertions", i, "value"),
                                              f"assertions[{i}] (python): cannot import {value}: {why}; expected "
                                              f"module:function importable by the evalkit process"))
    problems += check_images(ok, cfg, where)
    return problems


def deep_checks(cfg: Config, project: Project) -> list[Problem]:
    """Everything above; errors and CheckWarnings, in file order."""
    out = check_systems(cfg, project) + check_cases(cfg, project)
    return sorted(dict.fromkeys(out), key=lambda p: (p.file, p.line or 0, p.message))
