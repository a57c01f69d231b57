"""Finding, validating and caching the cases of a project.

A suite is a folder `cases/<suite>/` with a `suite.yaml`; a case is `cases/<suite>/<name>/case.yaml`
or `cases/<suite>/<name>.yaml`. Files a case refers to (keys ending in `_file`, `_dir`, `_files`)
are relative to the case's folder and must stay inside the suite folder.

Suite folder names and case ids become folder and page names, so they must follow the name rule
(evalkit.names). A case whose id breaks it, or repeats an id already taken in its suite, is *left
out*: not in `Project.cases` (no task, no artifact, no page), listed in `Project.left_out` with
file:line. So is a suite folder with a bad name or without a suite.yaml. A case that is merely
broken (bad YAML, a missing file) keeps a valid id and is recorded as an error during a run.

Parsing YAML dominates discovery, so parsed cases are cached by the stat signature of every file
they depend on; a no-op run only stats files.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, TypeVar

from pydantic import BaseModel, ValidationError, create_model
from pydantic_core import to_jsonable_python

from evalkit.casemodels import AssertionSpec, CaseFile, Criterion, SuiteSpec
from evalkit.kind_registry import KindContract, kind
from evalkit.errors import InputError, Problem
from evalkit.fsutil import atomic_write_bytes, digest, file_digest
from evalkit.models import OpenModel
from evalkit.names import case_id_problem, is_valid_name, name_problem, suite_name_problem
from evalkit.yamlio import describe_error, line_of, load_yaml, plain, validate
from evalkit.graders.rubric_config import resolved_ref, suite_rubric_problem
from evalkit.kind_registry import UNKNOWN
import dataclasses
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit import solved_store as solved_store_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    solved_store_code = later("evalkit.solved_store")

CACHE_VERSION = 9
REF_SUFFIXES = ("_file", "_dir", "_files")
M = TypeVar("M", bound=BaseModel)


@dataclass
class Suite:
    """A suite folder and its validated suite.yaml (spec is None when suite.yaml is broken)."""

    name: str
    dir: str
    spec: SuiteSpec | None
    problems: list[Problem] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.spec.kind if self.spec else UNKNOWN

    @property
    def language(self) -> str:
        return self.spec.language if self.spec else "text"


@dataclass
class Case:
    """One loaded case. Broken cases keep their problems and are recorded as errors during a run."""

    suite: str
    id: str
    kind: str
    language: str
    path: str
    """The case file."""
    dir: str
    """Folder relative file references resolve against."""
    files: list[str]
    """Every file the case depends on (doit file_dep)."""
    inputs: BaseModel = field(default_factory=OpenModel)
    """What the system under test gets, typed by the kind's model (``Kind.inputs``, suite defaults merged);
    an OpenModel for a kind without one, or holding a broken case's raw mapping. Read it typed through
    ``inputs_as(TheKindsModel)``."""
    reference: BaseModel = field(default_factory=OpenModel)
    """The expected answer, typed by the kind's model (``Kind.reference``), like ``inputs``."""
    description: str = ""
    """What the case checks."""
    tags: list[str] = field(default_factory=list)
    """Labels for breakdowns in the report."""
    assertions: list[AssertionSpec] = field(default_factory=list)
    """Deterministic checks of the output."""
    criteria: list[Criterion] = field(default_factory=list)
    """Rubric criteria for a judge (generation suites)."""
    refs: dict[str, str] = field(default_factory=dict)
    """Dotted key of a file reference -> absolute path."""
    problems: list[Problem] = field(default_factory=list)
    digest: str = ""
    """Digest of the contents of every file the case depends on."""
    trusted: bool = False
    """From the suite's `trusted`: its executions may run on the host when `auto` found no Docker daemon."""
    test_changes: Literal["refuse", "revert"] = "refuse"
    """From the suite's `test_changes`: refuse or revert a system's changes to test infrastructure."""
    test_paths: list[str] | None = None
    """From the suite's `test_paths` (None: the sandbox's defaults)."""
    id_line: int | None = None
    """Line of the `id:` key in the case file (None without one)."""
    bad_id: bool = False
    """The id the case file gives (or its file name, without one) breaks the name rule: left out."""
    rubric: str | None = None
    """The suite's judge rubric: a shipped name or the rubric file's absolute path; None: the judge config's."""
    judged_files: int = 0
    """From a patch or e2e suite's `judge:`: changed files the rubric judge reads per output (0: not judged)."""
    shared_files: list[str] = field(default_factory=list)
    """Files of `files` many cases share and take a part of (a suite's solved-incident store): watched for
    changes, but digested through what the case took from them (`looked_up`), not their bytes."""
    looked_up: dict[str, Any] = field(default_factory=dict)
    """What the case took from its shared files (the solved example looked up), part of its digest."""

    @property
    def key(self) -> str:
        return f"{self.suite}/{self.id}"

    @property
    def ok(self) -> bool:
        return not self.problems

    def inputs_as(self, model: type[M]) -> M:
        """The inputs as the kind's model ``model`` (TypeError when the case's kind types them otherwise)."""
        return _typed(self, "inputs", self.inputs, model)

    def reference_as(self, model: type[M]) -> M:
        """The reference as the kind's model ``model`` (TypeError when the case's kind types it otherwise)."""
        return _typed(self, "reference", self.reference, model)

    def with_inputs(self, **changes: object) -> "Case":
        """A copy whose inputs have ``changes`` (e.g. a re-invoked system's feedback), the rest shared."""

        return dataclasses.replace(self, inputs=self.inputs.model_copy(update=changes))

    @property
    def data(self) -> dict[str, Any]:
        """The case as JSON: what a command system and the case page get."""
        return {"id": self.id, "description": self.description, "tags": list(self.tags),
                "inputs": self.inputs.model_dump(mode="json"), "reference": self.reference.model_dump(mode="json"),
                "assertions": [a.model_dump(mode="json", by_alias=True) for a in self.assertions],
                "criteria": [c.model_dump(mode="json") for c in self.criteria]}

    def ref_path(self, dotted: str) -> Path | None:
        """Absolute path of a file reference such as `inputs.legacy_file`."""
        p = self.refs.get(dotted)
        return Path(p) if p else None

    def read(self, dotted: str) -> str | None:
        """Text of a referenced file, or None when the case has no such reference."""
        p = self.ref_path(dotted)
        return p.read_text(encoding="utf-8", errors="replace") if p else None


def _typed(case: Case, part: str, value: BaseModel, model: type[M]) -> M:
    if not isinstance(value, model):
        raise TypeError(f"{case.key}: {part} are a {type(value).__name__}, expected {model.__name__} "
                        f"(suite kind {case.kind})")
    return value


@dataclass(frozen=True)
class LeftOut:
    """A case or suite found under the cases folder but left out of the run, and why."""

    suite: str | None
    """The suite a left-out case belongs to (None: the suite itself is left out)."""
    problem: Problem
    """Why, with file:line."""


@dataclass
class Project:
    """Every suite and case found under the cases folder."""

    suites: dict[str, Suite]
    cases: list[Case]
    left_out: list[LeftOut] = field(default_factory=list)
    """Cases and suites not in the run (bad names, duplicate ids, no suite.yaml): listed, never run."""
    fatal: list[Problem] = field(default_factory=list)
    """Project-level problems: nothing can run (no cases folder, no suite in it)."""

    @property
    def problems(self) -> list[Problem]:
        out = list(self.fatal) + [p for s in self.suites.values() for p in s.problems]
        out += [lo.problem for lo in self.left_out]
        seen = set(out)
        for c in self.cases:
            for p in c.problems:
                if p not in seen:
                    seen.add(p)
                    out.append(p)
        return sorted(out, key=lambda p: (p.file, p.line or 0, p.message))

    def input_notes(self) -> list[str]:
        """What the report says about input left out or broken at suite level, one line each."""
        notes = [f"Broken suite.yaml, its cases are recorded as broken: {p}"
                 for s in self.suites.values() if s.spec is None for p in s.problems]
        notes += [f"Left out of this run: {lo.problem}" for lo in self.left_out]
        return notes

    def case(self, key: str) -> Case:
        index = self.__dict__.get("_index")
        if index is None or len(index) != len(self.cases):
            index = self.__dict__["_index"] = {c.key: c for c in self.cases}
        return index[key]


def _case_files(suite_dir: Path) -> list[tuple[str, Path]]:
    """(name, case file) for every case in a suite folder, sorted by name."""
    found = []
    with os.scandir(suite_dir) as it:
        for entry in it:
            if entry.name.startswith((".", "_")) or entry.name == "suite.yaml":
                continue
            if entry.is_dir():
                case_yaml = os.path.join(entry.path, "case.yaml")
                if os.path.exists(case_yaml):
                    found.append((entry.name, Path(case_yaml)))
            elif entry.name.endswith((".yaml", ".yml")):
                found.append((entry.name.rsplit(".", 1)[0], Path(entry.path)))
    return sorted(found)


def _walk_refs(node: Any, prefix: tuple[Any, ...]) -> Iterable[tuple[tuple[Any, ...], str]]:
    """(loc, relative path) of every file reference in a validated case dict."""
    if isinstance(node, dict):
        for k, v in node.items():
            loc = prefix + (k,)
            if prefix == ("reference",) and k == "files" and isinstance(v, dict):
                for name, item in v.items():  # expected output files: output path -> case file
                    if isinstance(item, str):
                        yield loc + (name,), item
                continue
            if isinstance(k, str) and k.endswith(REF_SUFFIXES):
                if isinstance(v, str):
                    yield loc, v
                elif isinstance(v, list):
                    for i, item in enumerate(v):
                        if isinstance(item, str):
                            yield loc + (i,), item
                continue
            yield from _walk_refs(v, loc)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk_refs(v, prefix + (i,))


def _files_below(path: Path) -> list[str]:
    if path.is_file():
        return [str(path)]
    out: list[str] = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        out.extend(str(Path(root) / f) for f in sorted(files))
    return out


def _typed_case_file(inputs: type[BaseModel] | None, reference: type[BaseModel] | None) -> type[CaseFile]:
    """The case file of a suite kind: `inputs` and `reference` typed by the kind's models (an OpenModel, which
    keeps every key, for a part the kind does not type), so one validation makes the whole case typed."""
    key = (inputs or OpenModel, reference or OpenModel)
    made = _TYPED_CASE_FILES.get(key)
    if made is None:
        made = _TYPED_CASE_FILES[key] = create_model(
            f"{key[0].__name__}CaseFile", __base__=CaseFile, inputs=(key[0], ...), reference=(key[1], ...))
    return made


_TYPED_CASE_FILES: dict[tuple[type[BaseModel], type[BaseModel]], type[CaseFile]] = {}


def _load_case(suite: Suite, name: str, case_path: Path, shown: str) -> Case:
    """Parse, merge the suite's defaults into the inputs, and validate a case once against its kind's case file
    (`_typed_case_file`): the Case holds the typed inputs and reference from there on. A case that does not
    validate is looked at part by part instead (`_untyped_parts`), so that every problem of it is listed."""
    suite_yaml = str(Path(suite.dir) / "suite.yaml")
    case = Case(suite=suite.name, id=name, kind=suite.kind, language=suite.language,
                path=str(case_path), dir=str(case_path.parent), files=[str(case_path), suite_yaml])
    if suite.spec is None:
        case.problems = [Problem(shown, None, f"suite {suite.name!r} has a broken suite.yaml")]
        return case
    try:
        node = load_yaml(case_path, shown)
        if not isinstance(node, dict):
            raise InputError(Problem(shown, 1, "expected a mapping with keys id, inputs, reference, ..."))
        if "id" in node:
            case.id_line = line_of(node, ("id",))
            if is_valid_name(node["id"]):
                case.id = node["id"]
            else:  # never let it name a folder: the case is left out of the run
                case.bad_id = True
                case.problems = [Problem(shown, case.id_line, f"{name_problem(node['id'], 'case id')}; "
                                                              "the case is left out of the run")]
                return case
    except InputError as exc:
        case.problems = exc.problems
        return case
    raw = plain(node)
    for part in ("inputs", "reference"):  # as JSON (a YAML date is its text), the suite's defaults under the case's keys
        given = raw.get(part, {})
        if isinstance(given, dict):
            raw[part] = {**suite.spec.defaults, **to_jsonable_python(given)} if part == "inputs" else to_jsonable_python(given)
    own = kind(suite.kind)  # the suite's kind types its cases' inputs and reference
    store_problems: list[Problem] = []
    if (suite.spec.solved_store and own.answers.solved_store and isinstance(raw["inputs"], dict)
            and not raw["inputs"].get("solved_example")):  # the looked-up example joins the inputs before they are typed
        below = os.path.relpath(case_path, suite.dir)  # the suite's folder as the case's file is shown
        store_problems = solved_store_code.attach_solved_example(case, raw, suite, shown[: -len(below)] if shown.endswith(below)
                                               else f"{suite.name}/")
    problems: list[Problem] = []
    try:
        parsed: CaseFile = _typed_case_file(own.inputs, own.reference).model_validate(raw)
        parts: dict[str, BaseModel] = {"inputs": parsed.inputs, "reference": parsed.reference}  # type: ignore[dict-item]  # typed by the kind's case file
    except ValidationError:
        try:
            parsed = validate(CaseFile, node, shown)  # the generic part's problems, at their lines
        except InputError as exc:
            case.problems = exc.problems
            return case
        parts = _untyped_parts(own, raw, node, shown, problems)
    case.trusted = suite.spec.trusted
    if suite.spec.rubric is not None:  # its contents reach the grade stage through the grade slice
        case.rubric = resolved_ref(suite.spec.rubric, suite.dir)
    case.test_changes = suite.spec.test_changes
    case.test_paths = suite.spec.test_paths
    case.judged_files = suite.spec.judged_files()
    if parsed.kind is not None and parsed.kind != suite.kind:  # `kind:` lets an editor pick the schema; it must agree
        problems.insert(0, Problem(shown, line_of(node, ("kind",)), f"kind: {parsed.kind!r} contradicts the suite's "
                                   f"kind {suite.kind!r} (suite.yaml); expected {suite.kind!r} or no kind: key"))
    suite_root = os.path.realpath(suite.dir)
    as_json = {part: model.model_dump(mode="json") for part, model in parts.items()}  # where its file references are
    for loc, relpath in _walk_refs(as_json, ()):
        line = line_of(node, loc)
        dotted = ".".join(str(p) for p in loc)
        if os.path.isabs(relpath):
            problems.append(Problem(shown, line, f"{dotted}: absolute path {relpath!r}; expected a path inside the suite folder"))
            continue
        target = os.path.realpath(os.path.join(case_path.parent, relpath))
        if target != suite_root and not target.startswith(suite_root + os.sep):
            problems.append(Problem(shown, line, f"{dotted}: {relpath!r} lies outside the suite folder {suite.name}/"))
            continue
        if not os.path.exists(target):
            problems.append(Problem(shown, line, f"{dotted}: file {relpath!r} does not exist"))
            continue
        case.refs[dotted] = target
        case.files.extend(_files_below(Path(target)))
    case.description, case.tags = parsed.description, list(parsed.tags)
    case.assertions, case.criteria = list(parsed.assertions), list(parsed.criteria)
    case.inputs, case.reference = parts["inputs"], parts["reference"]
    case.problems = problems + store_problems
    return case


def _untyped_parts(own: KindContract, raw: dict[str, Any], node: Any, shown: str, problems: list[Problem]) -> dict[str, BaseModel]:
    """A case that did not validate, part by part: each part its kind's model accepts is typed, a refused one keeps
    its raw mapping (an OpenModel) and its problems, at their lines, join ``problems``."""
    parts: dict[str, BaseModel] = {}
    for part, model in (("inputs", own.inputs), ("reference", own.reference)):
        if model is not None:
            try:
                parts[part] = model.model_validate(raw[part])
                continue
            except ValidationError as exc:
                for e in exc.errors():
                    loc = (part,) + tuple(e.get("loc", ()))
                    problems.append(Problem(shown, line_of(node, loc), describe_error({**e, "loc": loc})))
        parts[part] = OpenModel.model_validate(raw[part])
    return parts


def _stat_sig(paths: Iterable[str]) -> tuple:
    sig: list[tuple[str, int | None, int | None]] = []
    for p in paths:
        try:
            st = os.stat(p)
            sig.append((p, st.st_mtime_ns, st.st_size))
        except FileNotFoundError:
            sig.append((p, None, None))
    return tuple(sig)


def _load_suite(name: str, suite_dir: Path, shown: str) -> Suite:
    try:
        node = load_yaml(suite_dir / "suite.yaml", shown)
        if not isinstance(node, dict):
            raise InputError(Problem(shown, 1, "expected a mapping with keys kind, language, defaults"))
        spec = validate(SuiteSpec, node, shown)
        if spec.rubric is not None:  # a bad rubric breaks the suite, at the rubric file's line

            problem = suite_rubric_problem(spec.rubric, suite_dir, shown, line_of(node, ("rubric",)), spec.kind,
                                           judged=spec.judged_files() > 0)
            if problem is not None:
                raise problem
        return Suite(name, str(suite_dir), spec)
    except InputError as exc:
        return Suite(name, str(suite_dir), None, exc.problems)


def discover(cases_dir: Path, only_suites: list[str] | None = None, cache_dir: Path | None = None,
             shown_root: Path | None = None) -> Project:
    """Load every suite and case; problems are collected, never raised."""
    shown_root = shown_root or cases_dir.parent
    cache: dict[str, Any] = {}
    cache_file = cache_dir / f"cases-{digest(str(cases_dir.resolve()))[:12]}.pickle" if cache_dir else None
    if cache_file and cache_file.exists():
        try:
            with open(cache_file, "rb") as fh:
                loaded = pickle.load(fh)
            if loaded.get("version") == CACHE_VERSION:
                cache = loaded["entries"]
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, KeyError):
            cache = {}
    new_cache: dict[str, Any] = {}
    changed = False  # whether new_cache differs from what the file holds (a no-op run writes nothing)

    def show(p: Path) -> str:
        try:
            return str(p.resolve().relative_to(shown_root.resolve()))
        except ValueError:
            return str(p)

    suites: dict[str, Suite] = {}
    cases: list[Case] = []
    left_out: list[LeftOut] = []
    if not cases_dir.is_dir():
        problem = Problem(show(cases_dir), None, "cases folder not found (cases_dir in the config; expected a folder of suites)")
        return Project({}, [], fatal=[problem])
    names = sorted(e.name for e in os.scandir(cases_dir) if e.is_dir() and not e.name.startswith((".", "_")))
    fatal = [Problem(show(cases_dir / wanted), None, f"suite {wanted!r} named in config (suites:) has no folder")
             for wanted in only_suites or [] if wanted not in names]
    for name in names:
        if only_suites is not None and name not in only_suites:
            continue
        sdir = cases_dir / name
        bad_name = suite_name_problem(name)
        if bad_name:
            left_out.append(LeftOut(None, Problem(show(sdir), None, f"{bad_name}; the suite is left out of the run")))
            continue
        if not (sdir / "suite.yaml").exists():
            left_out.append(LeftOut(None, Problem(show(sdir / "suite.yaml"), None, "missing suite.yaml (expected kind, "
                                                  "language); the suite is left out of the run")))
            continue
        suite_key = str(sdir / "suite.yaml")
        entry = cache.get(suite_key)
        sig = _stat_sig([suite_key])
        if entry and entry[0] == sig:
            suite = entry[1]
            new_cache[suite_key] = entry
        else:
            suite = _load_suite(name, sdir, show(sdir / "suite.yaml"))
            new_cache[suite_key] = (sig, suite)
            changed = True
        suites[name] = suite
        seen_ids: dict[str, str] = {}
        for cname, cpath in _case_files(sdir):
            key = str(cpath)
            entry = cache.get(key)
            if entry and entry[2] == suite_key and entry[3] == sig and entry[0] == _stat_sig(entry[1].files):
                case = entry[1]
                new_cache[key] = entry  # its signature was just checked: no second stat of every file
            else:
                case = _load_case(suite, cname, cpath, show(cpath))
                case.files = sorted(set(case.files))
                case.digest = digest([(os.path.relpath(f, sdir), file_digest(f)) for f in case.files
                                      if os.path.exists(f) and f not in case.shared_files]
                                     + ([("looked_up", case.looked_up)] if case.shared_files else []))
                new_cache[key] = (_stat_sig(case.files), case, suite_key, sig)
                changed = True
            if case.bad_id:
                left_out.append(LeftOut(name, case.problems[0]))
                continue
            if not is_valid_name(case.id):  # no usable `id:`, and the file name cannot stand in for it
                left_out.append(LeftOut(name, Problem(show(cpath), case.id_line, (
                    f"{name_problem(case.id, 'case file name')} and the case has no valid id; "
                    f"the case is left out of the run{_first_problem(case)}"))))
                continue
            if (clash := case_id_problem(case.id)) is not None:  # a name the site's pages use
                left_out.append(LeftOut(name, Problem(show(cpath), case.id_line or 1,
                                                      f"{clash}; the case is left out of the run")))
                continue
            if case.id in seen_ids:
                left_out.append(LeftOut(name, Problem(show(cpath), case.id_line or 1, (
                    f"duplicate case id {case.id!r} in suite {name!r}: {show(Path(seen_ids[case.id]))} has it too; "
                    "this one is left out of the run"))))
                continue
            seen_ids[case.id] = key  # shown (resolved, relative) only when a duplicate needs it
            cases.append(case)
    if not suites and not fatal:
        found = f"{len(names)} folder(s), each left out (see above)" if names else "no folders"
        fatal.append(Problem(show(cases_dir), None, f"no suite to run in the cases folder ({found}; expected "
                                                     "folders with a suite.yaml; is cases_dir in the config right?)"))
    if cache_file and not fatal and (changed or new_cache.keys() != cache.keys()):
        atomic_write_bytes(cache_file, pickle.dumps({"version": CACHE_VERSION, "entries": new_cache}))
    return Project(suites, cases, left_out=left_out, fatal=fatal)


def _first_problem(case: Case) -> str:
    return f" (also: {case.problems[0].message})" if case.problems else ""
