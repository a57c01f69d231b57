"""Leaderboard tie groups: which systems' headline values are not told apart by a paired test.

Letters as in a compact letter display, step-down from the top: the leader starts group a, which holds
every system whose paired difference from the leader is not significant (McNemar exact for a pass/fail
headline, Wilcoxon signed-rank for scores, on the cases both scored; Holm over the leader's comparisons).
The best-ranked system in no group yet (significantly different from every leader before it) starts the
next letter, compared the same way with every system that is not a leader, above or below it. A system can
carry several letters ("ab"): no test told it apart from either leader.
A comparison that is not testable (too few pairs) cannot separate two systems, so it ties them; the note
says how many ties are of that kind.
"""

from __future__ import annotations

import string
from typing import Any, Callable

from evalkit.metrics.registry import METRICS, MetricInfo
from evalkit.report.leaderboard import suite_leaderboard
from evalkit.report.models import CaseRow, SuiteSummary, TieGroups
from evalkit.report.verdict import settle
from evalkit.stats import PairedComparison, compare_binary, compare_scores

Call = Callable[..., Any]


def _direct(model: type, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


def _values(rows: list[CaseRow], system: str, metric: str) -> dict[str, float]:
    """case id -> the system's value of the metric (not excluded, not None)."""
    out = {}
    for row in rows:
        cell = row.systems.get(system)
        if cell is None or cell.excluded:
            continue
        v = cell.metrics.get(metric)
        if v is not None:
            out[row.case_id] = float(v)
    return out


def _letter(i: int) -> str:
    letters = string.ascii_lowercase
    return letters[i] if i < len(letters) else f"g{i + 1}"


def tie_groups(order: list[str], rows: list[CaseRow], metric: str | None, info: MetricInfo | None, seed: int = 0,
               call: Call | None = None) -> TieGroups:
    """Tie groups of the systems in ``order`` (ranked best first, only systems with a value) on ``metric``."""
    call = call or _direct
    if metric is None or info is None or not order:
        return TieGroups(metric=metric, note="no headline metric with values: no tie groups")
    values = {s: _values(rows, s, metric) for s in order}
    test = "mcnemar-exact" if info.binary else "wilcoxon-pratt"
    letters: dict[str, str] = {s: "" for s in order}
    groups: list[list[str]] = []
    comparisons: list[PairedComparison] = []
    untestable = 0
    while True:
        leader = next((s for s in order if not letters[s]), None)
        if leader is None:
            break
        letter = _letter(len(groups))
        leaders = {g[0] for g in groups}
        others = [s for s in order if s != leader and s not in leaders]
        family = []
        for other in others:
            common = [cid for cid in values[leader] if cid in values[other]]
            a = [values[leader][cid] for cid in common]
            b = [values[other][cid] for cid in common]
            if info.binary:
                family.append(call(PairedComparison, compare_binary, metric, leader, other,
                                   [v >= 0.5 for v in a], [v >= 0.5 for v in b], seed=seed))
            else:
                family.append(call(PairedComparison, compare_scores, metric, leader, other, a, b, seed=seed))
        settled = settle(family, call)
        members = [leader] + [c.system for c in settled if not c.significant]
        untestable += sum(1 for c in settled if not c.significant and c.verdict == "not testable")
        for s in members:
            letters[s] += letter
        groups.append(members)
        comparisons.extend(settled)
    note = ""
    if untestable:
        note = (f"{untestable} of the ties {'is' if untestable == 1 else 'are'} not testable (too few cases differ "
                f"for the paired test to separate the two systems at all), not a measured equality")
    return TieGroups(metric=metric, test=test, letters=letters, groups=groups, comparisons=comparisons, note=note)


def suite_ties(suites: list[SuiteSummary], rows: list[CaseRow], metric_info: dict[str, MetricInfo],
               baseline: str | None, seed: int = 0, call: Call | None = None,
               canaries: frozenset[str] = frozenset(), gold: frozenset[str] = frozenset()) -> dict[str, TieGroups]:
    """Suite -> tie groups of its leaderboard (the ranked systems with a value, in the leaderboard's order; canaries
    are never ranked, so never in a group)."""
    out = {}
    for suite in suites:
        suite_rows = [r for r in rows if r.suite == suite.name]
        board = suite_leaderboard(suite, suite_rows, metric_info, baseline, canaries=canaries, gold=gold)
        info = (metric_info.get(board.metric) or METRICS.get(board.metric)) if board.metric else None
        order = [e.system for e in board.entries if e.rank is not None]
        out[suite.name] = tie_groups(order, suite_rows, board.metric, info, seed, call)
    return out
