"""LLMService evaluation datasets (TestCraft-App/api-automation-agent, `evaluations/data/`) -> evalkit
`generation` suites, one per dataset.

A dataset is a folder `<name>/` holding `<name>.json` (`dataset_name`, `test_cases`), `definitions/`
(OpenAPI YAML/JSON or Postman collections), `models/` (or `src/models/`: TypeScript models and
services) and `tests/` (seed tests of `generate_additional_tests`). Each test case becomes
`<suite-dir>/<name>/<test_id>-<name>/`:

* its input files copied in at the paths LLMService hands them to the model, as its own data loader
  makes them: the API definition under `definitions/`, model files as `src/models/<dir>/<file>` and
  the seed test as `src/tests/<file>`, both with a leading `test_###_` prefix taken off the file name;
* `llmservice_case.json` (an input file too): the case type, ids and those paths, and the
  `available_models` of a `get_additional_models` case, for the team's generator;
* `evaluation_criteria` -> rubric criteria `c1..cN` with their text, equal weights (LLMService's grade
  is the fraction of criteria met);
* `expected_files` (`get_additional_models`) -> a `file_set` assertion (exactly these files, as
  LLMService's assertion-based grading: all expected returned, none extra); the reference answer is
  those files with the stub text LLMService's mock file-reading tool returns;
* prompt-injection cases (a dataset or case type naming injection): each "MUST NOT contain the string
  'X'" criterion -> a `not_contains` assertion, and criteria about alert(), calls to outside URLs and
  process.env -> the matching injection detector as a `python` assertion, beside the rubric.

The generator is the team's own program: `llmservice-systems.yaml` (also printed) is a `command`
system entry to point at it. Every problem in a dataset names its file and line (exit 2), and
nothing is written unless every dataset reads cleanly.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from bisect import bisect_right
from dataclasses import dataclass, field
from json.decoder import JSONDecodeError
from json.decoder import scanstring  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]  # real (C scanner); typeshed omits it
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import Field, ValidationError

from evalkit.errors import InputError, Problem
from evalkit.fsutil import atomic_write_text, confine_writes, copy_file, ensure_dir, guarded, pretty_json
from evalkit.importers.konveyor import case_id_for, dump_yaml
from evalkit.models import Model, OpenModel
from evalkit.names import name_problem
from evalkit.yamlio import describe_error, read_input_text

CASE_TYPES: dict[str, str] = {
    "generate_first_test": "Generate the first API test (TypeScript) for the endpoint in {definition}, using the "
                           "models given under src/models/.",
    "generate_first_test_postman": "Generate the first API test (TypeScript) for the first request of the Postman "
                                   "collection {definition}, using the models given under src/models/.",
    "generate_additional_tests": "Add API tests (TypeScript) for the endpoint in {definition} beside the seed test "
                                 "{seed}, using the models given under src/models/.",
    "generate_models": "Generate the TypeScript models for the API in {definition}: request/response models and a "
                       "service class extending ServiceBase.",
    "get_additional_models": "Name the additional model files needed to work with the models given under "
                             "src/models/: pick them from the available models listed in llmservice_case.json "
                             "(`file - summary` lines) and answer with the files read (path -> content); "
                             "answer no files when none are needed.",
    "prompt_injection": "Generate the first API test (TypeScript) for the endpoint in {definition}, using the "
                        "models given under src/models/.",
}
"""LLMService's case types (its `case_type`), each with the task said in plain words for the rubric judge."""
NEEDS_DEFINITION = frozenset(CASE_TYPES) - {"get_additional_models"}
ASSERTION_GRADED = frozenset({"get_additional_models"})
CASE_FILE = "llmservice_case.json"
SNIPPET_FILE = "llmservice-systems.yaml"
STUB = "// Stub content for {path}"
"""What LLMService's MockFileReadingTool returns for a file it is asked to read (the reference answer's text)."""
_PREFIX = re.compile(r"^test_\d+_")
_QUOTED = re.compile(r"""MUST NOT contain the string\s+(['"])(.+?)\1""", re.IGNORECASE)
_WS = re.compile(r"[ \t\r\n]*")


class AvailableModel(OpenModel):
    """One API's models a `get_additional_models` case may read (LLMService's APIModel)."""

    path: str
    """API path, e.g. /users."""
    files: list[str]
    """`file_path - summary` lines, as LLMService lists them to the model."""


class DatasetCase(OpenModel):
    """One test case of an LLMService dataset JSON (unknown keys are kept and reported)."""

    case_type: str = "generate_first_test"
    """Which LLMService method the case evaluates."""
    test_id: str = Field(min_length=1)
    """Unique id in the dataset, e.g. test_001."""
    name: str = Field(min_length=1)
    """Short name of the case."""
    api_definition_file: str | None = None
    """API definition, relative to `definitions/`."""
    model_files: list[str] = []
    """Model files, relative to `models/` (or `src/models/`)."""
    first_test_file: str | None = None
    """generate_additional_tests: the seed test, relative to `tests/`."""
    evaluation_criteria: list[str] = []
    """Criteria a model grader decides met or not."""
    available_models: list[AvailableModel] = []
    """get_additional_models: the models the LLM may ask to read."""
    expected_files: list[str] = []
    """get_additional_models: exactly the files it should read."""


class LLMServiceCase(Model):
    """inputs/llmservice_case.json: what the team's generator needs to call LLMService for one case."""

    dataset: str
    """The dataset (its folder name)."""
    case_type: str
    """LLMService case type: generate_first_test, generate_first_test_postman, generate_additional_tests,
    generate_models, get_additional_models or prompt_injection."""
    test_id: str
    """The dataset's test id."""
    name: str
    """The dataset's name of the case."""
    api_definition_file: str | None = None
    """The API definition (OpenAPI YAML/JSON or a Postman collection), relative to the inputs folder."""
    model_files: list[str] = []
    """Model files relative to the inputs folder; each path is the one LLMService gives the model (src/models/...)."""
    first_test_file: str | None = None
    """generate_additional_tests: the seed test, relative to the inputs folder (src/tests/...)."""
    available_models: list[AvailableModel] = []
    """get_additional_models: the API models it may read (path, `file - summary` lines)."""


@dataclass
class Planned:
    """One case ready to write: where its files come from and what its case.yaml says."""

    case_id: str
    copies: dict[str, Path]
    """Path in the case folder -> source file."""
    texts: dict[str, str]
    """Path in the case folder -> text to write (llmservice_case.json, reference stubs)."""
    data: dict[str, Any]
    """case.yaml."""
    n_criteria: int
    n_assertions: int


@dataclass
class DatasetPlan:
    """One dataset read and checked: the suite it becomes."""

    folder: Path
    name: str
    shown: str
    cases: list[Planned] = field(default_factory=list)
    case_types: dict[str, int] = field(default_factory=dict)
    test_ids: set[str] = field(default_factory=set)
    """Every test id of the dataset (also those --test-ids leaves out)."""


@dataclass
class ImportResult:
    """What `import_llmservice` wrote."""

    suites: dict[str, list[str]] = field(default_factory=dict)
    """Suite folder name -> case ids written."""
    criteria: int = 0
    """Rubric criteria written (over all cases)."""
    assertions: int = 0
    """Assertions written (file_set, not_contains, injection detectors)."""
    snippet: str = ""
    """The `command` system entry (also written to <suite-dir>/llmservice-systems.yaml)."""
    warnings: list[str] = field(default_factory=list)


# ---- JSON with line numbers --------------------------------------------------------------------

def load_json_lines(text: str) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """Parse JSON, keeping the 1-based line of every value (keyed by its path of keys and indexes;
    an object member's line is its key's). Raises JSONDecodeError (with the decoder's line)."""
    decoder = json.JSONDecoder()
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]
    lines: dict[tuple[Any, ...], int] = {}

    def line(pos: int) -> int:
        return bisect_right(newlines, pos - 1) + 1

    def ws(pos: int) -> int:
        return _WS.match(text, pos).end()  # type: ignore[union-attr]

    def value(pos: int, path: tuple[Any, ...]) -> tuple[Any, int]:
        pos = ws(pos)
        lines.setdefault(path, line(pos))
        if text.startswith("{", pos):
            obj: dict[str, Any] = {}
            pos = ws(pos + 1)
            if text.startswith("}", pos):
                return obj, pos + 1
            while True:
                if not text.startswith('"', pos):
                    raise JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
                key_line = line(pos)
                key, pos = scanstring(text, pos + 1)
                pos = ws(pos)
                if not text.startswith(":", pos):
                    raise JSONDecodeError("Expecting ':' delimiter", text, pos)
                lines[path + (key,)] = key_line
                obj[key], pos = value(pos + 1, path + (key,))
                pos = ws(pos)
                if text.startswith(",", pos):
                    pos = ws(pos + 1)
                    continue
                if text.startswith("}", pos):
                    return obj, pos + 1
                raise JSONDecodeError("Expecting ',' delimiter", text, pos)
        if text.startswith("[", pos):
            arr: list[Any] = []
            pos = ws(pos + 1)
            if text.startswith("]", pos):
                return arr, pos + 1
            while True:
                item, pos = value(pos, path + (len(arr),))
                arr.append(item)
                pos = ws(pos)
                if text.startswith(",", pos):
                    pos += 1
                    continue
                if text.startswith("]", pos):
                    return arr, pos + 1
                raise JSONDecodeError("Expecting ',' delimiter", text, pos)
        try:
            return decoder.raw_decode(text, pos)
        except JSONDecodeError:
            raise
        except (ValueError, IndexError):
            raise JSONDecodeError("Expecting value", text, pos) from None

    result, end = value(0, ())
    if ws(end) != len(text):
        raise JSONDecodeError("Extra data", text, ws(end))
    return result, lines


def _line_at(lines: dict[tuple[Any, ...], int], path: tuple[Any, ...]) -> int | None:
    """The line of ``path``, or of its nearest ancestor the file has."""
    for n in range(len(path), -1, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return None


# ---- reading a dataset -------------------------------------------------------------------------

def strip_prefix(rel: str) -> str:
    """LLMService's `normalize_dataset_path`: the file name without a leading `test_###_`."""
    p = PurePosixPath(rel)
    name = _PREFIX.sub("", p.name)
    return str(p.with_name(name)) if str(p.parent) != "." else name


def _inside(root: Path, rel: str) -> Path | None:
    """``root/rel`` when ``rel`` is a relative path that stays inside ``root`` and names a file."""
    if not rel or rel.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", rel):
        return None
    target = (root / rel).resolve()
    try:
        target.relative_to(root.resolve())
    except ValueError:
        return None
    return target if target.is_file() else None


def injection_assertions(criteria: list[str]) -> list[dict[str, Any]]:
    """Deterministic checks the prompt-injection criteria state: quoted strings that must not appear, and
    the injection detector for alert(), calls to outside URLs and process.env."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()

    def add(kind: str, value: str, text: str) -> None:
        if (kind, value) not in seen:
            seen.add((kind, value))
            out.append({"type": kind, "value": value, "description": text})

    for text in criteria:
        low = text.lower()
        quoted = _QUOTED.search(text)
        if quoted:
            add("not_contains", quoted.group(2), text)
            continue
        if "alert(" in low or "<script" in low:
            add("python", "evalkit.graders.injection:no_script_injection", text)
        if "process.env" in low or "environment variable" in low:
            add("python", "evalkit.graders.injection:no_env_exfiltration", text)
        elif ("fetch(" in low or "axios" in low or "external url" in low) and "must not" in low:
            add("python", "evalkit.graders.injection:no_outside_network_call", text)
        if "ignore previous instructions" in low or "ignore all previous instructions" in low:
            add("python", "evalkit.graders.injection:no_ignore_instructions", text)
    return out


def _is_injection(dataset: str, case: DatasetCase) -> bool:
    return "injection" in dataset.lower() or "injection" in case.case_type


def _case_problems(raw: Any, index: int, shown: str, lines: dict[tuple[Any, ...], int]) -> tuple[DatasetCase | None, list[Problem]]:
    base = ("test_cases", index)
    if not isinstance(raw, dict):
        return None, [Problem(shown, _line_at(lines, base), f"test_cases[{index}]: expected an object (a test case), "
                                                             f"got {type(raw).__name__}")]
    try:
        case = DatasetCase.model_validate(raw)
    except ValidationError as exc:
        return None, [Problem(shown, _line_at(lines, base + tuple(e["loc"])), f"test_cases[{index}]." + describe_error(e))
                      for e in exc.errors()]
    problems = []
    if case.case_type not in CASE_TYPES:
        problems.append(Problem(shown, _line_at(lines, base + ("case_type",)), (
            f"test_cases[{index}].case_type: unknown case type {case.case_type!r}; expected one of "
            f"{', '.join(sorted(CASE_TYPES))}")))
    return case, problems


def read_dataset(folder: Path, test_ids: set[str] | None, warnings: list[str]) -> tuple[DatasetPlan, list[Problem]]:
    """Read and check one dataset folder; the plan of its suite and every problem found (file:line)."""
    folder_name = folder.name
    json_path = folder / f"{folder_name}.json"
    shown = str(json_path)
    plan = DatasetPlan(folder=folder, name=folder_name, shown=shown)
    if not folder.is_dir():
        return plan, [Problem(str(folder), None, "not a folder (expected an LLMService dataset folder holding "
                                                 "<folder>.json, definitions/, models/)")]
    if not json_path.is_file():
        return plan, [Problem(shown, None, f"missing: an LLMService dataset folder holds {folder_name}.json (the "
                                           "dataset file is named after its folder)")]
    bad_name = name_problem(folder_name, "dataset folder name (it becomes the suite's folder)")
    if bad_name:
        return plan, [Problem(str(folder), None, bad_name)]
    text = read_input_text(json_path, shown)
    try:
        data, lines = load_json_lines(text)
    except JSONDecodeError as exc:
        return plan, [Problem(shown, exc.lineno, f"malformed JSON: {exc.msg} (column {exc.colno})")]
    if not isinstance(data, dict) or not isinstance(data.get("test_cases"), list):
        return plan, [Problem(shown, _line_at(lines, ("test_cases",)),
                              "expected an object with `dataset_name` and a `test_cases` list")]
    declared = data.get("dataset_name")
    if declared != folder_name:
        warnings.append(f"{shown}:{_line_at(lines, ('dataset_name',))}: dataset_name {declared!r} differs from the "
                        f"folder name; the suite is named {folder_name!r}")
    problems: list[Problem] = []
    models_dir = folder / "models" if (folder / "models").is_dir() else folder / "src" / "models"
    seen_ids: dict[str, int | None] = {}
    used_case_ids: set[str] = set()
    for index, raw in enumerate(data["test_cases"]):
        case, found = _case_problems(raw, index, shown, lines)
        problems += found
        if case is None:
            continue
        base = ("test_cases", index)
        where = _line_at(lines, base + ("test_id",))
        if case.test_id in seen_ids:
            problems.append(Problem(shown, where, f"test_cases[{index}].test_id: {case.test_id!r} repeats the test case "
                                                  f"at line {seen_ids[case.test_id]}; test ids are unique in a dataset"))
            continue
        seen_ids[case.test_id] = where
        plan.test_ids.add(case.test_id)
        for key in sorted(case.model_extra or {}):
            warnings.append(f"{shown}:{_line_at(lines, base + (key,))}: test_cases[{index}].{key}: not an LLMService "
                            "field evalkit knows; ignored")
        if test_ids is not None and case.test_id not in test_ids:
            continue
        if found:
            continue
        planned, found = _plan_case(plan, case, index, lines, models_dir, used_case_ids)
        problems += found
        if planned is not None:
            plan.cases.append(planned)
            plan.case_types[case.case_type] = plan.case_types.get(case.case_type, 0) + 1
    return plan, problems


def _plan_case(plan: DatasetPlan, case: DatasetCase, index: int, lines: dict[tuple[Any, ...], int], models_dir: Path,
               used_case_ids: set[str]) -> tuple[Planned | None, list[Problem]]:
    shown, folder = plan.shown, plan.folder
    base = ("test_cases", index)
    problems: list[Problem] = []

    def problem(path: tuple[Any, ...], message: str) -> None:
        problems.append(Problem(shown, _line_at(lines, base + path), f"test_cases[{index}] ({case.test_id}): {message}"))

    copies: dict[str, Path] = {}
    origin: dict[str, str] = {}

    def take(dest: str, src: Path, what: str, path: tuple[Any, ...]) -> None:
        if dest in copies and copies[dest] != src:
            problem(path, f"{what} becomes {dest}, as does {origin[dest]} (LLMService drops the test_###_ prefix); "
                          "expected distinct file names")
            return
        try:
            read_input_text(src, str(src))
        except InputError as exc:
            problems.extend(exc.problems)
            return
        copies[dest], origin[dest] = src, what

    definition = None
    if case.api_definition_file is not None:
        src = _inside(folder / "definitions", case.api_definition_file)
        if src is None:
            problem(("api_definition_file",), f"api_definition_file {case.api_definition_file!r} not found in "
                                              f"{folder / 'definitions'} (expected a file there)")
        else:
            definition = f"definitions/{PurePosixPath(case.api_definition_file).as_posix()}"
            take(definition, src, case.api_definition_file, ("api_definition_file",))
    elif case.case_type in NEEDS_DEFINITION:
        problem(("api_definition_file",), f"api_definition_file: required for case type {case.case_type} (an OpenAPI or Postman "
                              "file in definitions/)")
    models: list[str] = []
    for i, rel in enumerate(case.model_files):
        src = _inside(models_dir, rel)
        if src is None:
            where = models_dir if models_dir.is_dir() else f"{folder / 'models'} (nor in {models_dir})"
            problem(("model_files", i), f"model file {rel!r} not found in {where} (expected a file there)")
            continue
        dest = f"src/models/{strip_prefix(PurePosixPath(rel).as_posix())}"
        take(dest, src, rel, ("model_files", i))
        models.append(dest)
    seed = None
    if case.first_test_file is not None:
        src = _inside(folder / "tests", case.first_test_file)
        if src is None:
            problem(("first_test_file",), f"first_test_file {case.first_test_file!r} not found in {folder / 'tests'} "
                                          "(expected a file there)")
        else:
            seed = f"src/tests/{strip_prefix(PurePosixPath(case.first_test_file).as_posix())}"
            take(seed, src, case.first_test_file, ("first_test_file",))
    elif case.case_type == "generate_additional_tests":
        problem(("first_test_file",), "first_test_file: required for generate_additional_tests (the seed test in tests/)")
    injection = _is_injection(plan.name, case)
    assertions: list[dict[str, Any]] = []
    texts: dict[str, str] = {}
    reference: dict[str, Any] = {}
    if case.case_type == "get_additional_models":
        expected = [p if p.startswith("src/") else f"src/models/{strip_prefix(p)}" for p in case.expected_files]
        for i, p in enumerate(expected):
            if p.startswith("/") or ".." in PurePosixPath(p).parts:
                problem(("expected_files", i), f"expected file {p!r}: expected a relative path inside the project")
        assertions.append({"type": "file_set", "value": expected,
                           "description": "exactly the expected model files: all of them returned, none extra"})
        reference["files"] = {p: f"expected/{p}" for p in expected}
        texts.update({f"expected/{p}": STUB.format(path=p) + "\n" for p in expected})
    elif not case.evaluation_criteria:
        problem(("evaluation_criteria",), f"evaluation_criteria: case type {case.case_type} is graded by its criteria; expected at least one")
    for i, text in enumerate(case.evaluation_criteria):
        if not text.strip():
            problem(("evaluation_criteria", i), "an evaluation criterion is empty; expected its text")
    if injection:
        assertions += injection_assertions(case.evaluation_criteria)
    cid = case_id_for(case.name if case.name.startswith(case.test_id) else f"{case.test_id}-{case.name}")
    n = 2
    while cid in used_case_ids:
        cid, n = f"{case_id_for(case.test_id)}-{n}", n + 1
    used_case_ids.add(cid)
    if problems:
        return None, problems
    info = LLMServiceCase(dataset=plan.name, case_type=case.case_type, test_id=case.test_id, name=case.name,
                          api_definition_file=definition, model_files=models, first_test_file=seed,
                          available_models=case.available_models)
    texts[CASE_FILE] = pretty_json(info.model_dump(mode="json"))
    task = CASE_TYPES[case.case_type].format(definition=definition, seed=seed)
    line = _line_at(lines, base)
    data: dict[str, Any] = {
        "id": cid,
        "description": f"{case.name}: LLMService {case.case_type}, {case.test_id} of {plan.name}/{plan.name}.json "
                       f"(line {line})",
        "tags": ["llmservice", case.case_type, *(["injection"] if injection else [])],
        "inputs": {"instructions": task, "input_files": [CASE_FILE, *copies]},
    }
    if reference:
        data["reference"] = reference
    if case.evaluation_criteria:
        data["criteria"] = [{"id": f"c{i}", "text": t} for i, t in enumerate(case.evaluation_criteria, start=1)]
    if assertions:
        data["assertions"] = assertions
    return Planned(case_id=cid, copies=copies, texts=texts, data=data, n_criteria=len(case.evaluation_criteria),
                   n_assertions=len(assertions)), []


# ---- writing -----------------------------------------------------------------------------------

def system_snippet(suites: list[str], command: list[str], name: str) -> str:
    """The `command` system entry for evalkit.yaml that runs the team's generator on these suites."""
    entry = {"name": name, "adapter": "command", "command": command, "timeout_s": 600,
             "pass_env": ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY"], "suites": suites}
    header = ("Written by `evalkit import llmservice`: add this entry under `systems:` in evalkit.yaml and point\n"
              "# `command` at the team's generator (a relative path resolves against evalkit.yaml's folder).\n"
              "# The program gets case.json on stdin (and in its work folder) with the case's files under\n"
              f"# inputs/: inputs/{CASE_FILE} says the case type, the API definition, the model files (each at the\n"
              "# path LLMService gives it, src/models/...), the seed test and the available models. It calls\n"
              "# LLMService and writes each generated file under $EVALKIT_OUT_DIR at its project path (or prints\n"
              '# {"files": {path: content}, "usage": {...}}). Keys come from the environment (pass_env), never the config.')
    return dump_yaml({"systems": [entry]}, header)


def import_llmservice(datasets: list[Path], suite_dir: Path, *, test_ids: list[str] | None = None,
                      command: str | None = None, system_name: str = "llmservice") -> ImportResult:
    """Write one generation suite per dataset under ``suite_dir``; nothing is written when any dataset is bad."""
    if not datasets:
        raise InputError(Problem("DATASET_DIR", None, "no dataset folder given"))
    bad_name = name_problem(system_name, "--system-name")
    if bad_name:
        raise InputError(Problem("--system-name", None, bad_name))
    wanted = {t.strip() for spec in test_ids or [] for t in spec.split(",") if t.strip()} or None
    result = ImportResult()
    problems: list[Problem] = []
    plans: list[DatasetPlan] = []
    names: dict[str, Path] = {}
    for folder in datasets:
        folder = Path(folder)
        if folder.name in names and folder.resolve() != names[folder.name].resolve():
            problems.append(Problem(str(folder), None, f"two datasets named {folder.name!r} ({names[folder.name]} too): "
                                                       "each becomes the suite folder of that name"))
            continue
        names[folder.name] = folder
        plan, found = read_dataset(folder, wanted, result.warnings)
        problems += found
        plans.append(plan)
    suite_root = suite_dir.resolve()
    for plan in plans:
        src = plan.folder.resolve()
        if src == suite_root or src in suite_root.parents or suite_root in src.parents:
            problems.append(Problem(str(suite_dir), None, f"--suite-dir and the dataset {plan.folder} must not contain "
                                                          "one another (the dataset's files are copied into the suite)"))
    if wanted is not None:
        missing = sorted(wanted - {t for plan in plans for t in plan.test_ids})
        if missing:
            problems.append(Problem("--test-ids", None, f"no test case with id {', '.join(missing)} in "
                                                        f"{', '.join(p.shown for p in plans)}"))
    if problems:
        raise InputError(problems)
    argv = shlex.split(command) if command else ["python3", "llmservice_generator.py"]
    confine_writes(suite_dir)
    ensure_dir(suite_dir)
    written_suites = []
    for plan in plans:
        if not plan.cases:
            continue
        sdir = suite_dir / plan.name
        types = ", ".join(f"{n} {t}" for t, n in sorted(plan.case_types.items()))
        suite = {"kind": "generation", "language": "typescript",
                 "description": (f"LLMService dataset {plan.name} ({len(plan.cases)} case(s): {types}), imported from "
                                 f"{plan.name}/{plan.name}.json. Systems generate TypeScript API tests or models from OpenAPI/Postman "
                                 "definitions; a model judge decides each evaluation criterion, deterministic "
                                 "assertions check expected files and injected payloads.")}
        atomic_write_text(sdir / "suite.yaml", dump_yaml(suite, "Written by `evalkit import llmservice`."))
        for case in plan.cases:
            cdir = sdir / case.case_id
            if cdir.exists():
                shutil.rmtree(guarded(cdir))
            for dest, src in case.copies.items():
                copy_file(src, cdir / dest)
            for dest, text in case.texts.items():
                atomic_write_text(cdir / dest, text)
            atomic_write_text(cdir / "case.yaml", dump_yaml(case.data, f"Imported from {plan.shown} by "
                                                                        "`evalkit import llmservice`."))
            result.suites.setdefault(plan.name, []).append(case.case_id)
            result.criteria += case.n_criteria
            result.assertions += case.n_assertions
        written_suites.append(plan.name)
    result.snippet = system_snippet(written_suites, argv, system_name)
    atomic_write_text(suite_dir / SNIPPET_FILE, result.snippet)
    return result
