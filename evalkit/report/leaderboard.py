"""Leaderboards: per suite, the systems that ran it ranked by the kind's headline metric.

The metric is the registry's (`evalkit.metrics.registry.LEADERBOARD_METRICS`). Systems with the
same value share a rank (1, 2, 2, 4) and are listed by name; systems without a value come last,
unranked. Cost per resolved case is shown where the headline metric is a pass/fail rate (patch:
resolved, e2e: tests all pass). A cross-suite overview exists only for systems that ran the very
same cases in every suite; otherwise it is left out and the page says why.
"""

from __future__ import annotations

from collections import defaultdict

from evalkit.metrics.registry import LEADERBOARD_METRICS, METRICS, MetricInfo, leaderboard_metric
from evalkit.models import Model
from evalkit.report.models import Aggregate, CaseRow, Coverage, SuiteSummary, TieGroups


class Entry(Model):
    """One system on one suite's leaderboard."""

    system: str
    """System name."""
    rank: int | None
    """1 for the best; systems with equal values share a rank; None without a value."""
    value: float | None
    """The headline metric (rate or mean over the attempted cases)."""
    low: float | None = None
    """Lower end of its 95% interval."""
    high: float | None = None
    """Upper end of its 95% interval."""
    n: int = 0
    """Cases the value is computed from."""
    method: str = ""
    """How the interval was made (the aggregate's method; "degenerate: all values equal": no interval)."""
    approximate: bool = False
    """The interval is approximate (a bootstrap from fewer than evalkit.stats.APPROXIMATE_BELOW values)."""
    attempted: int = 0
    """Cases with an output of the system."""
    cases: int = 0
    """Cases of the suite the system ran on."""
    cost_usd: float | None = None
    """What the system reported spending on the suite."""
    cost_per_case: float | None = None
    """cost_usd divided by the attempted cases."""
    resolved: int | None = None
    """Cases resolved (headline metric pass/fail only)."""
    cost_per_resolved: float | None = None
    """cost_usd divided by the resolved cases (None when none was resolved or there is no such notion)."""
    baseline: bool = False
    """The system the suite's comparisons use as baseline."""
    tie_group: str = ""
    """Its tie group letters (evalkit.report.ties): systems sharing a letter are not told apart by a paired
    test; "a" is the leader's group. Empty without a value or tie groups."""


class Leaderboard(Model):
    """One suite's systems, best first."""

    suite: str
    """Suite name."""
    kind: str
    """Suite kind."""
    n_cases: int
    """Cases in the suite."""
    metric: str | None
    """The metric ranked by (None when the suite has none with values)."""
    has_resolved: bool
    """The metric is a pass/fail rate, so cost per resolved case is shown."""
    entries: list[Entry]
    """Ranked entries, unranked ones last."""
    tie_note: str = ""
    """What the tie groups rest on (the test, Holm) and any not-testable ties; empty without tie groups."""
    passed_over: dict[str, str] = {}
    """Headline metrics declared before ``metric`` that have values but are uncalibrated (judge fields
    below judge.calibration.min_kappa): metric -> why; a suite is never ranked by one."""


class OverviewGroup(Model):
    """Systems that ran exactly the same cases, across two or more suites."""

    systems: list[str]
    """Systems, best mean rank first."""
    suites: list[str]
    """Suites they ran."""
    ranks: dict[str, dict[str, int | None]]
    """System -> suite -> rank among the group."""
    values: dict[str, dict[str, float | None]]
    """System -> suite -> the suite's headline metric."""
    mean_rank: dict[str, float | None]
    """System -> mean of its ranks (None when it has a suite without a value)."""


def sort_key(value: float | None, higher_is_better: bool | None, name: str) -> tuple[bool, float, str]:
    """Missing values last, then best first in the metric's direction, then by name."""
    if value is None:
        return (True, 0.0, name)
    return (False, -value if higher_is_better is not False else value, name)


def rank(values: dict[str, float | None], higher_is_better: bool | None) -> list[tuple[str, int | None]]:
    """(name, rank) best first; equal values share the rank of the first of them (1, 2, 2, 4)."""
    order = sorted(values, key=lambda n: sort_key(values[n], higher_is_better, n))
    out: list[tuple[str, int | None]] = []
    prev: float | None = None
    current = 0
    for i, name in enumerate(order, 1):
        v = values[name]
        if v is None:
            out.append((name, None))
            continue
        if prev is None or round(v, 12) != round(prev, 12):
            current = i
        prev = v
        out.append((name, current))
    return out


def _coverage(suite: SuiteSummary, rows: list[CaseRow], system: str) -> Coverage:
    cov = suite.coverage.get(system)
    if cov is not None:
        return cov
    cells = [r.systems[system] for r in rows if system in r.systems]
    return Coverage(attempted=sum(1 for c in cells if c.status != "not_attempted"), cases=len(cells))


def suite_leaderboard(suite: SuiteSummary, rows: list[CaseRow], metric_info: dict[str, MetricInfo],
                      baseline: str | None = None, ties: TieGroups | None = None) -> Leaderboard:
    """The suite's systems ranked by its kind's headline metric, with its tie groups when given (report.json's
    tie_groups, computed by summarize on the same metric)."""
    present = {m for aggs in suite.systems.values() for m, a in aggs.items() if a.value is not None}
    uncalibrated = {m: i.uncalibrated for m in present if (i := metric_info.get(m)) is not None and i.uncalibrated}
    metric = leaderboard_metric(suite.kind, present - set(uncalibrated))
    info = metric_info.get(metric) or METRICS.get(metric) if metric else None
    has_resolved = bool(info and info.binary and info.higher_is_better is not False)
    aggs_of: dict[str, Aggregate | None] = {s: aggs.get(metric) if metric else None for s, aggs in suite.systems.items()}
    ranked = rank({s: a.value if a else None for s, a in aggs_of.items()},
                  info.higher_is_better if info else True)
    entries = []
    for name, r in ranked:
        a = aggs_of[name]
        cov = _coverage(suite, rows, name)
        cost_agg = suite.systems[name].get("cost_usd")
        cost = cost_agg.value if cost_agg else None
        resolved = round(a.value * a.n) if has_resolved and a and a.value is not None else None
        entries.append(Entry(
            system=name, rank=r, value=a.value if a else None, low=a.low if a else None, high=a.high if a else None,
            n=a.n if a else 0, method=a.method if a else "", approximate=a.approximate if a else False,
            attempted=cov.attempted, cases=cov.cases, cost_usd=cost,
            cost_per_case=cost / cov.attempted if cost is not None and cov.attempted else None,
            resolved=resolved, cost_per_resolved=cost / resolved if cost is not None and resolved else None,
            baseline=name == baseline,
            tie_group=ties.letters.get(name, "") if ties is not None and ties.metric == metric else ""))
    declared = LEADERBOARD_METRICS.get(suite.kind, ())
    before = declared[:declared.index(metric)] if metric in declared else declared
    tie_note = ""
    if ties is not None and ties.metric == metric and ties.letters:
        tie_note = (f"Systems sharing a letter are not told apart: no significant paired difference ({ties.test}, "
                    f"same cases, Holm over each group leader's comparisons, p < 0.05); \"a\" is the leader's "
                    f"group.{' ' + ties.note[:1].upper() + ties.note[1:] + '.' if ties.note else ''}")
    return Leaderboard(suite=suite.name, kind=suite.kind, n_cases=suite.n_cases, metric=metric,
                       has_resolved=has_resolved, entries=entries, tie_note=tie_note,
                       passed_over={m: uncalibrated[m] for m in before if m in uncalibrated})


def overview(boards: list[Leaderboard], rows: list[CaseRow],
             metric_info: dict[str, MetricInfo]) -> tuple[list[OverviewGroup], str]:
    """Cross-suite groups of systems that ran the very same cases, and a note when there is none."""
    if len({b.suite for b in boards}) < 2:
        return [], ""
    case_sets: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for r in rows:
        for name in r.systems:
            case_sets[name].add((r.suite, r.case_id))
    by_set: dict[frozenset[tuple[str, str]], list[str]] = defaultdict(list)
    for name, keys in case_sets.items():
        by_set[frozenset(keys)].append(name)
    groups = []
    for keys, names in by_set.items():
        suites = sorted({s for s, _ in keys})
        if len(names) < 2 or len(suites) < 2:
            continue
        ranks: dict[str, dict[str, int | None]] = {n: {} for n in names}
        values: dict[str, dict[str, float | None]] = {n: {} for n in names}
        for b in boards:
            if b.suite not in suites:
                continue
            vals = {e.system: e.value for e in b.entries if e.system in names}
            info = metric_info.get(b.metric or "") or METRICS.get(b.metric or "")
            for n, r in rank(vals, info.higher_is_better if info else True):
                ranks[n][b.suite] = r
                values[n][b.suite] = vals.get(n)
        mean = {n: (sum(v for v in ranks[n].values() if v is not None) / len(suites)
                    if all(ranks[n].get(s) is not None for s in suites) else None) for n in names}
        order = sorted(names, key=lambda n: sort_key(mean[n], False, n))
        groups.append(OverviewGroup(systems=order, suites=suites, ranks=ranks, values=values, mean_rank=mean))
    note = "" if groups else ("No cross-suite overview: no two systems ran the same cases in two or more suites, "
                              "so their numbers are not comparable across suites; see each suite's leaderboard.")
    return groups, note
