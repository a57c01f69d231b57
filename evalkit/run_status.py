"""The exit status of `evalkit run`: one code per outcome (the README's table), and what decides them.

    0 done            every counted (system, case) pair evaluated, nothing left to retry
    1 doit failure    doit itself or a task failed (other than below)
    2 bad input       check's problems, file:line (before anything runs); or every case broken
    3 all failed      every counted case of some system failed; or nothing was evaluated
    4 evalkit bug     a stage raised (status `bug`; evalkit.bugs)
    5 infra errors    infrastructure errors remain (judge API, sandbox, repository not mapped...): rerun
    6 environment     the machine failed the run: disk full, read-only, out of memory, no Docker daemon
    7 locked          another run of the project holds its lock (evalkit.runlock; `--wait` waits)

A system whose every attempted case ended in its own failure (its command failed or timed out,
its output was unusable) produced nothing to evaluate: the report is written, but the run must not
look like a success to CI. Cases left out of a system's count: broken cases (an input problem,
reported as such), cases it did not attempt (a recording without that case) and evalkit's own
infrastructure errors (retried next run).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Set as AbstractSet
from pathlib import Path
from typing import Any

from evalkit.artifacts import ARTIFACT_FILES, marked_for_retry
from evalkit.bugs import BUG_EXIT, describe_bugs
from evalkit.models import Model
from evalkit.report.models import read_report

DONE_EXIT = 0
DOIT_FAILED_EXIT = 1
BAD_INPUT_EXIT = 2
ALL_FAILED_EXIT = 3
INFRA_EXIT = 5
ENVIRONMENT_EXIT = 6
VALIDITY_ALARM_EXIT = 8
"""`evalkit run --strict`: a headline metric lets a canary score at or above gold or a real system."""
SYSTEM_FAILURES = ("error", "timeout")
EVALUATED = ("ok", "error", "timeout")
"""Cell statuses that are a result about the system (its answer graded, or its own failure)."""
NO_DOCKER = re.compile(r"no Docker daemon|Cannot connect to the Docker daemon|Docker daemon (?:is )?not "
                       r"(?:running|reachable|answering)|docker daemon .*(?:refused|unavailable)", re.IGNORECASE)
"""Infrastructure errors that say the machine has no Docker to run sandboxes: an environment failure."""


class FailedSystem(Model):
    """A system every counted case of which failed."""

    system: str
    """System name."""
    cases: int
    """Cases counted (attempted, not broken, no infrastructure error): every one failed."""
    statuses: dict[str, int]
    """Failure status -> cases."""
    first_reason: str
    """The reason given by the first failed case (suite/case: reason)."""


def failed_systems(report_path: Path) -> list[FailedSystem]:
    """Systems whose every counted case in a release's report.json failed; [] without a report."""

    if not report_path.exists():
        return []
    report = read_report(report_path)
    counted: dict[str, int] = {}
    failed: dict[str, dict[str, int]] = {}
    first: dict[str, str] = {}
    for row in report.cases:
        for name, cell in row.systems.items():
            if cell.excluded in ("broken", "not_attempted") or cell.status in ("infra_error", "not_attempted", "broken", "bug"):
                continue
            counted[name] = counted.get(name, 0) + 1
            if cell.status in SYSTEM_FAILURES:
                by = failed.setdefault(name, {})
                by[cell.status] = by.get(cell.status, 0) + 1
                first.setdefault(name, f"{row.suite}/{row.case_id}: {cell.reason}")
    out = []
    for s in report.systems:
        n = counted.get(s.name, 0)
        if n and sum(failed.get(s.name, {}).values()) == n:
            out.append(FailedSystem(system=s.name, cases=n, statuses=dict(sorted(failed[s.name].items())),
                                    first_reason=first[s.name][:300]))
    return out


def describe(failed: list[FailedSystem]) -> list[str]:
    """One line per failed system, for stderr."""
    lines = []
    for f in failed:
        counts = ", ".join(f"{k} {v}" for k, v in f.statuses.items())
        lines.append(f"every case of system {f.system!r} failed ({f.cases} of {f.cases}: {counts}); "
                     f"first: {f.first_reason}")
    return lines


class RunCells(Model):
    """What a release's report.json says about its (system, case) cells, for the exit status."""

    total: int = 0
    """Cells of the report."""
    evaluated: int = 0
    """Cells with a result about the system (ok, or the system's own error or timeout)."""
    broken: int = 0
    """Cells of broken cases (bad input)."""
    infra: int = 0
    """Cells whose last run ended in an infrastructure error (redone by the next run)."""
    infra_first: str = ""
    """The first infrastructure error: suite/case system: reason."""
    no_docker: int = 0
    """Infrastructure errors saying no Docker daemon answered."""
    checks: int = 0
    """Cases whose validation or health check ended in an infrastructure error (redone by the next run)."""
    checks_first: str = ""
    """The first of them: suite/case check: reason."""
    checks_no_docker: int = 0
    """Those saying no Docker daemon answered."""


def _retry_reason(raw: Any) -> str | None:
    """Why an artifact marked for retry is still an infrastructure error (None: it holds a usable
    result, e.g. the fallback judge's verdict while the primary is asked again)."""
    if not isinstance(raw, dict):
        return None
    if raw.get("status") == "infra_error":
        return str(raw.get("reason") or "infrastructure error")
    for part in ("rubric", "judge"):
        judged = raw.get(part)
        if isinstance(judged, dict) and judged.get("status") == "infra_error":
            return f"judge: {judged.get('error') or 'infrastructure error'}"
    return None


def pending_retries(work: Path, pairs: Iterable[tuple[str, str, str]],
                    unmarked: AbstractSet[str] = frozenset()) -> dict[tuple[str, str], str]:
    """(suite/case, system) -> 'stage: reason' for this run's pairs whose artifacts are marked for retry
    (`.retry`: an infrastructure error, a judge API failure), ``pairs`` as (system, suite, case id).

    ``unmarked``: artifacts known to have no marker without asking the file system (`Plan.left_out`: the targets of
    tasks a limited run left out, which had none and which no task of the run writes)."""
    out: dict[tuple[str, str], str] = {}
    files = [(stage, ARTIFACT_FILES[stage]) for stage in ("generate", "execute", "grade", "score")]
    for system, suite, case_id in pairs:
        folder = f"{work}/artifacts/{system}/{suite}/{case_id}/"  # artifact_path's, as plain strings: 16,000 of them
        for stage, name in files:
            path = f"{folder}{name}"
            if path in unmarked or not marked_for_retry(path):
                continue
            try:
                reason = _retry_reason(json.loads(Path(path).read_text(encoding="utf-8")))
            except (OSError, ValueError):
                reason = None
            if reason is not None:
                out.setdefault((f"{suite}/{case_id}", system), f"{stage}: {reason}")
                break
    return out


CASE_CHECKS = {"validation": "status", "health": "strength"}
"""A case's own checks (evalkit.stages.validate, evalkit.stages.health): folder under the work folder -> the
field that holds ``infra_error`` when the check could not run."""


def pending_case_checks(work: Path, cases: Iterable[tuple[str, str]],
                        unmarked: AbstractSet[str] = frozenset()) -> dict[str, str]:
    """suite/case -> 'check: reason' for this run's cases (``cases`` as (suite, case id)) whose validation or
    health ended in an infrastructure error (marked for retry). Such a case is not known valid or healthy, so
    the run must not look done: it counts like a pair's infrastructure error."""
    out: dict[str, str] = {}
    for suite, case_id in cases:
        for check, field in CASE_CHECKS.items():
            path = f"{work}/{check}/{suite}/{case_id}.json"  # validation_path's and health_path's, as plain strings
            if path in unmarked or not marked_for_retry(path):
                continue
            try:
                raw = json.loads(Path(path).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(raw, dict) and raw.get(field) == "infra_error":
                out.setdefault(f"{suite}/{case_id}", f"{check}: {raw.get('reason') or 'infrastructure error'}")
    return out


def run_cells(report_path: Path, retries: dict[tuple[str, str], str] | None = None,
              checks: dict[str, str] | None = None) -> RunCells | None:
    """The cells of a release's report.json by outcome; None without a report. ``retries``
    (`pending_retries`): pairs whose artifacts are marked for retry, counted as infrastructure errors
    too (a judge call that failed leaves the cell ok without a verdict). ``checks`` (`pending_case_checks`):
    cases whose validation or health could not run, counted in `RunCells.checks`."""

    if not report_path.exists():
        return None
    report = read_report(report_path)
    retries = retries or {}
    out = RunCells()
    infra: dict[tuple[str, str], str] = {}
    for row in report.cases:
        for name, cell in sorted(row.systems.items()):
            out.total += 1
            key = (f"{row.suite}/{row.case_id}", name)
            if cell.excluded == "broken" or cell.status == "broken":
                out.broken += 1
                continue
            if cell.status == "infra_error":
                infra[key] = cell.reason
            elif key in retries:
                infra[key] = retries[key]
            if cell.status in EVALUATED:
                out.evaluated += 1
    out.infra = len(infra)
    out.no_docker = sum(bool(NO_DOCKER.search(r)) for r in infra.values())
    if infra:
        (where, system), reason = next(iter(infra.items()))
        out.infra_first = f"{where} {system}: {reason}"[:300]
    checks = checks or {}
    out.checks = len(checks)
    out.checks_no_docker = sum(bool(NO_DOCKER.search(r)) for r in checks.values())
    if checks:
        where, reason = min(checks.items())
        out.checks_first = f"{where} {reason}"[:300]
    return out


def after_run(cells: RunCells | None) -> tuple[int, list[str]]:
    """The exit status of a run doit completed, from its report (after 3 and 4, which the caller decides
    first), and the lines saying why: 6 when the infrastructure errors (of pairs, and of cases' validation or
    health checks) are all "no Docker daemon", 5 when other infrastructure errors remain, 2 when every case is
    broken, 3 when nothing was evaluated."""
    if cells is None:
        return ALL_FAILED_EXIT, ["no report was written: nothing was evaluated"]
    if cells.infra + cells.checks and cells.no_docker + cells.checks_no_docker == cells.infra + cells.checks:
        said = [f"{cells.infra} (system, case) pair(s)"] if cells.infra else []
        said += [f"the checks of {cells.checks} case(s)"] if cells.checks else []
        first = cells.infra_first or cells.checks_first
        return ENVIRONMENT_EXIT, [f"environment failure: no Docker daemon for {' and '.join(said)}; first: {first}"]
    lines = []
    if cells.infra:
        lines.append(f"{cells.infra} (system, case) pair(s) ended in an infrastructure error (redone by the next "
                     f"run); first: {cells.infra_first}")
    if cells.checks:
        lines.append(f"{cells.checks} case(s) whose validation or health check ended in an infrastructure error "
                     f"(not counted healthy; redone by the next run); first: {cells.checks_first}")
    if lines:
        return INFRA_EXIT, lines
    if cells.evaluated == 0:
        if cells.total and cells.broken == cells.total:
            return BAD_INPUT_EXIT, [f"nothing was evaluated: every case is broken ({cells.total} pair(s)); "
                                    f"`evalkit check` names each problem"]
        return ALL_FAILED_EXIT, [f"nothing was evaluated ({cells.total} pair(s), {cells.broken} broken, none with a "
                                 f"result)"]
    return DONE_EXIT, []
def validity_alarms(report_path: Path) -> dict[str, str]:
    """Suite -> metric-validity alarm of a release's report.json ({} without a report or an alarm)."""

    if not report_path.exists():
        return {}
    return read_report(report_path).validity_alarms


def environment_verdict(failures: list[str]) -> tuple[int, list[str]]:
    """Exit 6 and its lines when the machine failed the run (evalkit.envfail's records: disk full, ...), whatever doit
    made of it; (0, []) when it did not."""
    if not failures:
        return DONE_EXIT, []
    return ENVIRONMENT_EXIT, [*(f"environment failure: {line}" for line in failures[:5]),
                              f"exit status {ENVIRONMENT_EXIT}: the machine failed the run ({len(failures)} task(s)); "
                              "free the resource and run again"]


def verdict(work: Path, report_path: Path, pairs: Iterable[tuple[str, str, str]], strict: bool = False,
            whole_run: bool = True, retries: dict[tuple[str, str], str] | None = None,
            unmarked: AbstractSet[str] = frozenset()) -> tuple[int, list[str]]:
    """The exit status of a run whose doit run completed, and one line per cause, the status's own line last: the
    same for `evalkit run` and for plain `doit`'s last task (evalkit.tasks.outcome_task). ``pairs`` as (system,
    suite, case id); ``strict``: a metric-validity alarm fails the run; ``whole_run``: False when only some tasks
    ran (`evalkit run generate`), so the report need not be this run's and only failures and bugs count;
    ``retries``: `pending_retries` of the pairs when the caller has it; ``unmarked``: see `pending_retries`. The machine's failures (evalkit.envfail) and doit's own are decided before, by the caller."""
    pairs = list(pairs)
    failed = failed_systems(report_path)  # a system that failed on every case fails the run (exit 3)
    lines = describe(failed)
    if failed:
        return ALL_FAILED_EXIT, [*lines, f"exit status {ALL_FAILED_EXIT}: {len(failed)} system(s) failed on every case"]
    found = describe_bugs(work, {(system, f"{suite}/{case_id}") for system, suite, case_id in pairs})
    if found:
        return BUG_EXIT, [*lines, *found, f"exit status {BUG_EXIT}: evalkit bugs (status bug) are recorded; please "
                                          "report them"]
    alarms = validity_alarms(report_path)
    lines += [f"metric-validity alarm in suite {suite}: {alarm}" for suite, alarm in alarms.items()]
    if alarms and strict:
        return VALIDITY_ALARM_EXIT, [*lines, f"exit status {VALIDITY_ALARM_EXIT}: a headline metric ranks a canary at "
                                             "or above gold or a real system (--strict)"]
    if not whole_run:
        return DONE_EXIT, lines
    retries = pending_retries(work, pairs, unmarked) if retries is None else retries
    checks = pending_case_checks(work, {(suite, case_id) for _, suite, case_id in pairs}, unmarked)
    status, said = after_run(run_cells(report_path, retries, checks))
    return status, [*lines, *said, *([f"exit status {status}"] if status else [])]
