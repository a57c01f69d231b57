"""Leaderboards: per suite, the systems that ran it ranked by the kind's headline metric.

The metric is the first of the registry's (`evalkit.metrics.registry.LEADERBOARD_METRICS`) that every
system with an output has values of, on cases they share: systems are ranked only over the cases all of
them have a value on (the board says how many), so a judge-only metric with one free zero (offline, no
judge) never ranks the one system that has it; where no metric qualifies, nobody is ranked. Systems with
the same value share a rank (1, 2, 2, 4) and are listed by name; systems without a value come last,
unranked. Canary systems (adapter ``canary``: answers that do no real work) are valued over the same cases
but not ranked; the metric-validity alarm names the board when one of them scores at or above gold, or at
or above a real system that scored anything. Cost per resolved case is shown where the headline metric is a pass/fail rate (patch:
resolved, e2e: tests all pass). A cross-suite overview exists only for systems that ran the very
same cases in every suite; otherwise it is left out and the page says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from collections import defaultdict

from evalkit.metrics.registry import LEADERBOARD_METRICS, METRICS, MetricInfo, primary_metric
from evalkit.models import Model
from evalkit.report.models import Aggregate, CaseRow, Coverage, Report, SuiteSummary, TieGroups
from evalkit.stats import rate as wilson
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.graders import canaries as canaries_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    canaries_code = later("evalkit.graders.canaries")


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
    canary: bool = False
    """A canary (an answer doing no real work, made by evalkit): valued, never ranked; shown apart."""
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
    fell_back: dict[str, str] = {}
    """Headline metrics declared before ``metric`` that have values but not for every system on shared
    cases (e.g. a judge's free zeros offline): metric -> why it was not ranked by."""
    common_cases: int | None = None
    """Cases every system has a value of ``metric`` on: the values are over these (None: no metric)."""
    alarm: str = ""
    """Metric-validity alarm: the canaries that score at or above gold or a real system (empty: none)."""


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


def _per_case(rows: list[CaseRow], metric: str) -> dict[str, dict[str, float]]:
    """System -> case id -> value of ``metric`` (cases left out of aggregates skipped)."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for r in rows:
        for name, cell in r.systems.items():
            v = cell.metrics.get(metric)
            if v is not None and cell.excluded is None:
                out[name][r.case_id] = v
    return out


def _over(info: MetricInfo | None, values: list[float]) -> tuple[float | None, float | None, float | None]:
    """(value, low, high) of ``values`` as the metric aggregates them (a mean's interval is not redone)."""
    if not values:
        return None, None, None
    if info is not None and info.aggregate == "sum":
        return round(sum(values), 6), None, None
    if info is not None and info.aggregate == "rate":
        est = wilson(int(round(sum(values))), len(values), 0.95)
        return est.value, est.low, est.high
    return sum(values) / len(values), None, None


def _alarm(info: MetricInfo | None, values: dict[str, float | None], canaries: set[str], gold: set[str],
           per: dict[str, dict[str, float]] | None = None, common: set[str] | None = None) -> str:
    """The canaries at or above gold, or at or above a real system that scored above the metric's floor (0 for a
    higher-is-better metric). Each pair is compared over the cases both have values on (a canary that skips a
    case is not compared with what others did there); without per-case values, by the values given."""
    higher = info is None or info.higher_is_better is not False

    def at_or_above(a: float, b: float) -> bool:
        return a >= b - 1e-12 if higher else a <= b + 1e-12

    def pair(c: str, s: str) -> tuple[float | None, float | None]:
        if per is None or common is None:
            return values.get(c), values.get(s)
        shared = sorted(common & set(per.get(c, {})) & set(per.get(s, {})))
        if not shared:
            return None, None
        return (_over(info, [per[c][k] for k in shared])[0], _over(info, [per[s][k] for k in shared])[0])

    found = []
    real = [s for s, v in sorted(values.items()) if s not in canaries and v is not None]
    for c in sorted(canaries):
        if values.get(c) is None:
            continue
        beaten = []
        for s in real:
            cv, sv = pair(c, s)
            if cv is None or sv is None:
                continue
            if at_or_above(cv, sv) and (s in gold or not higher or sv > 0.0):
                beaten.append(f"{s} {sv:.3f}")
        if beaten:
            found.append(f"{c} ({values[c]:.3f}) at or above {', '.join(beaten[:4])}{' ...' if len(beaten) > 4 else ''}")
    return "; ".join(found)


def suite_leaderboard(suite: SuiteSummary, rows: list[CaseRow], metric_info: dict[str, MetricInfo],
                      baseline: str | None = None, *, canaries: set[str] | frozenset[str] = frozenset(),
                      gold: set[str] | frozenset[str] = frozenset(), ties: TieGroups | None = None) -> Leaderboard:
    """The suite's systems ranked by its kind's headline metric, over the cases they all have a value on, with its
    tie groups when given (report.json's tie_groups, computed by summarize on the same metric)."""
    present = {m for aggs in suite.systems.values() for m, a in aggs.items() if a.value is not None}
    uncalibrated = {m: i.uncalibrated for m in present if (i := metric_info.get(m)) is not None and i.uncalibrated}
    declared = LEADERBOARD_METRICS.get(suite.kind, ())
    fallback = primary_metric({m: 1.0 for m in present - set(uncalibrated)})
    candidates = [m for m in (*declared, *([fallback] if fallback else [])) if m in present and m not in uncalibrated]
    # the real systems with an output decide the metric and the shared cases; canaries are valued over those
    contenders = [s for s in suite.systems if s not in canaries and _coverage(suite, rows, s).attempted > 0]
    metric: str | None = None
    common: set[str] | None = None
    per: dict[str, dict[str, float]] = {}
    fell_back: dict[str, str] = {}
    summary_only = not any(cell.metrics for r in rows for cell in r.systems.values())
    for m in dict.fromkeys(candidates):
        per = _per_case(rows, m)
        if summary_only:  # no per-case values (a summary alone): rank by the aggregates as they are
            metric, common = m, None
            break
        lacking = [s for s in contenders if not per.get(s)]
        shared = set.intersection(*(set(per[s]) for s in contenders)) if contenders and not lacking else set()
        if lacking:
            fell_back[m] = f"no value for {', '.join(lacking[:3])}{' ...' if len(lacking) > 3 else ''}"
        elif not shared:
            fell_back[m] = "no case on which every system has a value"
        else:
            metric, common = m, shared
            break
    info = metric_info.get(metric) or METRICS.get(metric) if metric else None
    has_resolved = bool(info and info.binary and info.higher_is_better is not False)
    values: dict[str, tuple[float | None, float | None, float | None, int]] = {}
    for s, aggs in suite.systems.items():
        a: Aggregate | None = aggs.get(metric) if metric else None
        own = per.get(s, {})
        if common is None or (a is not None and set(own) == common):
            values[s] = (a.value, a.low, a.high, a.n) if a else (None, None, None, 0)
        elif metric is not None and (common <= set(own) or (s in canaries and common & set(own))):
            over = sorted(common & set(own))  # a canary that skips a case is valued over the rest
            values[s] = (*_over(info, [own[c] for c in over]), len(over))
        else:
            values[s] = (None, None, None, 0)
    higher = info.higher_is_better if info else True
    ranked = rank({s: v[0] for s, v in values.items() if s not in canaries}, higher)
    ranked += [(s, None) for s, _ in rank({s: v[0] for s, v in values.items() if s in canaries}, higher)
               if _coverage(suite, rows, s).attempted > 0]  # a canary that means nothing for the kind: left out
    aggs_method: dict[str, str] = {}
    aggs_approx: dict[str, bool] = {}
    for s_name, aggs in suite.systems.items():
        a_ = aggs.get(metric) if metric else None
        if a_ is not None and values.get(s_name, (None,))[0] == a_.value:  # the aggregate's own interval
            aggs_method[s_name], aggs_approx[s_name] = a_.method, a_.approximate
    entries = []
    for name, r in ranked:
        value, low, high, n = values[name]
        cov = _coverage(suite, rows, name)
        cost_agg = suite.systems[name].get("cost_usd")
        cost = cost_agg.value if cost_agg else None
        resolved = round(value * n) if has_resolved and value is not None else None
        entries.append(Entry(
            system=name, rank=r, value=value, low=low, high=high, n=n, attempted=cov.attempted, cases=cov.cases,
            cost_usd=cost, cost_per_case=cost / cov.attempted if cost is not None and cov.attempted else None,
            resolved=resolved, cost_per_resolved=cost / resolved if cost is not None and resolved else None,
            baseline=name == baseline, canary=name in canaries,
            method=aggs_method.get(name, ""), approximate=aggs_approx.get(name, False),
            tie_group=ties.letters.get(name, "") if ties is not None and ties.metric == metric else ""))
    before = declared[:declared.index(metric)] if metric in declared else declared
    tie_note = ""
    if ties is not None and ties.metric == metric and ties.letters:
        tie_note = (f"Systems sharing a letter are not told apart: no significant paired difference ({ties.test}, "
                    f"same cases, Holm over each group leader's comparisons, p < 0.05); \"a\" is the leader's "
                    f"group.{' ' + ties.note[:1].upper() + ties.note[1:] + '.' if ties.note else ''}")
    alarm = _alarm(info, {s: v[0] for s, v in values.items()}, set(canaries), set(gold), per if common else None,
                   common) if metric else ""
    return Leaderboard(suite=suite.name, kind=suite.kind, n_cases=suite.n_cases, metric=metric,
                       has_resolved=has_resolved, entries=entries, tie_note=tie_note,
                       passed_over={m: uncalibrated[m] for m in before if m in uncalibrated},
                       fell_back=fell_back, common_cases=len(common) if common is not None else None, alarm=alarm)


CANARY_ADAPTER = "canary"
"""The adapter of evalkit's canary systems (evalkit.systems.canary)."""


def leaderboards(report: Report) -> dict[str, Leaderboard]:
    """Every suite's leaderboard of ``report`` (the page's, the console's and the alarm's: one computation)."""
    canaries = {s.name for s in report.systems if s.adapter == CANARY_ADAPTER}
    gold = {s.name for s in report.systems if s.adapter == "gold"}
    return {s.name: suite_leaderboard(s, [r for r in report.cases if r.suite == s.name], report.metric_info,
                                      s.comparisons[0].baseline if s.comparisons else report.baseline,
                                      canaries=canaries, gold=gold, ties=report.tie_groups.get(s.name))
            for s in report.suites}


def validity_alarms(report: Report) -> dict[str, str]:
    """Suite -> the metric-validity alarm of its leaderboard (suites without one left out)."""
    out = {}
    for name, board in leaderboards(report).items():
        if board.alarm:
            shown = board.metric or ""
            out[name] = f"{shown}: {board.alarm}"
    return out


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
    for key_set, names in by_set.items():
        suites = sorted({s for s, _ in key_set})
        if len(names) < 2 or len(suites) < 2:
            continue
        ranks: dict[str, dict[str, int | None]] = {n: {} for n in names}
        values: dict[str, dict[str, float | None]] = {n: {} for n in names}
        for b in boards:
            if b.suite not in suites:
                continue
            vals = {e.system: e.value for e in b.entries if e.system in names}
            info = metric_info.get(b.metric or "") or METRICS.get(b.metric or "")
            for n, place in rank(vals, info.higher_is_better if info else True):
                ranks[n][b.suite] = place
                values[n][b.suite] = vals.get(n)
        mean = {n: (sum(v for v in ranks[n].values() if v is not None) / len(suites)
                    if all(ranks[n].get(s) is not None for s in suites) else None) for n in names}
        order = sorted(names, key=lambda n: sort_key(mean[n], False, n))
        groups.append(OverviewGroup(systems=order, suites=suites, ranks=ranks, values=values, mean_rank=mean))
    note = "" if groups else ("No cross-suite overview: no two systems ran the same cases in two or more suites, "
                              "so their numbers are not comparable across suites; see each suite's leaderboard.")
    return groups, note


TABLE_START = "<!-- canary-table: generated by scripts/canary-table.py; do not edit -->"
TABLE_END = "<!-- /canary-table -->"


def canary_table(report: Report) -> str:
    """Markdown: per suite, its headline and what each canary, gold and the best real system score on it (the
    README's table, regenerated from a run with `canaries: true` so that it cannot drift)."""


    cols = [canaries_code.system_name(v) for v in canaries_code.VARIANTS]
    head = ("| suite (kind) | headline | " + " | ".join(v for v in canaries_code.VARIANTS) + " | gold | best real system |\n"
            "|---|---|" + "---|" * (len(cols) + 2) + "\n")
    gold = {s.name for s in report.systems if s.adapter == "gold"}
    lines = []
    for name, board in leaderboards(report).items():
        info = report.metric_info.get(board.metric or "") or METRICS.get(board.metric or "")
        by = {e.system: e for e in board.entries}

        def cell(e: Entry | None) -> str:
            return "n/a" if e is None or e.value is None else f"{e.value:.3f}"

        real = [e for e in board.entries if not e.canary and e.system not in gold and e.value is not None]
        best = real[0] if real else None
        golds = [by[g] for g in sorted(gold) if g in by]
        lines.append(f"| {name} ({board.kind}) | {info.display if info else '–'} | "
                     + " | ".join(cell(by.get(c)) for c in cols)
                     + f" | {cell(golds[0] if golds else None)} | "
                     + (f"{cell(best)} ({best.system})" if best else "n/a") + " |")
    return TABLE_START + "\n" + head + "\n".join(lines) + "\n" + TABLE_END
