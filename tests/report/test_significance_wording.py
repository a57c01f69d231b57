"""A paired difference whose interval excludes 0 but does not survive Holm says so, with the family size."""

from __future__ import annotations

from evalkit.metrics.registry import METRICS
from evalkit.report.render import environment, judgement
from evalkit.stats import apply_holm, compare_scores

TEMPLATE = '{% from "macros.html.j2" import comparison_table with context %}{{ comparison_table(comps, "cap") }}'


def render(comps: list) -> str:
    report = {"metric_info": METRICS}
    return environment().from_string(TEMPLATE).render(comps=comps, report=report, judgement=judgement)


def test_nominal_difference_not_significant_after_holm() -> None:
    base = [0.50, 0.52, 0.40, 0.61, 0.45, 0.58, 0.47, 0.53]
    better = [b + d for b, d in zip(base, [0.10, 0.12, 0.08, 0.15, 0.09, 0.11, 0.13, 0.07])]
    nominal = compare_scores("codebleu", "base", "sys", base, better)
    assert nominal.p_value is not None and nominal.p_value < 0.05 and nominal.difference.low > 0
    # eleven more metrics where nothing differs (p = 1): Holm over 12 comparisons
    jitter = [b + (0.01 if i % 2 else -0.01) for i, b in enumerate(base)]
    same = [compare_scores("assertion_score", "base", "sys", base, jitter) for _ in range(11)]
    family = apply_holm([nominal, *same])
    assert family[0].holm_family == 12 and family[0].p_holm >= 0.05 and family[0].significant is False
    html = render(family)
    assert "nominal difference, not significant after Holm correction over 12 comparisons" in html
    # the metrics whose interval straddles 0 keep the plain wording
    assert html.count("no significant difference") == sum(
        1 for c in family[1:] if not (c.difference.low > 0 or c.difference.high < 0))
    # alone (a family of one), the same difference is significant and shown as better
    alone = apply_holm([nominal])
    assert alone[0].significant and alone[0].holm_family == 1
    assert "▲ better" in render(alone) and "nominal difference" not in render(alone)
