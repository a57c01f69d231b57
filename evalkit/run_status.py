"""The exit status of `evalkit run` beyond doit's own: 3 when every case of some system failed.

A system whose every attempted case ended in its own failure (its command failed or timed out,
its output was unusable) produced nothing to evaluate: the report is written, but the run must not
look like a success to CI. Cases left out of a system's count: broken cases (an input problem,
reported as such), cases it did not attempt (a recording without that case) and evalkit's own
infrastructure errors (retried next run).
"""

from __future__ import annotations

from pathlib import Path

from evalkit.models import Model

ALL_FAILED_EXIT = 3
VALIDITY_ALARM_EXIT = 5
"""`evalkit run --strict`: a headline metric lets a canary score at or above gold or a real system."""
SYSTEM_FAILURES = ("error", "timeout")


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
    from evalkit.report.models import Report

    if not report_path.exists():
        return []
    report = Report.model_validate_json(report_path.read_bytes())
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


def validity_alarms(report_path: Path) -> dict[str, str]:
    """Suite -> metric-validity alarm of a release's report.json ({} without a report or an alarm)."""
    from evalkit.report.models import Report

    if not report_path.exists():
        return {}
    return Report.model_validate_json(report_path.read_bytes()).validity_alarms
