"""Intervals that cover: a mean of 0/1 values gets Wilson's interval, all-equal values get none (never a
zero-width "interval"), and an interval from fewer than 30 values is marked approximate on the page."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from statsmodels.stats.proportion import proportion_confint

from evalkit.config import ReportSettings
from evalkit.metrics.registry import METRICS
from evalkit.report.aggregates import aggregate
from evalkit.report.render import environment

CFG = SimpleNamespace(report=ReportSettings())


def test_mean_of_zero_one_values_gets_wilson() -> None:
    """'Incidents resolved 1.000 [1.000, 1.000] n=22' was a bootstrap of 22 ones; Wilson gives [0.851, 1]."""
    info = METRICS["assertion_score"]
    assert info.aggregate == "mean"
    a = aggregate(info, [1.0] * 22, 0, {}, CFG)  # type: ignore[arg-type]
    low, high = proportion_confint(22, 22, method="wilson")
    assert a.method == "wilson (0/1 values)" and a.value == 1.0
    assert a.low == pytest.approx(low, abs=1e-12) and round(a.low, 3) == 0.851 and a.high == 1.0
    mixed = aggregate(info, [1.0, 0.0, 1.0, 1.0, 0.0], 0, {}, CFG)  # type: ignore[arg-type]
    low, high = proportion_confint(3, 5, method="wilson")
    assert mixed.method == "wilson (0/1 values)" and (mixed.low, mixed.high) == (pytest.approx(low), pytest.approx(high))


def test_all_equal_scores_have_no_interval_and_the_cell_says_so() -> None:
    info = METRICS["assertion_score"]
    a = aggregate(info, [0.5] * 12, 0, {}, CFG)  # type: ignore[arg-type]
    assert a.low is None and a.high is None and a.method == "degenerate: all values equal"
    html = environment().from_string('{% from "macros.html.j2" import agg_cell %}{{ agg_cell(a, info, "s") }}').render(
        a=a, info=info)
    assert "all 12 equal" in html and "[" not in html.split('class="v"')[1]


def test_small_n_bootstrap_is_marked_approximate() -> None:
    info = METRICS["assertion_score"]
    tpl = environment().from_string('{% from "macros.html.j2" import agg_cell %}{{ agg_cell(a, info, "s") }}')
    small = aggregate(info, [0.2, 0.5, 0.9, 0.4, 0.7] * 5, 0, {}, CFG)  # type: ignore[arg-type]
    big = aggregate(info, [0.2, 0.5, 0.9, 0.4, 0.7, 0.3] * 5, 0, {}, CFG)  # type: ignore[arg-type]
    assert small.approximate and not big.approximate and (small.n, big.n) == (25, 30)
    assert small.method == big.method == "studentized bootstrap or t, the wider"
    assert "≈[" in tpl.render(a=small, info=info) and "≈" not in tpl.render(a=big, info=info)
    assert small.low is not None and small.high is not None and small.low < small.high


def test_interval_stops_at_the_ends_of_the_scale() -> None:
    """A t interval of three 0-1 scores reaches below 0 and above 1; the page's stops at 0 and 1."""
    info = METRICS["assertion_score"]
    assert info.scale == "0-1"
    a = aggregate(info, [0.3, 1.0, 1.0], 0, {}, CFG)  # type: ignore[arg-type]
    assert a.method == "t" and a.low is not None and a.high == 1.0 and 0.0 <= a.low < a.value
