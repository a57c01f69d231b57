"""The decision summary at the top of a release page: per suite and headline metric, each system
better / worse / no detectable difference / not testable (evalkit.report.verdict) against the baseline and
against the previous release, with the power figures, at the level Holm held each comparison to, that say
what a comparison that found nothing could have detected."""

from __future__ import annotations

from typing import Any, Callable, Literal

from evalkit.metrics.registry import METRICS, MetricInfo
from evalkit.power import Detectability
from evalkit.report.models import CaseRow, Decision, DecisionSummary, Report, ResourceChange, SuiteSummary
from evalkit.report.verdict import detectability as at_level
from evalkit.report.verdict import settle, verdict
from evalkit.stats import ALPHA, PairedComparison, compare_binary, compare_scores
from evalkit.total_change import TotalChange, total_change

Call = Callable[..., Any]
"""summarize's cached call: call(model, fn, *args, **kwargs)."""


def decision_metric(info: MetricInfo | None) -> bool:
    """A headline metric with a direction that is compared case by case (not a total, not time)."""
    return (info is not None and info.headline and info.higher_is_better is not None and info.aggregate != "sum"
            and info.name != "wall_s")


def detectability(call: Call, c: PairedComparison, detect_difference: float | None) -> Detectability:
    """Power figures of a comparison that found nothing, at the level Holm held it to (sized for the
    configured or the observed difference)."""
    target: float | None
    source: str | None
    if detect_difference:
        target, source = float(detect_difference), "configured"
    else:
        d = c.difference.value
        target, source = (abs(d), "observed") if d else (None, None)
    return at_level(call, c, target, source)


def _decide(call: Call, suite: str, against: Literal["baseline", "previous"], reference: str, c: PairedComparison,
            detect_difference: float | None) -> Decision:
    v = c.verdict or verdict(c)
    return Decision(suite=suite, system=c.system, against=against, reference=reference, metric=c.metric, verdict=v,
                    comparison=c, identical=identical(c),
                    detectability=None if v in ("better", "worse") else detectability(call, c, detect_difference))


def identical(c: PairedComparison) -> bool:
    """No paired case differs: no discordant pair (binary) or every difference 0 (scores)."""
    if c.difference.value != 0:
        return False
    if c.kind == "binary":
        return c.discordant is not None and sum(c.discordant) == 0
    return c.n_pairs < 2 or c.sd_difference == 0


def against_previous(call: Call, suite: SuiteSummary, rows: list[CaseRow], prev: Report, seed: int,
                     skip: frozenset[str] = frozenset()) -> list[PairedComparison]:
    """Each system of the suite against itself in ``prev`` on the cases both releases scored (not
    excluded in either), one Holm family per system over the suite's decision metrics (of the same size for
    every system: see comparisons.compare_suite)."""
    before = {r.case_id: r for r in prev.cases if r.suite == suite.name}
    metrics = [m for m in suite.metrics if decision_metric(METRICS.get(m))]
    out: list[PairedComparison] = []
    groups: list[list[PairedComparison]] = []
    for system in suite.systems:
        if system in skip:
            continue
        pairs = []
        for row in rows:
            old = before.get(row.case_id)
            cell = row.systems.get(system)
            old_cell = old.systems.get(system) if old is not None else None
            if cell is None or old_cell is None or cell.excluded or old_cell.excluded:
                continue
            pairs.append((old_cell.metrics, cell.metrics))
        group = []
        for name in metrics:
            vals = [(x, y) for a, b in pairs if (x := a.get(name)) is not None and (y := b.get(name)) is not None]
            if not vals:
                continue
            old_v, new_v = [float(a) for a, _ in vals], [float(b) for _, b in vals]
            if METRICS[name].binary:
                group.append(call(PairedComparison, compare_binary, name, prev.release, system,
                                  [v >= 0.5 for v in old_v], [v >= 0.5 for v in new_v], seed=seed))
            else:
                group.append(call(PairedComparison, compare_scores, name, prev.release, system, old_v, new_v, seed=seed))
        groups.append(group)
    # the same family size for every system of the suite: each decision metric some system has a p-value on
    family = len({c.metric for g in groups for c in g if c.p_value is not None})
    for group in groups:
        out.extend(settle(group, call, family=family))
    return out


RESOURCES: tuple[Literal["cost_usd", "wall_s"], ...] = ("cost_usd", "wall_s")
"""The totals the verdict line gives against the previous release: cost, then time."""


def resource_changes(call: Call, suite: SuiteSummary, rows: list[CaseRow], prev: Report, seed: int,
                     skip: frozenset[str] = frozenset()) -> list[ResourceChange]:
    """Cost and time of the suite against the previous release: per case, the metric summed over the systems
    that have it in both releases (not excluded in either, canaries in ``skip`` left out); the change of the
    totals over those cases with a paired bootstrap interval (evalkit.total_change)."""
    before = {r.case_id: r for r in prev.cases if r.suite == suite.name}
    out = []
    for metric in RESOURCES:
        old_v: list[float] = []
        new_v: list[float] = []
        systems: set[str] = set()
        for row in rows:
            old = before.get(row.case_id)
            if old is None:
                continue
            pair = [0.0, 0.0]
            seen = False
            for system, cell in row.systems.items():
                old_cell = old.systems.get(system)
                if system in skip or old_cell is None or cell.excluded or old_cell.excluded:
                    continue
                a, b = old_cell.metrics.get(metric), cell.metrics.get(metric)
                if a is None or b is None:
                    continue
                pair[0] += float(a)
                pair[1] += float(b)
                systems.add(system)
                seen = True
            if seen:
                old_v.append(pair[0])
                new_v.append(pair[1])
        if old_v:
            change = call(TotalChange, total_change, old_v, new_v, seed=seed)
            out.append(ResourceChange(suite=suite.name, metric=metric, reference=prev.release,
                                      systems=sorted(systems), change=change))
    return out


def decision_summary(call: Call, suites: list[SuiteSummary], rows: list[CaseRow], prev: Report | None,
                     seed: int, detect_difference: float | None,
                     canaries: frozenset[str] = frozenset()) -> DecisionSummary:
    """Suite by suite: the baseline comparisons of the suite's decision metrics, then the previous release (each
    system against itself there; canaries, which do no work in either release, are not decisions), and the
    suite's cost and time against the previous release (`resource_changes`)."""
    decisions: list[Decision] = []
    changes: list[ResourceChange] = []
    for suite in suites:
        for c in suite.comparisons:
            if decision_metric(METRICS.get(c.metric)):
                decisions.append(_decide(call, suite.name, "baseline", c.baseline, c, detect_difference))
        if prev is not None:
            suite_rows = [r for r in rows if r.suite == suite.name]
            for c in against_previous(call, suite, suite_rows, prev, seed, canaries):
                decisions.append(_decide(call, suite.name, "previous", prev.release, c, detect_difference))
            changes.extend(resource_changes(call, suite, suite_rows, prev, seed, canaries))
    return DecisionSummary(previous_release=prev.release if prev else None, detect_difference=detect_difference,
                           decisions=decisions, changes=changes)


__all__ = ["ALPHA", "decision_metric", "decision_summary", "resource_changes", "verdict"]
