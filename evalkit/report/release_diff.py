"""What changed per case since the previous release: its report.json and the per-system diff."""

from __future__ import annotations

import json

from evalkit.config import Config
from evalkit.metrics.registry import METRICS
from evalkit.report.models import CaseRow, Change, ReleaseDiff, Report, SystemDiff
from evalkit.report.site import previous_report_path

EPS = 1e-9
_UNSEEN = object()


def previous_report(cfg: Config) -> Report | None:
    """The release before this one in site/manifest.json (or the newest other release present)."""
    path = previous_report_path(cfg.site_path, cfg.release)
    if path is None:
        return None
    try:
        return Report.model_validate(json.loads(path.read_text(encoding="utf-8")))
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


def release_diff(prev: Report | None, cases: list[CaseRow]) -> ReleaseDiff:
    """Headline metrics of each (case, system) that got better or worse since ``prev`` (timing left out)."""
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
    return ReleaseDiff(previous_release=prev.release, systems=dict(sorted(diffs.items())))
