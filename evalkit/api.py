"""evalkit's public Python API: load a project, run it, read a release's results, evaluate one patch
against one SWE-bench instance, and add a metric.

Everything here calls the same code as the ``evalkit`` command::

    from evalkit import api

    project = api.load("path/to/evalkit.yaml")          # InputError (file:line) on bad input
    run = api.run(project, select=["migration/jpa-*"])   # the doit graph of `evalkit run`
    report = api.results(project)                        # site/<release>/report.json, typed
    report.value("rules", "codebleu", suite="migration", case="jpa-entity")

    result = api.evaluate(patch, swebench_row, repo="/src/astropy")   # one patch, one instance
    result.resolved, result.applied, result.tests_status["FAIL_TO_PASS"].failure

Only the names in ``__all__`` are the API; the modules it calls may change between releases.
"""

from __future__ import annotations

import dataclasses
import gc
import inspect
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from evalkit import project as _project
from evalkit import tasks
from evalkit.cli import main
from evalkit.config import Config, System, load_config
from evalkit.config import load_config as _load_config
from evalkit.contracts import AnyMetricScorer, MetricValue, ScoreContext
from evalkit.errors import InputError, Problem
from evalkit.fsutil import digest
from evalkit.importers.swebench import import_swebench, parse_row
from evalkit.importers.swebench_report import instance_report
from evalkit.kind_registry import names
from evalkit.llm.keys import sealed_env
from evalkit.metrics.localization import LocalizationResult, gold_locations, localization
from evalkit.metrics.registry import ADDED, ADDED_SCORERS, LEADERBOARD_METRICS, METRICS, MetricInfo, metric
from evalkit.models import Model
from evalkit.report.models import CaseCell, CaseRow, Report, SuiteSummary, SystemSummary
from evalkit.report.site import list_releases
from evalkit.run_status import failed_systems
from evalkit.stages.execute import TreeUnavailable, run_patch, source_tree
from evalkit.tasks import check_selection

if TYPE_CHECKING:
    from evalkit.cases import Case, Suite
    from evalkit.importers.swebench import Row
    from evalkit.project import Loaded

__all__ = [
    "EvaluationResult",
    "InputError",
    "Localization",
    "MetricValue",
    "Project",
    "Results",
    "RunFailed",
    "RunResult",
    "ScoreContext",
    "TestLists",
    "evaluate",
    "load",
    "register_metric",
    "results",
    "run",
]

#: Suite name of the one-case project evaluate() writes (a SWE-bench import).
EVALUATE_SUITE = "swebench"
#: Environment variables `evalkit run` reads its options from; an in-process run() restores them after.
RUN_ENV = ("EVALKIT_CONFIG", "EVALKIT_SELECT", "EVALKIT_RELEASE", "EVALKIT_RETRY_JUDGE_ERRORS", "EVALKIT_REPOS",
           "EVALKIT_RUN_ID")


# --- load ------------------------------------------------------------------------------------------

@dataclass
class Project:
    """A loaded project: its config and every suite, case and system (``evalkit.project.load``)."""

    config: Config
    """evalkit.yaml, validated."""
    suites: dict[str, Suite]
    """Suite name -> evalkit.cases.Suite (its folder, kind and suite.yaml)."""
    cases: list[Case]
    """Every case in the run (evalkit.cases.Case), in suite and case order."""
    systems: list[System]
    """The systems under test (matrices expanded)."""
    problems: list[Problem] = field(default_factory=list)
    """Broken suites and cases (recorded as broken by a run) and those left out of it, each with file:line and
    why, as `evalkit run` reports them (``evalkit check`` also checks deeper)."""

    @property
    def path(self) -> Path:
        """The config file."""
        return Path(self.config.path)

    @property
    def site(self) -> Path:
        """The report site folder (``site_dir``)."""
        return self.config.site_path

    @property
    def release(self) -> str:
        """The release label a run writes (the config's, or $EVALKIT_RELEASE when set at load)."""
        return self.config.release

    def case(self, key: str) -> Case:
        """The case ``suite/case_id`` (KeyError when there is none)."""
        return self._as_loaded().project.case(key)

    def _as_loaded(self) -> Loaded:
        """What load() read (read again for a Project made by hand)."""
        if self._loaded is None:
            self._loaded = load(self.config)._loaded
        assert self._loaded is not None  # load() always sets it
        return self._loaded

    _loaded: Loaded | None = field(default=None, repr=False)


def _config_file(path_or_config: str | os.PathLike[str] | Config | Project | None) -> str | None:
    if isinstance(path_or_config, Project):
        return str(path_or_config.path)
    if isinstance(path_or_config, Config):
        return path_or_config.path or None
    if path_or_config is None:
        return None
    p = Path(path_or_config)
    return str(p / "evalkit.yaml") if p.is_dir() else str(p)


def load(path_or_config: str | os.PathLike[str] | Config | None = None, *, strict: bool = False) -> Project:
    """Load a project: its config file, a folder holding ``evalkit.yaml``, a loaded Config, or None
    (``$EVALKIT_CONFIG``, else ``./evalkit.yaml``), read afresh.

    Raises InputError (``.problems``: file, line, message) when nothing could run: a missing or broken
    config, no cases folder, a system naming an unknown suite. A broken case or suite does not stop
    the others (a run records it as broken): it is listed in ``Project.problems``; with ``strict=True``
    it raises InputError too.
    """

    loaded = _project.load(_config_file(path_or_config), refresh=True)
    problems = loaded.project.problems  # every broken suite and case, and what was left out, by file:line
    if strict and problems:
        raise InputError(problems)
    return Project(config=loaded.config, suites=dict(loaded.project.suites), cases=list(loaded.project.cases),
                   systems=list(loaded.config.systems), problems=problems, _loaded=loaded)


# --- run -------------------------------------------------------------------------------------------

class RunResult(Model):
    """What one run did: its exit status, release, report and counts."""

    exit_status: int
    """`evalkit run`'s exit status: 0 ok, 2 bad input, 3 a system failed on every case (or doit could not
    start), 4 evalkit bugs were recorded (status bug), other: a task failed."""
    ok: bool
    """The run succeeded (exit status 0)."""
    release: str
    """Release label the run wrote."""
    config: str
    """The project's config file."""
    report_path: str | None
    """site/<release>/report.json, when it exists after the run (None: no report was written)."""
    selected: list[str] = []
    """The SUITE/CASE-GLOB selection (empty: every case)."""
    cases: int = 0
    """Cases in the report with a result of at least one system (a selection leaves the others without)."""
    systems: int = 0
    """Systems in the report."""
    cells: dict[str, int] = {}
    """(system, case) cells of the report by status: ok, error, timeout, infra_error, broken, ..."""
    failed_systems: list[str] = []
    """Systems that failed on every case they ran (the reason for exit status 3)."""
    duration_s: float = 0.0
    """Wall time of the run, in seconds."""
    in_process: bool = True
    """Run in this Python process (True) or as a `python -m evalkit run` subprocess."""
    output: str = ""
    """The subprocess's standard output and error (in-process runs print to this process's streams)."""


class RunFailed(RuntimeError):
    """run() with ``check=True`` on a run whose exit status is not 0; ``.result`` is the RunResult."""

    def __init__(self, result: RunResult) -> None:
        self.result = result
        if result.exit_status == 2:
            what = "bad input, said above"
        elif result.failed_systems:
            what = f"system(s) failed on every case: {', '.join(result.failed_systems)}"
        elif result.cells.get("bug"):
            what = f"evalkit bugs recorded in {result.cells['bug']} cell(s), said above: please report them"
        else:
            what = "a task failed or the task graph could not be built, said above"
        tail = f"\n{result.output[-2000:]}" if result.output else ""
        super().__init__(f"evalkit run exited {result.exit_status} ({what}){tail}")


@contextmanager
def _run_environment() -> Iterator[None]:
    """Put back the environment variables `evalkit run` sets, and drop the task graph and loaded
    projects it memoizes, so the next in-process run reads the files again."""

    saved = {k: os.environ.get(k) for k in RUN_ENV}
    os.environ.pop("EVALKIT_SELECT", None)  # select=None means every case, whatever this process's env says
    tasks._graph = None
    _project.forget()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        tasks._graph = None
        _project.forget()
        gc.unfreeze()  # a run freezes its task graph for speed; let this process collect it again


def run(project: Project | str | os.PathLike[str] | None = None, select: str | Sequence[str] | None = None,
        release: str | None = None, *, jobs: int = 1, repos: Mapping[str, str] | None = None,
        retry_judge_errors: bool = False, in_process: bool = True, check: bool = True,
        quiet: bool = True, timeout: float | None = None) -> RunResult:
    """Run a project, or the cases ``select`` names (``SUITE/CASE-GLOB``, one or a list), through the
    doit graph of `evalkit run`: only what changed is redone, the report and site are written.

    ``release`` overrides the config's label; ``repos`` maps a patch case's ``owner/name`` to a local
    clone (`--repo`). In process (default) metrics added with register_metric() take part; with
    ``in_process=False`` the run is a `python -m evalkit run` subprocess (``timeout`` seconds at most).
    Bad input raises InputError before anything runs. A run that fails raises RunFailed (``check``),
    or, with ``check=False``, returns ``ok=False`` and the exit status: never a silent success.
    One in-process run at a time per process (the task graph is the process's).
    """

    proj = project if isinstance(project, Project) else load(project)
    globs = [select] if isinstance(select, str) else list(select or [])

    if not in_process and ADDED_SCORERS:
        raise ValueError(f"metric(s) {', '.join(sorted(ADDED_SCORERS))} were added in this process: they score only "
                         "in an in-process run (in_process=True)")
    argv = ["run", "--config", str(proj.path)]
    for g in globs:
        argv += ["--select", g]
    if release:
        argv += ["--release", release]
    for name, where in (repos or {}).items():
        argv += ["--repo", f"{name}={where}"]
    argv += ["--jobs", str(jobs)] + (["--retry-judge-errors"] if retry_judge_errors else []) + (["-q"] if quiet else [])
    start = time.perf_counter()
    output = ""
    if in_process:
        with _run_environment():
            # the checks `evalkit run` makes before doit starts, raised here as InputError

            if release:
                os.environ["EVALKIT_RELEASE"] = release
                load_config(str(proj.path))  # a bad release label: InputError naming the option
            if globs:
                check_selection(globs, proj._as_loaded().project)  # a glob matching no case: InputError
            code = main(argv)
    else:
        env = {**os.environ, **sealed_env()}  # the keys this process sealed away: the child seals them in turn
        env.pop("EVALKIT_SELECT", None)
        proc = subprocess.run([sys.executable, "-m", "evalkit", *argv], capture_output=True, text=True, env=env,
                              timeout=timeout)
        code, output = proc.returncode, proc.stdout + proc.stderr

    label = release or _load_config(str(proj.path)).release
    path = proj.site / label / "report.json"
    result = RunResult(exit_status=code, ok=code == 0, release=label, config=str(proj.path),
                       report_path=str(path) if path.is_file() else None, selected=globs,
                       duration_s=round(time.perf_counter() - start, 3), in_process=in_process, output=output)
    if path.is_file():
        report = Report.model_validate_json(path.read_bytes())
        cells: dict[str, int] = {}
        for row in report.cases:
            for cell in row.systems.values():
                cells[cell.status] = cells.get(cell.status, 0) + 1
        result.cases = sum(1 for row in report.cases if row.systems)
        result.systems, result.cells = len(report.systems), dict(sorted(cells.items()))
        result.failed_systems = [f.system for f in failed_systems(path)]
    if check and not result.ok:
        raise RunFailed(result)
    return result


# --- results ---------------------------------------------------------------------------------------

class Results(Report):
    """report.json of one release (evalkit.report.models.Report), with lookups by name."""

    def suite(self, name: str) -> SuiteSummary:
        """The suite's summary (KeyError when the report has no such suite)."""
        for s in self.suites:
            if s.name == name:
                return s
        raise KeyError(f"no suite {name!r} in release {self.release} (suites: {', '.join(s.name for s in self.suites)})")

    def system(self, name: str) -> SystemSummary:
        """The system's summary over the whole release (KeyError when there is none)."""
        for s in self.systems:
            if s.name == name:
                return s
        raise KeyError(f"no system {name!r} in release {self.release} (systems: {', '.join(s.name for s in self.systems)})")

    def case(self, suite: str, case_id: str) -> CaseRow:
        """One case's row: every system's cell (KeyError when there is none)."""
        for row in self.cases:
            if row.suite == suite and row.case_id == case_id:
                return row
        raise KeyError(f"no case {suite}/{case_id} in release {self.release}")

    def cell(self, system: str, suite: str, case_id: str) -> CaseCell:
        """One system on one case: status, reason and metric values."""
        row = self.case(suite, case_id)
        if system not in row.systems:
            raise KeyError(f"system {system!r} did not run on {suite}/{case_id}")
        return row.systems[system]

    def value(self, system: str, metric: str, *, suite: str | None = None, case: str | None = None) -> float | None:
        """A metric's value: of one case (``suite`` and ``case``), aggregated over a suite (``suite``),
        or over the whole release; None where it does not apply. KeyError for an unknown name."""
        if case is not None:
            if suite is None:
                raise ValueError("case needs its suite")
            return self.cell(system, suite, case).metrics.get(metric)
        aggregates = self.suite(suite).systems.get(system, {}) if suite is not None else self.system(system).metrics
        if metric not in aggregates:
            return None
        return aggregates[metric].value


def results(site_or_project: Project | str | os.PathLike[str] | None = None, release: str | None = None) -> Results:
    """A release's results, read from ``site/<release>/report.json``.

    ``site_or_project``: a Project, a report site folder (holding ``<release>/report.json``), a project
    folder or its config file, or None (``$EVALKIT_CONFIG``, else ``./evalkit.yaml``). ``release``
    defaults to the project's release, or for a bare site to its newest release. Raises InputError
    when there is no such report.
    """

    if isinstance(site_or_project, Project):
        site, default = site_or_project.site, site_or_project.release
    else:
        p = Path(site_or_project) if site_or_project is not None else None
        if p is not None and p.is_dir() and ((p / "manifest.json").is_file() or any(p.glob("*/report.json"))):
            site, default = p, None
        else:
            cfg = load_config(_config_file(site_or_project))
            site, default = cfg.site_path, cfg.release
    label = release or default or next(iter(list_releases(site)), None)
    path = site / (label or "") / "report.json"
    if not label or not path.is_file():
        have = ", ".join(list_releases(site)) or "none"
        raise InputError(Problem(str(path if label else site), None,
                                 f"no report of release {label!r} (releases here: {have}); run the project first"))
    try:
        return Results.model_validate_json(path.read_bytes())
    except ValueError as exc:
        raise InputError(Problem(str(path), None, f"not a report.json evalkit can read: {str(exc)[:500]}")) from None


# --- evaluate --------------------------------------------------------------------------------------

class TestLists(Model):
    """Test ids of one SWE-bench list that passed and failed."""

    success: list[str] = []
    """Ids that passed."""
    failure: list[str] = []
    """Ids that failed, errored or were absent from the results."""


class Localization(Model):
    """Where the patch (or the given ranking) points against where the gold patch changes the code."""

    gold_files: list[str]
    """Files the gold patch changes."""
    gold_functions: list[str]
    """Functions the gold patch changes (``path::Class.method``), found in the pre-patch source."""
    files: list[str]
    """The ranking scored: files the evaluated patch changes, or the context_files given."""
    functions: list[str]
    """The ranking scored: functions the evaluated patch changes, or the context_functions given."""
    result: LocalizationResult
    """Recall and hit at each k (evalkit.metrics.localization)."""
    metrics: dict[str, float | None]
    """The same as flat metrics (``file_hit@1``, ``function_recall@3``, ...), as scores.json names them."""


class EvaluationResult(Model):
    """One patch evaluated against one SWE-bench instance."""

    instance_id: str
    """The instance."""
    status: str
    """The sandbox run: completed, patch_failed, tampered_with_tests, timeout, oom; infra_error or
    case_error when the tests could not be run at all (see ``error``)."""
    resolved: bool
    """Every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes, with the patch applied
    (the official harness's verdict where it grades the instance, as in SWE-bench's report.json)."""
    applied: bool
    """The patch applied to the tree at base_commit."""
    evalkit_resolved: bool | None = None
    """evalkit's own (stricter) verdict on the run; None when the tests did not run."""
    harness_resolved: bool | None = None
    """The official SWE-bench harness's verdict (instances it has a log parser for); None otherwise."""
    passed: list[str] = []
    """FAIL_TO_PASS and PASS_TO_PASS ids that passed."""
    failed: list[str] = []
    """FAIL_TO_PASS and PASS_TO_PASS ids that did not pass."""
    tests_status: dict[str, TestLists] = {}
    """SWE-bench's tests_status: FAIL_TO_PASS, PASS_TO_PASS, FAIL_TO_FAIL, PASS_TO_FAIL (empty when no tests ran)."""
    report: dict[str, Any] = {}
    """The instance's entry of SWE-bench's report.json, as `evalkit swebench-report` writes it."""
    localization: Localization | None = None
    """File and function hit/recall of the patch against the gold patch (None: the instance has no gold patch)."""
    codebleu: float | None = None
    """CodeBLEU of the patch against the gold patch: always None, see ``codebleu_note``."""
    codebleu_note: str = ""
    """Why there is no CodeBLEU."""
    reason: str = ""
    """The sandbox's explanation of the status (and of anything notable)."""
    error: str = ""
    """Why the tests could not run (infra_error, case_error); empty when they ran."""
    isolation: str | None = None
    """Where the tests ran: docker or local."""
    log: str = ""
    """Runner and test output (capped at the sandbox's log limit)."""
    test_time_s: float = 0.0
    """Wall time of the sandboxed test run (as recorded when it ran)."""
    time_s: float = 0.0
    """Wall time of this evaluate() call."""
    from_cache: bool = False
    """The run's result came from evalkit's content-addressed sandbox cache (same tree, patch, image, settings)."""


CODEBLEU_NOTE = ("evalkit does not score patches with CodeBLEU: it scores whole generated files against expected "
                 "files (migration and generation suites); a diff against a diff is not what CodeBLEU measures")


def _row_dict(instance: object) -> dict[str, Any]:
    """A SWE-bench row as a plain dict: a mapping, a pydantic model, a dataclass or a named tuple."""
    if isinstance(instance, Mapping):
        return dict(instance)
    for attr in ("model_dump", "to_dict", "_asdict"):
        fn = getattr(instance, attr, None)
        if callable(fn):
            out = fn()
            if isinstance(out, Mapping):
                return dict(out)
    if dataclasses.is_dataclass(instance) and not isinstance(instance, type):
        return dataclasses.asdict(instance)
    raise InputError(Problem("instance", None, f"expected a SWE-bench row (a dict with instance_id, repo, base_commit, "
                                               f"patch, test_patch, FAIL_TO_PASS, PASS_TO_PASS), got {type(instance).__name__}"))


def _default_work_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalkit" / "api"


def _instance_report(instance_id: str, run_record: Mapping[str, Any], patch: str | None) -> dict[str, Any]:
    """SWE-bench's report.json entry of one run (the writer of `evalkit swebench-report`)."""

    return instance_report(instance_id, run_record, patch)[instance_id]


def _one_case_project(row: Row, raw: dict[str, Any], work: Path, *, backend: str, repo: str | None,
                      tree: str | os.PathLike[str] | None, image: str | None, tree_in_image: str | None,
                      test_command: str | None) -> Path:
    """A project holding the instance as a one-case SWE-bench import (`evalkit import swebench`)."""

    root = work / "instances" / digest([raw, backend, repo, str(tree) if tree else None, image, tree_in_image,
                                        test_command])[:20]
    root.mkdir(parents=True, exist_ok=True)
    rows = root / "instance.json"
    rows.write_text(json.dumps([raw], default=str), encoding="utf-8")
    sandbox: dict[str, Any] = {"backend": backend}
    if repo:
        where = str(repo)
        sandbox["repos"] = {row.repo: where if "://" in where or where.startswith("git@") else str(Path(where).resolve())}
    (root / "evalkit.yaml").write_text(json.dumps({  # JSON is YAML
        "release": "evaluate", "systems": [{"name": "gold", "adapter": "gold"}], "cases_dir": "cases",
        "work_dir": str(work / "work"), "site_dir": "site", "sandbox": sandbox}, indent=1), encoding="utf-8")
    trees = {row.instance_id: Path(tree).resolve()} if tree else None
    import_swebench(rows, {row.repo: "(mapped by sandbox.repos)"}, root / "cases" / EVALUATE_SUITE, image=image,
                    test_command=test_command, trees=trees, tree_in_image=tree_in_image)
    return root


def evaluate(patch: str | None, instance: Mapping[str, object] | object, *, backend: Literal["auto", "docker", "local"] = "auto",
             repo: str | os.PathLike[str] | None = None, tree: str | os.PathLike[str] | None = None,
             image: str | None = None, tree_in_image: str | None = None, test_command: str | None = None,
             context_files: Sequence[str] | None = None, context_functions: Sequence[str] | None = None,
             ks: Sequence[int] = (1, 3, 5, 10), work_dir: str | os.PathLike[str] | None = None) -> EvaluationResult:
    """Evaluate one patch against one SWE-bench instance, as SWE-bench's evaluator does: apply it to the
    tree at ``base_commit``, apply the test patch, run the tests in the sandbox, grade FAIL_TO_PASS and
    PASS_TO_PASS (with the official harness too where it has the instance's log parser).

    ``instance`` is a SWE-bench row (4.x or 5.x; a dict, or a dataset row). Its tree comes from ``repo``
    (a local clone or URL of the row's ``owner/name``; else sandbox.repos / $EVALKIT_REPOS), ``tree`` (a
    plain folder at base_commit) or ``tree_in_image`` (SWE-bench's environment images: ``/testbed``,
    ``image`` naming it). Localization scores the files and functions the patch changes (or
    ``context_files`` / ``context_functions``, a ranking) against the gold patch. Results are cached by
    content under ``work_dir`` (default ~/.cache/evalkit/api): the same patch on the same tree is not run
    twice. A malformed row raises InputError; tests that could not run give status infra_error or
    case_error with ``error`` saying why (``resolved`` is then False).
    """

    start = time.perf_counter()
    raw = _row_dict(instance)
    row = parse_row(raw, "instance", None, 0)
    if patch is not None and not isinstance(patch, str):
        raise InputError(Problem("patch", None, f"expected the patch as a unified diff string, got {type(patch).__name__}"))
    work = Path(work_dir) if work_dir is not None else _default_work_dir()
    root = _one_case_project(row, raw, work.resolve(), backend=backend, repo=os.fspath(repo) if repo else None,
                             tree=tree, image=image, tree_in_image=tree_in_image, test_command=test_command)
    loaded = _project.load(str(root / "evalkit.yaml"), refresh=True)
    case = loaded.project.case(f"{EVALUATE_SUITE}/{row.instance_id}")
    if case.problems:
        raise InputError(list(case.problems))
    cfg = loaded.config
    text = patch if patch and patch.strip() else None
    ran = time.perf_counter()
    ran_record = run_patch(cfg, case, text)
    record: dict[str, Any] = (ran_record.model_dump(mode="json") if isinstance(ran_record, BaseModel)
                              else dict(ran_record))  # a sandbox run record (ExecutionResult's fields)
    elapsed = time.perf_counter() - ran
    entry = _instance_report(row.instance_id, record, text)
    status = str(record.get("status"))
    ran_tests = status in ("completed", "tampered_with_tests", "timeout", "oom")
    lists = {k: TestLists(**v) for k, v in (entry.get("tests_status") or {}).items()}
    outcomes = {**record.get("fail_to_pass", {}), **record.get("pass_to_pass", {})} if ran_tests else {}
    if not outcomes and status == "patch_failed":  # nothing ran: every listed test counts as failed
        outcomes = {t: "failed" for t in [*row.fail_to_pass, *row.pass_to_pass]}
    loc = None
    if row.patch.strip():
        try:
            folder: Path | None = source_tree(cfg, case) if not tree_in_image else None
        except TreeUnavailable:
            folder = None

        def read(path: str) -> str | None:
            p = folder / path if folder is not None else None
            return p.read_text(encoding="utf-8", errors="replace") if p is not None and p.is_file() else None

        gold = gold_locations(row.patch, read, case.language)
        mine = gold_locations(text or "", read, case.language)
        files = list(context_files) if context_files is not None else mine.files
        functions = list(context_functions) if context_functions is not None else mine.functions
        result = localization(files, functions, gold, ks=tuple(ks))
        loc = Localization(gold_files=gold.files, gold_functions=gold.functions, files=files, functions=functions,
                           result=result, metrics=result.as_metrics())
    duration = float(record.get("duration_s") or 0.0)
    return EvaluationResult(
        instance_id=row.instance_id, status=status, resolved=bool(entry.get("resolved")),
        applied=bool(entry.get("patch_successfully_applied")),
        evalkit_resolved=record.get("resolved") if ran_tests else None, harness_resolved=record.get("harness_resolved"),
        passed=sorted(t for t, s in outcomes.items() if s == "passed"),
        failed=sorted(t for t, s in outcomes.items() if s != "passed"),
        tests_status=lists, report=entry, localization=loc, codebleu=None, codebleu_note=CODEBLEU_NOTE,
        reason=str(record.get("reason") or ""),
        error=str(record.get("reason") or status) if status in ("infra_error", "case_error") else "",
        isolation=record.get("isolation"), log=str(record.get("log") or ""), test_time_s=round(duration, 3),
        time_s=round(time.perf_counter() - start, 3), from_cache=duration > 0 and elapsed < duration)


# --- metrics ---------------------------------------------------------------------------------------

def _known_kinds() -> set[str]:
    """Suite kinds a metric may name: the registered ones (evalkit.kinds)."""

    try:
        return set(names())
    except ImportError:  # an older layout: the kinds the registry ranks
        return set(LEADERBOARD_METRICS)


def _scorer_identity(fn: Callable[..., object]) -> str:
    """What changes when the scorer does: its qualified name and source text (rescored when it changes)."""

    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        source = ""
    return digest([getattr(fn, "__module__", ""), getattr(fn, "__qualname__", repr(fn)), source])


def register_metric(name: str, *, description: str, aggregate: Literal["rate", "mean", "sum"] = "mean",
                    display: str | None = None, higher_is_better: bool | None = True, unit: str = "",
                    scale: str = "0-1", kinds: Sequence[str] = (), headline: bool = False, binary: bool | None = None,
                    primary: int | None = None, scorer: AnyMetricScorer | None = None,
                    replace: bool = False) -> MetricInfo:
    """Add a metric to evalkit's one metric registry (evalkit.metrics.registry), so its values get a
    name, a direction and an aggregation (rate: Wilson interval; mean: bootstrap; sum: a total) in
    report.json's ``metric_info`` and on every page.

    ``scorer(ctx)`` computes the value of one (system, case) of the ``kinds`` given (empty: every kind) from
    its ``ScoreContext`` (config, case, reference, output, execution, grades: what a kind's scorer gets, in one
    object; evalkit.contracts.MetricScorer), as a number, a bool (0/1), None ("not applicable") or a
    ``MetricValue`` with its explanation. The older form ``scorer(case, output, execution, grades)`` still works. It runs in the score stage of in-process runs (run()); adding or changing it rescores.
    A name evalkit already has is refused unless ``replace``. Returns the registered MetricInfo.
    """

    if name in METRICS and not replace and name not in ADDED:
        raise ValueError(f"metric {name!r} is evalkit's already (pass replace=True to redefine it)")
    unknown = sorted(set(kinds) - _known_kinds())
    if unknown:
        raise ValueError(f"unknown suite kind(s) {', '.join(unknown)}; expected some of {', '.join(sorted(_known_kinds()))}")
    info = metric(name=name, display=display or name, description=description, aggregate=aggregate,
                  higher_is_better=higher_is_better, unit=unit, scale=scale, kinds=tuple(kinds), headline=headline,
                  binary=aggregate == "rate" if binary is None else binary, primary=primary)
    ADDED_SCORERS.pop(name, None)
    if scorer is not None:
        ADDED_SCORERS[name] = scorer
    ADDED[name] = json.dumps([info.model_dump(mode="json"), _scorer_identity(scorer) if scorer else None],
                             sort_keys=True)
    return info
