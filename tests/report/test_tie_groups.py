"""Leaderboard tie groups on constructed tables whose significant pairs are known (exact McNemar and Holm
from statsmodels as the oracle)."""

from __future__ import annotations

from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from evalkit.metrics.registry import METRICS
from evalkit.report.leaderboard import suite_leaderboard
from evalkit.report.models import Aggregate, CaseCell, CaseRow, SuiteSummary
from evalkit.report.ties import suite_ties, tie_groups

N = 40


def table(resolved: dict[str, set[int]], suite: str = "p") -> tuple[SuiteSummary, list[CaseRow]]:
    rows = [CaseRow(suite=suite, case_id=f"c{i:02d}",
                    systems={s: CaseCell(status="ok", metrics={"resolved": float(i in cases)})
                             for s, cases in resolved.items()}) for i in range(N)]
    systems = {s: {"resolved": Aggregate(metric="resolved", n=N, value=len(c) / N, method="wilson")}
               for s, c in resolved.items()}
    summary = SuiteSummary(name=suite, kind="patch", language="python", description="", n_cases=N,
                           metrics=["resolved"], systems=systems, comparisons=[], broken=[])
    return summary, rows


def test_two_groups_with_known_significant_pairs() -> None:
    # A 36, B 34 (4 changed: tied with A); C 10 and D 8 are subsets of A and B: 26+ cases A/B resolve and
    # C/D do not, all one way (significant); C vs D: 2 changed (tied, and not testable)
    resolved = {"A": set(range(36)), "B": set(range(2, 36)) , "C": set(range(10)), "D": set(range(8))}
    suite, rows = table(resolved)
    ties = suite_ties([suite], rows, METRICS, None)["p"]
    assert ties.metric == "resolved" and ties.test == "mcnemar-exact"
    assert ties.letters == {"A": "a", "B": "a", "C": "b", "D": "b"}
    assert ties.groups == [["A", "B"], ["C", "D"]]
    # the leader's family: the oracle's exact McNemar p-values and Holm
    first = [c for c in ties.comparisons if c.baseline == "A"]
    assert [c.system for c in first] == ["B", "C", "D"]
    ps = []
    for c in first:
        b = len(resolved["A"] - resolved[c.system])
        k = len(resolved[c.system] - resolved["A"])
        ps.append(mcnemar([[0, b], [k, 0]], exact=True).pvalue)
        assert c.p_value == ps[-1] or abs(c.p_value - ps[-1]) < 1e-12
    reject, adjusted, _, _ = multipletests(ps, alpha=0.05, method="holm")
    assert [c.significant for c in first] == list(reject) == [False, True, True]
    assert all(abs(c.p_holm - a) < 1e-12 for c, a in zip(first, adjusted))
    assert "not testable" in ties.note  # C vs D and A vs B: too few changed cases to separate them
    board = suite_leaderboard(suite, rows, METRICS, None, ties=ties)
    assert [(e.system, e.rank, e.tie_group) for e in board.entries] == [("A", 1, "a"), ("B", 2, "a"), ("C", 3, "b"),
                                                                       ("D", 4, "b")]
    assert board.tie_note.startswith("Systems sharing a letter are not told apart")


def test_a_system_between_two_groups_carries_both_letters() -> None:
    # A 30, M 25, Z 20 of 40, nested: A vs M 5 changed one way (p = 0.0625), A vs Z 10 (p = 0.002, Holm
    # x2 = 0.004), M vs Z 5 (p = 0.0625): A and M tied, A and Z not, M and Z tied
    resolved = {"A": set(range(30)), "M": set(range(25)), "Z": set(range(20))}
    suite, rows = table(resolved)
    ties = suite_ties([suite], rows, METRICS, None)["p"]
    assert ties.letters == {"A": "a", "M": "ab", "Z": "b"}
    assert ties.groups == [["A", "M"], ["Z", "M"]]
    z = [c for c in ties.comparisons if c.baseline == "Z"]
    assert [(c.system, c.significant) for c in z] == [("M", False)]


def test_everyone_tied_and_no_metric() -> None:
    resolved = {"A": set(range(20)), "B": set(range(1, 20)), "C": set(range(2, 21))}
    suite, rows = table(resolved)
    ties = suite_ties([suite], rows, METRICS, None)["p"]
    assert set(ties.letters.values()) == {"a"} and ties.groups == [["A", "B", "C"]]
    empty = tie_groups([], rows, None, None)
    assert empty.letters == {} and "no headline metric" in empty.note


def test_scores_use_the_wilcoxon_test() -> None:
    info = METRICS["assertion_score"]
    rows = [CaseRow(suite="s", case_id=f"c{i}", systems={
        "hi": CaseCell(status="ok", metrics={"assertion_score": 0.9 + 0.001 * i}),
        "mid": CaseCell(status="ok", metrics={"assertion_score": 0.9 + 0.001 * i - (0.01 if i % 2 else -0.005)}),
        "lo": CaseCell(status="ok", metrics={"assertion_score": 0.3 + 0.002 * i})}) for i in range(20)]
    ties = tie_groups(["hi", "mid", "lo"], rows, "assertion_score", info)
    assert ties.test == "wilcoxon-pratt" and ties.letters == {"hi": "a", "mid": "a", "lo": "b"}
