"""Say only what was tested: each comparison is better / worse / no detectable difference (with the minimum
detectable difference at the level Holm held it to) / not testable (and why), in the comparison tables, and
never "no significant difference"."""

from __future__ import annotations

import html as html_lib
import re

from evalkit.metrics.registry import METRICS
from evalkit.report.render import environment, judgement
from evalkit.report.verdict import settle, untestable_reason, verdict
from evalkit.stats import ALPHA, PairedComparison, compare_binary, compare_scores

TEMPLATE = '{% from "macros.html.j2" import comparison_table with context %}{{ comparison_table(comps, "cap") }}'


def render(comps: list) -> str:
    report = {"metric_info": METRICS}
    html = environment().from_string(TEMPLATE).render(comps=comps, report=report, judgement=judgement)
    assert "no significant difference" not in html and "significant difference" not in html
    return html


def cells(html: str) -> list[str]:
    """The text of each row's verdict cell."""
    return [" ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", m)).split())
            for m in re.findall(r'<td class="verdict">(.*?)</td></tr>', html, re.S)]


BASE = [0.50, 0.52, 0.40, 0.61, 0.45, 0.58, 0.47, 0.53]
UP = [0.10, 0.12, 0.08, 0.15, 0.09, 0.11, 0.13, 0.07]


def twelve(first: PairedComparison, n: int) -> list[PairedComparison]:
    """``first`` and eleven metrics on n pairs where nothing differs much: a Holm family of 12."""
    base = [0.4 + 0.01 * i for i in range(n)]
    jitter = [b + (0.01 if i % 2 else -0.01) for i, b in enumerate(base)]
    return [first, *(compare_scores("assertion_score", "base", "sys", base, jitter) for _ in range(11))]


def test_better_alone() -> None:
    nominal = compare_scores("codebleu", "base", "sys", BASE, [b + d for b, d in zip(BASE, UP)])
    (c,) = settle([nominal])
    assert c.significant and c.holm_family == 1 and c.alpha_holm == ALPHA and c.testable
    assert c.verdict == "better" and c.mdd is None
    assert cells(render([c])) == ["▲ better"]


def test_worse_alone() -> None:
    c = settle([compare_binary("resolved", "base", "sys", [True] * 10, [False] * 10)])[0]
    assert c.verdict == "worse" and cells(render([c])) == ["▼ worse"]


def test_eight_pairs_in_a_family_of_twelve_are_not_testable() -> None:
    """8 pairs all up: p = 2 / 2^8 = 0.0078 is the smallest possible; times 12 it cannot reach 0.05."""
    nominal = compare_scores("codebleu", "base", "sys", BASE, [b + d for b, d in zip(BASE, UP)])
    assert nominal.p_value is not None and nominal.p_value < ALPHA and nominal.p_min == nominal.p_value
    family = settle(twelve(nominal, 8))
    c = family[0]
    assert c.holm_family == 12 and c.p_holm is not None and c.p_holm >= ALPHA and c.testable is False
    assert c.verdict == "not testable" and verdict(c) == "not testable" and c.mdd is None
    text = cells(render(family))[0]
    assert text == ("not testable: too few nonzero differences: the smallest p these pairs allow is 0.00781, "
                    "which cannot reach p < 0.05 after Holm over 12 comparisons"), text


def test_nominal_difference_that_could_have_survived_holm() -> None:
    """20 pairs could reach p < 0.05 / 12, 15 up and 5 down (p ≈ 0.008) do not: no detectable difference, with
    the minimum detectable difference at the Holm level and the nominal note."""
    base = [0.4 + 0.013 * i for i in range(20)]
    d = [0.05 + 0.003 * i for i in range(15)] + [-0.06, -0.07, -0.065, -0.052, -0.055]
    nominal = compare_scores("codebleu", "base", "sys", base, [b + x for b, x in zip(base, d)])
    assert nominal.p_value is not None and nominal.p_value < ALPHA and nominal.difference.low is not None
    assert nominal.difference.low > 0
    family = settle(twelve(nominal, 20))
    c = family[0]
    assert c.testable and not c.significant and c.verdict == "no detectable difference"
    assert c.alpha_holm == ALPHA / 12 and c.mdd is not None and c.mdd > 0
    text = cells(render(family))[0]
    assert text.startswith(f"no detectable difference (smallest detectable ±{c.mdd:.3f} at 80% power, α 0.00417)"), text
    assert text.endswith("nominal difference, not significant after Holm correction over 12 comparisons"), text


def test_no_test_with_one_pair() -> None:
    (c,) = settle([compare_scores("codebleu", "base", "sys", [0.3], [0.9])])
    assert c.p_value is None and c.testable is False and c.verdict == "not testable"
    assert cells(render([c])) == ["not testable: no test with 1 pair"]


def test_too_few_cases_changed_outcome() -> None:
    """30 pairs, 3 changed (all one way): p_min = 0.25, nothing could be significant."""
    base = [True] * 15 + [False] * 15
    other = [True] * 15 + [True] * 3 + [False] * 12
    (c,) = settle([compare_binary("resolved", "base", "sys", base, other)])
    assert c.discordant == (0, 3) and c.p_min == 0.25 and c.verdict == "not testable"
    assert cells(render([c])) == ["not testable: only 3 cases changed outcome: the smallest p these pairs allow "
                                  "is 0.25, which cannot reach p < 0.05 after Holm over 1 comparison"]


def test_no_case_changed_outcome() -> None:
    (c,) = settle([compare_binary("resolved", "base", "sys", [True, False] * 11, [True, False] * 11)])
    assert c.p_value == 1.0 and c.p_min == 1.0 and c.verdict == "not testable"
    assert untestable_reason(c) == "no case changed outcome: no outcome of these pairs could be significant"
    assert cells(render([c])) == ["not testable: no case changed outcome: no outcome of these pairs could be significant"]


def test_enough_changes_but_balanced_is_no_detectable_difference() -> None:
    """10 changed, 5 each way: p_min = 2 / 2^10 < 0.05, p = 1: no detectable difference with its MDD."""
    base = [True] * 5 + [False] * 5 + [True] * 10
    other = [False] * 5 + [True] * 5 + [True] * 10
    (c,) = settle([compare_binary("resolved", "base", "sys", base, other)])
    assert c.testable and c.verdict == "no detectable difference" and c.mdd is not None
    assert cells(render([c]))[0].startswith("no detectable difference (smallest detectable ±")


def test_difference_interval_stops_at_the_scale() -> None:
    """6 pairs, 4 gained: the t bound passes +100 points; the report's stops there."""
    from evalkit.stats import compare_binary

    c = compare_binary("resolved", "base", "sys", [False] * 4 + [True, False], [True] * 4 + [True, False])
    assert c.difference.high is not None and c.difference.high > 1
    (s,) = settle([c])
    assert s.difference.high == 1.0 and s.difference.low == c.difference.low


def test_every_system_of_a_suite_has_the_same_holm_family() -> None:
    """A system with no pairs on a metric (its files decided without the judge, say) keeps the suite's family:
    the metric counts as p = 1, so its correction is not milder than the other systems'."""
    from types import SimpleNamespace

    from evalkit.artifacts import ScoresArtifact
    from evalkit.config import ReportSettings
    from evalkit.report.comparisons import compare_suite

    cases = [f"c{i}" for i in range(12)]
    scores = {}
    for s, up in (("base", 0.0), ("full", 0.2), ("partial", 0.2)):
        for i, cid in enumerate(cases):
            m = {"resolved": float(i % 2 == 0 or up > 0), "codebleu": 0.4 + up + 0.01 * i}
            if not (s == "partial"):
                m["assertion_score"] = 0.3 + up + 0.02 * i
            scores[(s, cid)] = ScoresArtifact(system=s, suite="p", case_id=cid, metrics=m)
    cfg = SimpleNamespace(baseline_name="base", report=ReportSettings())
    out = compare_suite(cfg, ["resolved", "codebleu", "assertion_score"], scores, ["base", "full", "partial"], cases)  # type: ignore[arg-type]
    fam = {(c.system, c.metric): c.holm_family for c in out}
    assert ("partial", "assertion_score") not in fam
    assert set(fam.values()) == {3}
