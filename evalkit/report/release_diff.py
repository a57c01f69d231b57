"""What changed per case since the previous release: its report.json and the per-system diff."""

from __future__ import annotations

import json
from pathlib import Path

from evalkit.config import Config
from evalkit.fsutil import digest, file_digest
from evalkit.metrics.registry import METRICS
from evalkit.report.models import CaseRow, Change, ReleaseDiff, Report, SystemDiff, read_report
from evalkit.report.site import previous_report_path

EPS = 1e-9
_UNSEEN = object()


def previous_report(cfg: Config) -> tuple[Report, str] | None:
    """The release before this one in site/manifest.json (or the newest other release present), and the sha256 of its
    report.json (the diff records it: `current_diff`)."""
    path = previous_report_path(cfg.site_path, cfg.release)
    if path is None:
        return None
    try:
        data = path.read_bytes()
        return Report.model_validate(json.loads(data)), digest(data)
    except (ValueError, OSError):
        return None


def _higher_is_better(name: str) -> bool | None:
    """Whether a higher value of metric ``name`` is better; None for a metric the diff leaves out (not a registered
    headline metric with a direction, a total, or timing: its noise is not a regression)."""
    info = METRICS.get(name)
    if info is None or not info.headline or info.higher_is_better is None or info.aggregate == "sum":
        return None
    if name == "wall_s":
        return None
    return info.higher_is_better


def release_diff(prev: Report | None, cases: list[CaseRow], prev_digest: str | None = None) -> ReleaseDiff:
    """Headline metrics of each (case, system) that got better or worse since ``prev`` (timing left out).
    ``prev_digest``: the sha256 of the report.json ``prev`` was read from, recorded in the diff."""
    if prev is None:
        return ReleaseDiff()
    before = {(r.suite, r.case_id): r for r in prev.cases}
    diffs: dict[str, SystemDiff] = {}
    better_when: dict[str, object] = {}  # each metric tested once, not once per (case, system, metric)
    for row in cases:
        old = before.get((row.suite, row.case_id))
        if old is None:
            continue
        for system, cell in row.systems.items():
            old_cell = old.systems.get(system)
            if old_cell is None:
                continue
            d = diffs.get(system)
            if d is None:
                d = diffs[system] = SystemDiff()
            old_metrics = old_cell.metrics
            for name, after in cell.metrics.items():
                b = old_metrics.get(name)
                if b is None or after is None or abs(after - b) <= EPS:  # most metrics of most cases: no move
                    continue
                higher = better_when.get(name, _UNSEEN)
                if higher is _UNSEEN:
                    higher = better_when[name] = _higher_is_better(name)
                if higher is None:
                    continue
                (d.improved if (after > b) == higher else d.regressed).append(
                    Change(suite=row.suite, case_id=row.case_id, metric=name, before=b, after=after))
    return ReleaseDiff(previous_release=prev.release, previous_digest=prev_digest, systems=dict(sorted(diffs.items())))


def current_diff(site: Path, report: Report) -> ReleaseDiff:
    """``report``'s diff against its previous release as that release's report.json is now: ``report.diff`` while the
    file is the one summarize compared with (same sha256), else computed again (the previous release was summarized
    again since, or the diff predates the digest). The regressions page and the comparison page with the previous
    release both show this one. A previous release not on ``site`` leaves ``report.diff`` as it is."""
    diff = report.diff
    if not diff.previous_release:
        return diff
    path = Path(site) / diff.previous_release / "report.json"
    try:
        now = file_digest(path)
        if diff.previous_digest == now:
            return diff
        return release_diff(read_report(path), report.cases, now)
    except (OSError, ValueError):  # gone, or not a report: what summarize found stands
        return diff
