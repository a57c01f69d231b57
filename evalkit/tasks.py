"""The doit graph: one task per (stage, system, case), then summarize and render per release.

`dodo.py` imports everything here. Each task's `file_dep` is its input artifacts, the case's
files and its stage's *config slice file* (`<work>/slices/<stage>.json`, rewritten only when that
slice of evalkit.yaml changes: the same job as doit's `config_changed`, but a plain file stat per
task, which keeps a no-op run of 12,000 tasks fast); `targets` is its artifact; `uptodate` is
False when the artifact recorded an infrastructure error (a `.retry` marker), so that is redone.
Editing a case reruns that case's tasks; a system's settings rerun that system's tasks; judge
settings rerun grade and score; a template reruns render only.
"""

from __future__ import annotations

import fnmatch
import gc
from functools import cached_property
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, cast

from evalkit.artifacts import (ARTIFACT_FILES, ARTIFACT_MODELS, ArtifactBase, artifact_path, marked_for_retry, read_optional,
                               write_artifact, write_with_retry_mark)
from evalkit import envfail
from evalkit.errors import InputError
from evalkit.health_models import CaseHealth
from evalkit.models import Model
from evalkit.project import Loaded, load, participating
from evalkit.selection import selected, selection
from evalkit.stages import slices
import functools
from evalkit import isolation as decision
from evalkit.errors import Problem
from evalkit.fsutil import WriteOutsideRoots
from evalkit.fsutil import ensure_dir
from evalkit.kind_registry import kind as kind_named
from evalkit.kind_registry import kind as suite_kind
from evalkit.kind_registry import kinds
from evalkit.sandbox.backends import uses_images
from evalkit.termtext import terminal_safe
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from doit.exceptions import TaskFailed

    from evalkit.artifacts import GradesArtifact
    from evalkit.cases import Case, Project
    from evalkit.graders import audit as audit_code
    from evalkit import bugs
    from evalkit.report import calibration as calibration_code
    from evalkit.executors import call as call_code
    from evalkit import doitplus
    from evalkit import executors as executors_code
    from evalkit.stages import grade_batch as grade_batch_code
    from evalkit.stages import grade_retry
    from evalkit.stages import health as health_code
    from evalkit.sandbox import images as images_code
    from evalkit.systems import recorded as recorded_code
    from evalkit.report import render as render_code
    from evalkit.report import site as site_code
    from evalkit.report import summarize as summarize_code
    from evalkit import run_images
    from evalkit import run_status
    from evalkit import tempdirs
    from evalkit.stages import validate as validate_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    audit_code = later("evalkit.graders.audit")
    bugs = later("evalkit.bugs")
    calibration_code = later("evalkit.report.calibration")
    call_code = later("evalkit.executors.call")
    doitplus = later("evalkit.doitplus")
    executors_code = later("evalkit.executors")
    grade_batch_code = later("evalkit.stages.grade_batch")
    grade_retry = later("evalkit.stages.grade_retry")
    health_code = later("evalkit.stages.health")
    images_code = later("evalkit.sandbox.images")
    recorded_code = later("evalkit.systems.recorded")
    render_code = later("evalkit.report.render")
    site_code = later("evalkit.report.site")
    summarize_code = later("evalkit.report.summarize")
    run_images = later("evalkit.run_images")
    run_status = later("evalkit.run_status")
    tempdirs = later("evalkit.tempdirs")
    validate_code = later("evalkit.stages.validate")


NO_CAPTURE = {"capture": False}
"""Every task's `io`: doit's output capture swaps the process-wide sys.stdout/sys.stderr for a
tee per action, and with `-n N -P thread` the actions restore each other's tees: the streams
become a chain of thousands of tees and the final flush fails (exit 120 after a 12,000-task run).
Uncaptured, an action writes to the real streams (stderr shown as before, tracebacks included)."""

BEFORE_ALL = {"priority": -1}
"""The ``meta`` of plain `doit`'s `images:run` (`images_bracket`): before every other task."""
FIRST = {"priority": 0}
EARLY = {"priority": 1}
"""The ``meta`` of the tasks a first run should start before the others: doit dispatches by it
(`evalkit.doitplus.PriorityReady`; a task without one is `doitplus.DEFAULT_PRIORITY`, after these), and
`DEFAULT_TASKS` meets these groups first. `FIRST`: execute, so that a case's patches start as soon as its
validation is done, not after every other case's. `EARLY`: what the sandbox waits on or runs besides (the
base image, executed kinds' validate and health, the answers execute runs: generate of an executed kind), and
grade. The containers start at once: a hanging patch runs into its timeout beside the rest of the run, not
after it. What this does not do: while execute tasks are ready nothing of a later priority starts, so health
and grade (a rag suite's ragas import) still follow the last container (docs/operations/performance.md,
"Demo first run", says what was tried)."""

DEFAULT_TASKS = ["execute", "validate", "health", "grade", "generate", "score", "audit", "summarize", "render"]
"""`doit run`'s groups, in the order doit first meets them (`FIRST`, `EARLY`); each task still runs after the
tasks it depends on."""

def check_selection(globs: list[str], project: Project) -> None:
    """A selection must pick some case: raise InputError naming the globs when none matches any."""
    if not globs:
        return

    keys = [c.key for c in project.cases]
    if not any(selected(k, globs) for k in keys):
        example = f" (cases look like {keys[0]!r})" if keys else ""
        raise InputError(Problem("--select / EVALKIT_SELECT", None, f"{', '.join(repr(g) for g in globs)} "
                                 f"matches no case of the project{example}; expected SUITE/CASE-GLOB"))
    for g in globs:
        if not any(fnmatch.fnmatchcase(k, g) for k in keys):
            print(f"evalkit: warning: --select {g!r} matches no case", file=sys.stderr)


def stage_chain(kind: str) -> list[str]:
    """The stages a (system, case) of a suite kind goes through, in order (the kind's)."""

    return kind_named(kind).stages


# ---- actions (plain functions; they load the project once per process) -------------------------

def _refuse_escapes(action: Any) -> Any:
    """A write refused by the write guard (evalkit.fsutil.guarded) fails the task with one plain line; so does
    a failure of the machine (disk full, read-only, out of memory: evalkit.envfail), recorded for the exit
    status (6), never a traceback."""


    @functools.wraps(action)
    def wrapper(*args: Any) -> bool:
        try:
            return action(*args)
        except WriteOutsideRoots as exc:
            print(f"evalkit: {exc}", file=sys.stderr)
            return False
        except (OSError, MemoryError) as exc:
            cause = envfail.environment_cause(exc)
            if cause is None:
                raise
            named = [str(a) for a in args if not os.path.isfile(str(a))]  # not the config file's path
            line = envfail.record(cause, f"{action.__name__}({', '.join(named)})")
            print(f"evalkit: environment failure: {line}", file=sys.stderr)
            return False

    return wrapper


@_refuse_escapes
def run_stage(stage: str, config: str, system_name: str, case_key: str) -> bool:
    """Run one stage for one (system, case) through the project's executor (evalkit.executors) and write the
    artifact it returns atomically. An exception the stage raises is an evalkit bug (status ``bug``, a short
    traceback, redone when evalkit's code changes); the executor's own failure is an infrastructure error."""

    loaded = load(config)
    cfg = loaded.config
    system = cfg.system(system_name)
    case = loaded.project.case(case_key)
    work = cfg.work_path
    target = artifact_path(work, stage, system.name, case.suite, case.id)
    inputs = {s: read_optional(artifact_path(work, s, system.name, case.suite, case.id), s) for s in call_code.INPUTS[stage]}
    model = ARTIFACT_MODELS[stage]
    bug_trace = ""
    try:
        result = cast(ArtifactBase, executors_code.executor_for(cfg).run(  # a stage call's: its artifact
            executors_code.build_call(cfg, stage, system, case, inputs)))
    except (executors_code.ExecutorFailure, executors_code.MissingBlob) as exc:  # where the call runs failed, not the stage: retried next run
        result = model(system=system.name, suite=case.suite, case_id=case.id, status="infra_error",
                       reason=f"executor {cfg.executor_name}: {type(exc).__name__}: {exc}"[:1000])
    except Exception as exc:  # an evalkit bug: said as one, kept apart, not retried on every run
        if envfail.environment_cause(exc) is not None:
            raise  # the machine's failure (disk full, ...), not evalkit's: `_refuse_escapes` says it
        bug_trace = bugs.report(stage, system.name, case.key, exc)
        result = model(system=system.name, suite=case.suite, case_id=case.id, status="bug",
                       reason=bugs.reason_of(stage, exc))
    write_artifact(target, result)
    if bug_trace:  # raised here (a later stage only passes an earlier bug on)
        bugs.write_record(work, stage, system.name, case.suite, case.id, str(target), result.reason,
                          bug_trace)
    else:
        bugs.clear_record(work, stage, system.name, case.suite, case.id)
    if stage == "grade":

        grade_retry.mark_after_grade(target, cast("GradesArtifact", result))  # a judge API failure is retried next run; the grade model's
    return True


def _run_case_call(config: str, case_key: str, stage: str) -> None:
    """Run a case's `validate` or `health` call through the project's executor, like the stages, and write its
    result (the executor's own failure: an infra_error, retried next run)."""

    loaded = load(config)
    cfg = loaded.config
    case = loaded.project.case(case_key)
    result: Model  # a validate_code.Validation or a CaseHealth (the executor's run returns it for a validate or health call), or an infra_error one
    try:  # through the project's executor, like the stages (its own failure: retried next run)
        result = executors_code.executor_for(cfg).run(executors_code.build_call(cfg, stage, None, case, {}))
    except (executors_code.ExecutorFailure, executors_code.MissingBlob) as exc:
        why = f"executor {cfg.executor_name}: {type(exc).__name__}: {exc}"[:1000]
        result = (validate_code.Validation(suite=case.suite, case_id=case.id, status="infra_error", reason=why) if stage == "validate"
                  else CaseHealth(suite=case.suite, case_id=case.id, strength="infra_error", reason=why))
    target = validate_code.validation_path(cfg.work_path, case) if stage == "validate" else health_code.health_path(cfg.work_path, case)
    write_with_retry_mark(target, result)


@_refuse_escapes
def run_validate(config: str, case_key: str) -> bool:
    """Validation of one case's reference (patch: gold must resolve, no patch must not; others: gold
    passes the case's assertions and incidents, parses and is complete)."""
    _run_case_call(config, case_key, "validate")
    return True


@_refuse_escapes
def run_health(config: str, case_key: str) -> bool:
    """One case's health (evalkit.stages.health): its reference against its own ablations, its tree's leaks."""
    _run_case_call(config, case_key, "health")
    return True


@_refuse_escapes
def run_audit_task(config: str) -> bool:
    """The judge's consistency audit (judge.audit) -> site/<release>/judge_audit.json."""

    loaded = load(config)
    audit_code.write_audit(loaded.config, loaded.project)
    return True


@_refuse_escapes
def run_summarize(config: str) -> bool:
    loaded = load(config)
    summarize_code.summarize(loaded.config, loaded.project)
    return True


@_refuse_escapes
def run_render(config: str, release: str) -> bool:
    loaded = load(config)
    cfg = loaded.config
    page = render_code.render_site(cfg.site_path, release, cfg.resolve(cfg.templates_dir) if cfg.templates_dir else None,
                       cache_dir=cfg.template_cache)
    if release == cfg.release:
        print(f"evalkit: report for release {release} -> open {os.path.relpath(page)}")
    return True


def run_images_before() -> bool:
    """`images:run`'s action: list the images the run needs, with their sizes (evalkit.run_images.before_run)."""
    g = graph()  # plain doit's process: the graph its tasks came from
    run_images.before_run(g.cfg, g.run_cases())
    return True


def run_images_after() -> bool:
    """`images:run`'s teardown, once every task is done: record their use and apply ``sandbox.image_store_gb``
    (evalkit.run_images.after_run, with the sizes the list holds from the start)."""
    cfg = graph().cfg
    run_images.after_run(cfg, run_images.listed_sizes(cfg.work_path))
    return True


def run_outcome() -> bool | TaskFailed:
    """`outcome:run`'s action, plain doit's last task: the run's exit status as `evalkit run` decides it
    (evalkit.run_status: the machine's failures, then ``verdict``), its lines on stderr. Any status but 0 fails
    the task, so a `doit` that evaluated nothing, or left infrastructure errors, exits non-zero (doit's 1;
    `evalkit run` exits with the status itself)."""
    g = graph()
    status, lines = run_status.environment_verdict(envfail.recorded())
    if not status:
        status, lines = run_status.verdict(g.cfg.work_path, g.cfg.site_path / g.cfg.release / "report.json",
                                           g.pair_ids())
    for line in lines:
        print(f"evalkit: {terminal_safe(line)}", file=sys.stderr, flush=True)
    if status == 0:
        return True
    from doit.exceptions import TaskFailed  # deferred: doit, only when tasks run (`evalkit run` no-ops load none)

    return TaskFailed(f"the run's outcome is exit status {status} (the lines above say why; `evalkit run` exits "
                      f"with it)")


# ---- task generators ---------------------------------------------------------------------------

def _say_stray(stray: tempdirs.Stray) -> None:
    print(tempdirs.killed_line(stray, "a killed run"), file=sys.stderr, flush=True)


class Graph:
    """Everything the task generators share, computed once per doit run."""

    def __init__(self, config: str | None = None) -> None:
        self.loaded: Loaded = load(config)
        cfg = self.loaded.config
        self.config = cfg.path
        self.globs = selection()
        self.pairs = participating(cfg, self.loaded.project)
        check_selection(self.globs, self.loaded.project)
        self.cfg = cfg
        self.work_path = cfg.work_path
        self.work = str(self.work_path)
        self._case_paths: dict[tuple[str, str, str], str] = {}
        self._executed: dict[str, bool] = {}
        self._stage_rows: list[tuple[Any, Any, str, list[str], bool]] | None = None

        decision.forget()  # one isolation per run: decided here (execute slice), before any task, and kept

        tempdirs.sweep(killed=_say_stray)  # work folders of killed runs (their owner process is gone)
        self.slice_files = {
            "execute": slices.write_slice(cfg, "execute", slices.execute_slice(cfg)),
            "grade": slices.write_slice(cfg, "grade", slices.grade_slice(cfg)),
            "score": slices.write_slice(cfg, "score", slices.score_slice(cfg)),
            "summarize": slices.write_slice(cfg, "summarize", slices.summarize_slice(cfg)),
        }
        self.system_slice_files = {s.name: slices.write_slice(cfg, f"generate-{s.name}", slices.generate_slice(cfg, s))
                                   for s in cfg.systems}

        grade_retry.endpoint_changed(cfg)  # a new judge endpoint or use_cache: regrade what has no verdict
        if os.environ.get("EVALKIT_RETRY_JUDGE_ERRORS") == "1":
            grade_retry.mark_grades(cfg.work_path, {"judge_error"})

        self.redo_bugs = bugs.to_redo(cfg.work_path)  # evalkit bugs of other code, or all with --retry-bugs

    def needs_base_image(self, case: Case) -> bool:
        """The case runs in evalkit's own base image (built by `sandbox_image:build` when absent)."""

        inputs = case.inputs  # a kind that runs tests has an image (and a patch case may build its own)
        return (uses_images(self.cfg.sandbox.backend) and not getattr(inputs, "dockerfile_dir", None)
                and getattr(inputs, "image", None) == self.cfg.sandbox.base_image)

    def pair_ids(self) -> list[tuple[str, str, str]]:
        """(system, suite, case id) of each of the run's pairs: what `evalkit.run_status` reads them by."""
        return [(system.name, case.suite, case.id) for system, case in self.pairs]

    def run_cases(self) -> list[Case]:
        """The run's cases, each once (the images they need are the run's, `evalkit.run_images`)."""
        return list({c.key: c for _, c in self.pairs}.values())

    def images_run_task(self) -> dict[str, Any] | None:
        """Plain `doit`'s `images:run` when a case runs in an image (`evalkit.run_images.needed_images`), else None."""
        if not run_images.needed_images(self.cfg, self.run_cases()):
            run_images.before_run(self.cfg, [])  # no image: a list left by an earlier run goes
            return None
        return {"name": "run", "actions": [run_images_before], "teardown": [run_images_after], "uptodate": [False],
                "verbosity": 2, "io": NO_CAPTURE, "meta": BEFORE_ALL}

    def image_task(self) -> dict[str, Any] | None:
        """`sandbox_image:build` when a selected case runs in the base image, else None."""
        if not any(chosen and "execute" in chain and self.needs_base_image(case)
                   for _s, case, _f, chain, chosen in self.stage_rows()):
            return None

        name = self.cfg.sandbox.base_image
        return {"name": "build", "actions": [(images_code.ensure_base_image, [name])], "uptodate": [(images_code.base_image_ready, [name])],
                "verbosity": 2, "io": NO_CAPTURE, "meta": EARLY}

    def batch_task(self) -> dict[str, Any] | None:
        """The `judge_batch:run` task (judge.mode batch with a key), else None; built once."""
        if not hasattr(self, "_batch_task"):

            self._batch_task = grade_batch_code.batch_task(self)
        return self._batch_task

    def path(self, stage: str, system: str, case: Case) -> str:
        # plain string joins: this runs ~30,000 times per doit invocation on a large project
        return f"{self.work}/artifacts/{system}/{case.suite}/{case.id}/{ARTIFACT_FILES[stage]}"

    def stages_for(self, case: Case) -> list[str]:
        return stage_chain(case.kind)

    def stage_rows(self) -> list[tuple[Any, Any, str, list[str], bool]]:
        """(system, case, artifact folder, stage chain, selected) per pair, computed once for all stages."""
        if self._stage_rows is None:
            chains = {kind: stage_chain(kind) for kind in {c.kind for _, c in self.pairs}}
            self._stage_rows = [(system, case, f"{self.work}/artifacts/{system.name}/{case.suite}/{case.id}/",
                                 chains[case.kind], selected(case.key, self.globs)) for system, case in self.pairs]
        return self._stage_rows

    def stage_tasks(self, stage: str) -> Iterator[dict[str, Any]]:
        cfg = self.cfg
        file_of = ARTIFACT_FILES
        watched: dict[str, list[str]] = {}

        root = Path(cfg.root)
        for system, case, folder, chain, chosen in self.stage_rows():
            if not chosen or stage not in chain:
                continue
            target = folder + file_of[stage]  # == self.path(stage, system.name, case)
            if stage == "generate":
                if system.name not in watched:
                    watched[system.name] = [str(cfg.resolve(w)) for w in getattr(system, "watch", [])]
                deps = list(case.files) + watched[system.name]
                if system.adapter == "recorded":  # an edited recording reruns generate (it is the answer)
                    deps += [str(s) for s in recorded_code.recorded_sources(system, case, root)
                             if os.path.exists(s)]
                deps.append(self.system_slice_files[system.name])
            else:
                # The case's files reach later stages through output.json, whose provenance holds
                # the case digest: listing them again would only cost stats on every no-op run.
                deps = [folder + file_of[s] for s in chain[: chain.index(stage)]]
                deps.append(self.slice_files[stage])
            if stage == "score" and case.kind in self.validated_kinds:
                deps.append(self.validation_path(case))
            if stage == "execute" and case.kind in self.execute_reads_validation:  # patch: a broken environment
                deps.append(self.validation_path(case))  # found there is not run again
            key = case.key
            task = {
                "name": f"{system.name}:{key}",
                "actions": [(run_stage, [stage, self.config, system.name, key])],
                "file_dep": deps,
                "targets": [target],
                "clean": True,
                "io": NO_CAPTURE,
            }
            if stage == "execute":
                task["meta"] = FIRST
            elif stage == "grade" or (stage == "generate" and "execute" in chain):
                task["meta"] = EARLY
            if marked_for_retry(target) or target in self.redo_bugs:  # most tasks have neither: an empty
                task["uptodate"] = [False]  # `uptodate` is doit's fast path
            if stage == "grade" and self.batch_task() is not None:
                task["task_dep"] = ["judge_batch:run"]  # judge.mode batch: answers come from the batch first
            if stage == "execute" and self.needs_base_image(case):
                task["task_dep"] = ["sandbox_image:build"]  # the base image is built first when absent
            yield task

    @cached_property
    def validated_kinds(self) -> tuple[str, ...]:
        """Kinds whose cases the validate task checks."""

        return tuple(n for n, k in kinds().items() if k.execution.validated)

    @cached_property
    def execute_reads_validation(self) -> tuple[str, ...]:
        """Kinds whose execute stage reads the case's validation."""

        return tuple(n for n, k in kinds().items() if k.execution.execute_reads_validation)

    def executed(self, kind: str) -> bool:
        """Whether cases of ``kind`` run in the sandbox (looked up once per kind, not per case)."""
        found = self._executed.get(kind)
        if found is None:
            found = self._executed[kind] = kind_named(kind).execution.executed
        return found

    def validation_path(self, case: Case) -> str:
        key = ("validation", case.suite, case.id)
        p = self._case_paths.get(key)
        if p is None:  # once per case (a score task of each system lists it too): validate.validation_path's, as a string
            p = self._case_paths[key] = f"{self.work}/validation/{case.suite}/{case.id}.json"
        return p

    def validate_tasks(self) -> Iterator[dict[str, Any]]:
        seen = set()
        for _system, case in self.pairs:
            if case.kind not in self.validated_kinds or case.key in seen or not selected(case.key, self.globs):
                continue
            seen.add(case.key)
            executed = self.executed(case.kind)
            target = self.validation_path(case)
            task = {"name": case.key, "actions": [(run_validate, [self.config, case.key])],
                    "file_dep": list(case.files) + ([self.slice_files["execute"]] if executed else []),
                    "targets": [target],
                    "uptodate": [not marked_for_retry(target)], "clean": True, "io": NO_CAPTURE}
            if executed and self.needs_base_image(case):
                task["task_dep"] = ["sandbox_image:build"]
            if executed:
                task["meta"] = EARLY
            yield task

    def health_path(self, case: Case) -> str:
        key = ("health", case.suite, case.id)
        p = self._case_paths.get(key)
        if p is None:  # health.health_path's, as a string
            p = self._case_paths[key] = f"{self.work}/health/{case.suite}/{case.id}.json"
        return p

    @cached_property
    def health_slice_files(self) -> dict[bool, str]:
        """executed kind or not -> the health slice file its cases' health tasks depend on."""
        return {ex: slices.write_slice(self.cfg, f"health{'-executed' if ex else ''}", slices.health_slice(self.cfg, ex))
                for ex in (False, True)}

    def health_cases(self) -> list[Any]:
        """The selected cases of validated kinds, once each: each gets one `health` task."""
        seen: dict[str, Any] = {}
        for _system, case in self.pairs:
            if case.kind in self.validated_kinds and case.key not in seen and selected(case.key, self.globs):
                seen[case.key] = case
        return list(seen.values())

    def health_tasks(self) -> Iterator[dict[str, Any]]:
        """One task per case: a pure function of the case's files, its validation and the health slice."""

        for case in self.health_cases():
            target = self.health_path(case)
            slice_file = self.health_slice_files[self.executed(case.kind)]
            task = {"name": case.key, "actions": [(run_health, [self.config, case.key])],
                    "file_dep": list(case.files) + [self.validation_path(case), slice_file],
                    "targets": [target], "uptodate": [not marked_for_retry(target)], "clean": True,
                    "io": NO_CAPTURE}
            if self.needs_base_image(case):
                task["task_dep"] = ["sandbox_image:build"]
            if kind_named(case.kind).execution.executed:
                task["meta"] = EARLY
            yield task

    def health_files(self) -> list[str]:
        """The health files the report reads (those of unselected cases too, when they exist)."""
        files = []
        seen = set()
        for _system, case in self.pairs:
            if case.kind not in self.validated_kinds or case.key in seen:
                continue
            seen.add(case.key)
            p = self.health_path(case)
            if selected(case.key, self.globs) or os.path.exists(p):
                files.append(p)
        return files

    def score_files(self) -> list[str]:
        files = []
        for system, case in self.pairs:
            p = self.path("score", system.name, case)
            if selected(case.key, self.globs) or os.path.exists(p):
                files.append(p)
        return files


_graph: Graph | None = None


def graph() -> Graph:
    global _graph
    if _graph is None:
        _graph = Graph()
    return _graph


def doit_config() -> dict[str, Any]:
    """DOIT_CONFIG for dodo.py: sqlite3 database in the work folder, quiet reporter, evalkit.doitplus."""


    try:
        g = graph()
    except InputError as exc:
        for p in exc.problems:
            print(f"evalkit: {p}", file=sys.stderr)
        raise SystemExit(2) from None
    except WriteOutsideRoots as exc:  # "evalkit bug: refused to write ...": exit 4, as other evalkit bugs (3 is "all failed")
        print(f"evalkit: {exc}", file=sys.stderr)
        raise SystemExit(4) from None
    for note in g.loaded.project.input_notes():  # said on every run, and on the release page
        print(f"evalkit: warning: {note}", file=sys.stderr)
    db = g.cfg.work_path / "doit.sqlite3"

    ensure_dir(db.parent)
    gc.freeze()  # the loaded project and graph live until the end: no collection needs to scan them
    return {"backend": doitplus.backend_name(), "dep_file": str(db), "verbosity": 1, "reporter": doitplus.ExecutedOnlyReporter,
            "check_file_uptodate": doitplus.MD5Checker,
            "default_tasks": DEFAULT_TASKS}


def task_generate() -> Iterator[dict[str, Any]]:
    """Run each system under test on each case (content-addressed: a rerun never pays twice)."""
    yield {"basename": "generate", "name": None, "doc": task_generate.__doc__}
    yield from graph().stage_tasks("generate")


def task_execute() -> Iterator[dict[str, Any]]:
    """Apply each system's patch and run the case's tests in the sandbox (patch, agentic, e2e suites)."""
    yield {"basename": "execute", "name": None, "doc": task_execute.__doc__}
    yield from graph().stage_tasks("execute")


def task_validate() -> Iterator[dict[str, Any]]:
    """Reference validation: the gold patch must resolve and no patch must not; other kinds' references must pass their case."""
    yield {"basename": "validate", "name": None, "doc": task_validate.__doc__}
    yield from graph().validate_tasks()


def task_health() -> Iterator[dict[str, Any]]:
    """Case health: each case's reference against partial answers derived from it (ablations), and leaks."""
    yield {"basename": "health", "name": None, "doc": task_health.__doc__}
    yield from graph().health_tasks()


def task_sandbox_image() -> Iterator[dict[str, Any]]:
    """Build evalkit's sandbox base image before any execute task when Docker answers and lacks it."""
    yield {"basename": "sandbox_image", "name": None, "doc": task_sandbox_image.__doc__}
    task = graph().image_task()
    if task is not None:
        yield task


def images_bracket() -> Iterator[dict[str, Any]]:
    """Sandbox images: list the run's with their sizes first; record their use and apply the cap last.

    Plain `doit` only (dodo.py's ``task_images``): before any task, ``<work>/sandbox-images.json``; once every
    task is done (a doit teardown), the use record and ``sandbox.image_store_gb``. `evalkit run` does both
    around its doit run itself (its no-op runs too), so the group is not among its ``task_*``."""
    yield {"basename": "images", "name": None, "doc": images_bracket.__doc__}
    task = graph().images_run_task()
    if task is not None:
        yield task


def outcome_bracket() -> Iterator[dict[str, Any]]:
    """The run's outcome: once every other task is done, `evalkit run`'s exit status and why; fails unless it is 0.

    Plain `doit` only (dodo.py's ``task_outcome``): `evalkit run` decides the same after its doit run and exits
    with the status itself, so the group is not among its ``task_*``."""
    yield {"basename": "outcome", "name": None, "doc": outcome_bracket.__doc__}
    yield {"name": "run", "actions": [run_outcome], "task_dep": ["render"], "uptodate": [False], "verbosity": 2,
           "io": NO_CAPTURE}


def task_judge_batch() -> Iterator[dict[str, Any]]:
    """judge.mode batch: send the grade stage's uncached model calls as Message Batches before grading."""
    yield {"basename": "judge_batch", "name": None, "doc": task_judge_batch.__doc__}
    task = graph().batch_task()
    if task is not None:
        yield task


def task_grade() -> Iterator[dict[str, Any]]:
    """Grade each output: assertions, syntax validity, and the LLM judge when configured."""
    yield {"basename": "grade", "name": None, "doc": task_grade.__doc__}
    yield from graph().stage_tasks("grade")


def task_score() -> Iterator[dict[str, Any]]:
    """Compute every metric of each (system, case)."""
    yield {"basename": "score", "name": None, "doc": task_score.__doc__}
    yield from graph().stage_tasks("score")


def audit_task(g: Graph) -> dict[str, Any] | None:
    """The doit task `audit:run` (after every grade task) when judge.audit asks for something, else None."""

    cfg = g.cfg
    if cfg.judge.audit is None or not cfg.judge.audit.active:
        return None
    deps = []
    for system, case in g.pairs:
        if suite_kind(case.kind).judging.audited:
            path = g.path("generate", system.name, case)
            if selected(case.key, g.globs) or Path(path).exists():  # unselected cases have no generate task
                deps.append(path)
    deps.append(slices.write_slice(cfg, "audit", audit_code.audit_slice(cfg)))
    task = {"name": "run", "actions": [(run_audit_task, [g.config])], "file_dep": deps,
            "targets": [str(audit_code.audit_path(cfg))], "task_dep": ["grade"], "clean": True, "io": NO_CAPTURE}
    if audit_code.retry_marker(cfg).exists():
        task["uptodate"] = [False]
    return task


def task_audit() -> Iterator[dict[str, Any]]:
    """judge.audit: ask the judge again on a seeded sample (repeats' spread, pairwise order flips)."""
    yield {"basename": "audit", "name": None, "doc": task_audit.__doc__}
    task = audit_task(graph())
    if task is not None:
        yield task


def task_summarize() -> dict[str, Any]:
    """Aggregate scores into site/<release>/report.json (intervals, paired comparisons, regressions)."""
    g = graph()

    deps = g.score_files() + g.health_files() + [g.slice_files["summarize"],
                              slices.write_slice(g.cfg, "input-notes", {"notes": g.loaded.project.input_notes()})]
    prev = site_code.previous_report_path(g.cfg.site_path, g.cfg.release)
    if prev is not None and prev.exists():
        deps.append(str(prev))

    audit = g.cfg.judge.audit is not None and g.cfg.judge.audit.active  # its file, once the audit task wrote it
    deps += [slices.write_slice(g.cfg, "summarize-audit", {"audit": audit})] + ([str(audit_code.audit_path(g.cfg))] if audit else [])

    labels = calibration_code.label_inputs(g.cfg, g.loaded.project)  # people's labels: a label edit re-summarizes, never re-grades
    deps += labels + [slices.write_slice(g.cfg, "summarize-labels", {"files": labels})]
    report = g.cfg.site_path / g.cfg.release / "report.json"
    return {"actions": [(run_summarize, [g.config])], "file_dep": deps, "targets": [str(report)],
            "doc": task_summarize.__doc__, "clean": True, "io": NO_CAPTURE}


def _template_files(g: Graph) -> list[str]:
    tdir = site_code.templates_dir(g.cfg.resolve(g.cfg.templates_dir) if g.cfg.templates_dir else None) / "site"
    return sorted(str(p) for p in tdir.rglob("*") if p.is_file())


def task_render() -> Iterator[dict[str, Any]]:
    """Render the HTML pages of this release (and re-render older releases when templates change)."""
    g = graph()
    yield {"basename": "render", "name": None, "doc": task_render.__doc__}

    templates = _template_files(g)
    site = g.cfg.site_path
    releases = sorted(set(site_code.list_releases(site)) | {g.cfg.release})
    for release in releases:
        report = site / release / "report.json"
        yield {"name": release, "actions": [(run_render, [g.config, release])],
               "file_dep": [str(report), slices.write_slice(g.cfg, f"render-{release}", slices.render_slice(g.cfg, release))]
               + templates, "targets": [str(site / release / "index.html")],
               "verbosity": 2, "io": NO_CAPTURE}
