"""SWE-bench task instances (JSON list, JSONL or the dataset's parquet files; 4.x and 5.x rows) ->
an evalkit `patch` suite.

One row becomes `<suite>/<instance_id>/case.yaml` with `test_patch.patch` and `gold.patch` beside
it (and `eval.sh`, a 5.x row's eval script). The source tree is `inputs.repo` at
`inputs.base_commit`, with the repository recorded as the row's `owner/name`: the run maps it to a
local clone or URL (`evalkit run --repo owner/name=DIR`, `sandbox.repos`, `sandbox.repos_dir`), so
a suite imported on one machine runs on another (there is no implicit github.com).

With `--tree-in-image /testbed` the cases use SWE-bench's environment images instead: the tree is
already in the image at its base commit, the image is the row's `image` (5.x) or the harness's
`sweb.eval.x86_64.<id>:latest` name, and the test command is the row's eval script (5.x) or, for a
4.x row, one of the same shape made here (the `swebench` package 5.x no longer holds 4.x specs).

Where no clone can be had, `--tree INSTANCE_ID=DIR` takes a plain folder (e.g. the unpacked PyPI
sdist of the release the base commit came just after) as that row's tree: it is copied into the
case as `tree/` (`inputs.source_dir`). Nothing can show the folder is the base commit, so such a
case says so in its description and carries the tag `unverified-tree`; the import only checks that
the gold patch and the test patch apply to the folder.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import shutil
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import LiteralScalarString

from evalkit.casemodels import CASE_ID
from evalkit.errors import InputError, Problem
from evalkit.fsutil import atomic_write_text, confine_writes, ensure_dir, guarded
from evalkit.sandbox.patchcheck import git_apply_check
from evalkit.swebench.rows import read_rows, test_list

#: SWE-bench 5.x row fields carried into the case.
V5_FIELDS = ("image", "eval_script", "log_parser", "eval_type")
#: Folder of SWE-bench's environment images that holds the tree at base_commit.
TESTBED = "/testbed"
EVAL_SCRIPT_FILE = "eval.sh"
REQUIRED = ("instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")
DEFAULT_TEST_COMMAND = "python3 -m pytest -rA -p no:cacheprovider"
#: Test command of a case whose eval script runs the tests (the sandbox runner exports where it is).
EVAL_SCRIPT_COMMAND = 'bash "$EVALKIT_EVAL_SCRIPT"'
#: Files a test patch touches that are data, not tests to run (as in SWE-bench's test directives).
NON_TEST_EXTS = (".json", ".png", ".csv", ".txt", ".md", ".rst", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml",
                 ".toml", ".cfg", ".ini", ".dcm", ".gz")
_PLUS_FILE = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.MULTILINE)
#: Folder (inside the case) a `--tree` folder is copied to, and the tag such a case carries.
TREE_DIR = "tree"
UNVERIFIED_TAG = "unverified-tree"


@dataclass
class Row:
    """One validated SWE-bench row and where it came from."""

    line: int | None
    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    problem_statement: str = ""
    version: str = ""
    image: str = ""
    """5.x: the row's environment image."""
    eval_script: str = ""
    """5.x: the row's eval script."""
    log_parser: str = ""
    """5.x: the harness log parser that grades the row."""
    eval_type: str = ""
    """5.x: how the harness runs the row's tests."""
    raw: Any = None
    """The row as read (duplicates are compared on it)."""


@dataclass
class ImportResult:
    """What an import wrote and what it left out."""

    written: list[str] = field(default_factory=list)
    """Case ids written."""
    skipped: dict[str, list[str]] = field(default_factory=dict)
    """SWE-bench repo without a --repo mapping -> instance ids left out."""
    unverified: list[str] = field(default_factory=list)
    """Case ids whose tree is a plain folder (--tree), not checked out at the row's base_commit."""
    warnings: list[str] = field(default_factory=list)
    """Things about written cases the user should know (e.g. test ids cut at a space)."""


def parse_row(raw: object, shown: str, line: int | None, index: int) -> Row:
    """Validate one raw row; raise InputError naming the file (and line, for JSONL) on a bad one."""
    where = f"row {index + 1}" + (f" ({raw.get('instance_id')})" if isinstance(raw, dict) and raw.get("instance_id") else "")
    if not isinstance(raw, dict):
        raise InputError(Problem(shown, line, f"{where}: expected a JSON object with {', '.join(REQUIRED)}"))
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise InputError(Problem(shown, line, f"{where}: missing field(s) {', '.join(missing)}"))
    problems = []
    for key in ("instance_id", "repo", "base_commit", "patch", "test_patch"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            problems.append(f"{key} must be a non-empty string")
    lists = {}
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        lists[key] = test_list(raw[key])
        if lists[key] is None:
            problems.append(f"{key} must be a list of test ids (or that list as a JSON string)")
    iid = raw["instance_id"]
    if isinstance(iid, str) and iid and (not re.match(CASE_ID, iid) or len(iid) > 120):
        problems.append(f"instance_id {iid!r} cannot be a case id (must match {CASE_ID}, at most 120 characters)")
    if lists.get("FAIL_TO_PASS") == []:
        problems.append("FAIL_TO_PASS is empty: nothing would show the fix works")
    if problems:
        raise InputError([Problem(shown, line, f"{where}: {p}") for p in problems])
    ps = raw.get("problem_statement")
    extra = {}
    for key in V5_FIELDS:  # SWE-bench 5.x: carried into the case
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            problems.append(f"{key} must be a string")
        extra[key] = value if isinstance(value, str) else ""
    if problems:
        raise InputError([Problem(shown, line, f"{where}: {p}") for p in problems])
    return Row(line=line, instance_id=iid, repo=raw["repo"], base_commit=raw["base_commit"].strip(),
               patch=raw["patch"], test_patch=raw["test_patch"], fail_to_pass=lists["FAIL_TO_PASS"] or [],
               pass_to_pass=lists["PASS_TO_PASS"] or [], problem_statement=ps if isinstance(ps, str) else "",
               version=str(raw.get("version") or ""), raw=raw, **extra)


def _where(shown: str, line: int | None, index: int) -> str:
    return f"{shown}:{line}" if line is not None else f"{shown} row {index + 1}"


def load_rows(path: Path, warnings: list[str] | None = None) -> list[Row]:
    """Every row of a SWE-bench instances file, validated; all problems are reported at once.

    A row repeated identically is kept once (a warning is appended to ``warnings``); two different
    rows with one instance_id are an error naming both places."""
    shown = str(path)
    rows: list[Row] = []
    problems: list[Problem] = []
    seen: dict[str, tuple[Row, str]] = {}
    for index, (line, raw) in enumerate(read_rows(path)):
        try:
            row = parse_row(raw, shown, line, index)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        here = _where(shown, line, index)
        if row.instance_id in seen:
            first, there = seen[row.instance_id]
            if first.raw == row.raw:
                if warnings is not None:
                    warnings.append(f"{here}: row {row.instance_id} repeats {there} identically; imported once")
                continue
            differ = sorted(k for k in {*first.raw, *row.raw} if first.raw.get(k) != row.raw.get(k))
            problems.append(Problem(shown, line, f"instance_id {row.instance_id!r} at {here} conflicts with the row at "
                                                 f"{there} (they differ in {', '.join(differ[:6])})"))
            continue
        seen[row.instance_id] = (row, here)
        rows.append(row)
    if problems:
        raise InputError(problems)
    return rows


def touched_test_files(test_patch: str) -> list[str]:
    """Files the test patch adds or changes that hold tests (deleted files and data files left out)."""
    out: list[str] = []
    for path in _PLUS_FILE.findall(test_patch):
        if path == "/dev/null" or path.endswith(NON_TEST_EXTS) or path in out:
            continue
        out.append(path)
    return out


def command_for(row: Row, prefix: str = DEFAULT_TEST_COMMAND) -> str:
    """The runner followed by the test files the test patch touches (as SWE-bench's harness runs them)."""
    return " ".join([prefix, *(shlex.quote(f) for f in touched_test_files(row.test_patch))])


def cut_test_ids(row: Row) -> list[str]:
    """Test ids that look cut at a space: SWE-bench's log parser splits `PASSED <id>` at whitespace, so a
    parametrized id such as `test_fail[custom-Custom error message.]` is stored as `test_fail[custom-Custom`."""
    return [t for t in row.fail_to_pass + row.pass_to_pass if "[" in t and not t.endswith("]")]


def parse_repo_map(specs: list[str]) -> dict[str, str]:
    """`OWNER/NAME=PATH_OR_URL` options -> {OWNER/NAME: local absolute path or URL}."""
    out = {}
    problems = []
    for spec in specs:
        name, sep, target = spec.partition("=")
        if not sep or not name.strip() or not target.strip() or "/" not in name:
            problems.append(Problem("--repo", None, f"{spec!r}: expected OWNER/NAME=PATH_OR_URL"))
            continue
        target = target.strip()
        if not re.match(r"^(https?://|git@|ssh://|file://)", target):
            p = Path(target).expanduser()
            if not p.exists():
                problems.append(Problem("--repo", None, f"{spec!r}: local path {target!r} does not exist"))
                continue
            target = str(p.resolve())
        out[name.strip()] = target
    if problems:
        raise InputError(problems)
    return out


def parse_tree_map(specs: list[str]) -> dict[str, Path]:
    """`INSTANCE_ID=DIR` options -> {instance_id: absolute folder}."""
    out: dict[str, Path] = {}
    problems = []
    for spec in specs:
        iid, sep, target = spec.partition("=")
        iid, target = iid.strip(), target.strip()
        if not sep or not iid or not target:
            problems.append(Problem("--tree", None, f"{spec!r}: expected INSTANCE_ID=DIR"))
            continue
        p = Path(target).expanduser()
        if not p.is_dir():
            problems.append(Problem("--tree", None, f"{spec!r}: {target!r} is not a folder"))
            continue
        if iid in out:
            problems.append(Problem("--tree", None, f"{spec!r}: a second folder for {iid}"))
            continue
        out[iid] = p.resolve()
    if problems:
        raise InputError(problems)
    return out


def check_trees(rows: list[Row], trees: dict[str, Path], source: Path) -> list[Problem]:
    """Every --tree must name a row, and the row's gold and test patches must apply to its folder."""
    by_id = {r.instance_id: r for r in rows}
    problems = []
    for iid, folder in trees.items():
        row = by_id.get(iid)
        if row is None:
            problems.append(Problem("--tree", None, f"{iid}: no row with that instance_id in {source}"))
            continue
        for what, patch in (("gold patch", row.patch), ("test patch", row.test_patch)):
            err = git_apply_check(folder, patch)
            if err:
                problems.append(Problem("--tree", None, f"{iid}: the {what} does not apply to {folder} "
                                                         f"(so it is not the tree at base_commit {row.base_commit[:12]}): {err}"))
    return problems


def _copy_tree(folder: Path, dest: Path) -> None:
    """The folder's files as the case's tree (a git repo's .git is left out; the sandbox makes its own)."""
    if dest.exists():
        shutil.rmtree(guarded(dest))
    shutil.copytree(folder, guarded(dest), symlinks=True, ignore=shutil.ignore_patterns(".git"))


def _dump_yaml(data: dict[str, Any]) -> str:
    y = YAML(typ="rt", pure=True)
    y.width = 4096
    y.default_flow_style = False
    buf = StringIO()
    y.dump(data, buf)
    return buf.getvalue()


def normalize_text(text: str) -> str:
    """A problem statement as the case file holds it: LF line ends, one final newline when multi-line."""
    clean = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    return clean + "\n" if "\n" in clean else clean


def _literal(text: str) -> Any:
    # Issue texts come with CRLF line ends; block style keeps the rest as written.
    clean = normalize_text(text)
    return LiteralScalarString(clean) if "\n" in clean.rstrip("\n") else clean


def official_image_name(instance_id: str) -> str:
    """SWE-bench's environment image of an instance, without a namespace (the run adds
    `sandbox.swebench_namespace`): `sweb.eval.x86_64.<id>:latest`, `__` -> `_1776_`, lower case."""
    return f"sweb.eval.x86_64.{instance_id}:latest".replace("__", "_1776_").lower()


def _patched_files(patch: str) -> list[str]:
    """Every file a diff names (old and new sides, /dev/null left out), in order."""
    out: list[str] = []
    for m in re.finditer(r"^(?:---|\+\+\+) (?:[ab]/)?(\S+)", patch, re.MULTILINE):
        if m.group(1) != "/dev/null" and m.group(1) not in out:
            out.append(m.group(1))
    return out


def harness_eval_script(row: Row, test_prefix: str | None, testbed: str = TESTBED) -> str:
    """An eval script of the harness's shape for a 4.x row (5.x rows carry their own): activate the
    image's `testbed` environment when there is one, put the test files back to base_commit, apply
    the test patch, run the tests between the harness's output markers, reset the test files.
    Made here because the `swebench` package 5.x holds no 4.x specs; the test command is evalkit's
    (pytest on the files the test patch touches, or --test-command), not the harness's per-version one."""
    files = " ".join(shlex.quote(f) for f in _patched_files(row.test_patch))
    commit = shlex.quote(row.base_commit)
    delim = "EOF_114329324912"
    return "\n".join([
        "#!/bin/bash",
        "set -uxo pipefail",
        "if [ -f /opt/miniconda3/bin/activate ]; then source /opt/miniconda3/bin/activate && conda activate testbed; fi",
        f"cd {shlex.quote(testbed)}",
        f"git checkout {commit} {files}",
        f"git apply -v - <<'{delim}'",
        row.test_patch.rstrip("\n"),
        delim,
        ": '>>>>> Start Test Output'",
        command_for(row, test_prefix or DEFAULT_TEST_COMMAND),
        ": '>>>>> End Test Output'",
        f"git checkout {commit} {files}",
        "",
    ])


def case_yaml(row: Row, repo: str | None, *, image: str | None, test_prefix: str | None,
              tree_from: str | None = None, tree_in_image: str | None = None) -> str:
    """The case file; `tree_from` names the plain folder a --tree case's `tree/` was copied from;
    `tree_in_image`: the tree is in SWE-bench's environment image (its eval script is the test command)."""
    if tree_from is not None:
        inputs: dict[str, Any] = {"source_dir": TREE_DIR, "base_commit": row.base_commit}
    elif tree_in_image is not None:
        inputs = {"tree_in_image": tree_in_image, "repo": row.repo, "base_commit": row.base_commit}
    else:
        inputs = {"repo": repo, "base_commit": row.base_commit}
    if row.problem_statement:
        inputs["problem_statement"] = _literal(row.problem_statement)
    inputs["test_patch_file"] = "test_patch.patch"
    if tree_in_image is not None:
        inputs["eval_script_file"] = EVAL_SCRIPT_FILE
        inputs["test_command"] = EVAL_SCRIPT_COMMAND
        inputs["image"] = image or row.image or official_image_name(row.instance_id)
    else:
        if row.eval_script:
            inputs["eval_script_file"] = EVAL_SCRIPT_FILE  # kept; runs with --tree-in-image only
        inputs["test_command"] = command_for(row, test_prefix or DEFAULT_TEST_COMMAND)
        if image:
            inputs["image"] = image
    if row.log_parser:
        inputs["log_parser"] = row.log_parser
    if row.eval_type:
        inputs["eval_type"] = row.eval_type
    first = row.problem_statement.strip().splitlines()[0][:200] if row.problem_statement.strip() else ""
    description = row.repo + (f": {first}" if first else "")
    tags = [row.repo.split("/")[-1]] + ([f"v{row.version}"] if row.version else [])
    header = f"# Imported from SWE-bench instance {row.instance_id} by `evalkit import swebench`.\n"
    if tree_from is not None:
        note = (f"The source tree is the plain folder {tree_from}, standing in for base_commit "
                f"{row.base_commit[:12]}; it was not verified to be that commit (only that the gold and test "
                "patches apply to it).")
        description += f" (tree: folder {tree_from}, not verified to be base_commit {row.base_commit[:12]})"
        tags.append(UNVERIFIED_TAG)
        header += f"# {note}\n"
    elif tree_in_image is None:
        header += (f"# The repository {row.repo} is mapped at run time: evalkit run --repo {row.repo}=DIR "
                   "(or sandbox.repos / sandbox.repos_dir in evalkit.yaml).\n")
    data = {
        "id": row.instance_id,
        "description": description,
        "tags": tags,
        "inputs": inputs,
        "reference": {"patch_file": "gold.patch", "fail_to_pass": row.fail_to_pass, "pass_to_pass": row.pass_to_pass},
    }
    return header + _dump_yaml(data)


def suite_yaml(source: Path, image: str | None) -> str:
    data: dict[str, Any] = {
        "kind": "patch",
        "language": "python",
        "description": f"SWE-bench instances imported from {source.name}: each case's gold patch must make its "
                       "FAIL_TO_PASS tests pass and keep its PASS_TO_PASS tests passing.",
    }
    if image:
        data["defaults"] = {"image": image}
    return "# Written by `evalkit import swebench`.\n" + _dump_yaml(data)


def import_swebench(source: Path, repos: dict[str, str], suite_dir: Path, *, image: str | None = None,
                    test_command: str | None = None, trees: dict[str, Path] | None = None,
                    tree_in_image: str | None = None) -> ImportResult:
    """Write a patch suite for every row whose repo is mapped, that has a --tree folder, or (with
    ``tree_in_image``) every row: its tree is in SWE-bench's environment image.

    Repositories are recorded as `owner/name` (the run maps them: portable suites); ``repos`` says
    which rows to take. Nothing is written when any row is bad or any --tree folder does not take
    the row's patches. A row with a --tree folder uses it even when its repo is mapped too.
    """
    result = ImportResult()
    rows = load_rows(source, result.warnings)
    trees = trees or {}
    problems = check_trees(rows, trees, source)
    if problems:
        raise InputError(problems)
    confine_writes(suite_dir)  # every file this import writes lands below the suite folder it was given
    ensure_dir(suite_dir)
    atomic_write_text(suite_dir / "suite.yaml", suite_yaml(source, None if tree_in_image else image))
    for row in rows:
        folder = trees.get(row.instance_id)
        if row.repo not in repos and folder is None and tree_in_image is None:
            result.skipped.setdefault(row.repo, []).append(row.instance_id)
            continue
        case_dir = suite_dir / row.instance_id
        ensure_dir(case_dir)
        atomic_write_text(case_dir / "gold.patch", row.patch)
        atomic_write_text(case_dir / "test_patch.patch", row.test_patch)
        if folder is not None:
            _copy_tree(folder, case_dir / TREE_DIR)
            result.unverified.append(row.instance_id)
        in_image = tree_in_image if folder is None else None
        script = row.eval_script or (harness_eval_script(row, test_command, in_image) if in_image else "")
        if script:
            atomic_write_text(case_dir / EVAL_SCRIPT_FILE, script if script.endswith("\n") else script + "\n")
        written = dataclasses.replace(row, eval_script=script)
        atomic_write_text(case_dir / "case.yaml", case_yaml(written, row.repo, image=image if in_image else None,
                                                           test_prefix=test_command,
                                                           tree_from=folder.name if folder is not None else None,
                                                           tree_in_image=in_image))
        result.written.append(row.instance_id)
    return result
