"""evalkit.total_change: a total's change over paired cases with a paired bootstrap interval (the verdict
line's cost and time against the previous release)."""

from __future__ import annotations

import random

import pytest

from evalkit.total_change import total_change


def test_a_known_change_and_an_interval_around_it() -> None:
    rng = random.Random(1)
    before = [rng.uniform(0.5, 1.5) for _ in range(60)]
    after = [b * 1.2 + rng.uniform(-0.05, 0.05) for b in before]  # every case costs ~20% more
    c = total_change(before, after, seed=3)
    assert c.n_cases == 60 and not c.approximate
    assert c.relative == pytest.approx(sum(after) / sum(before) - 1)
    assert c.relative_low is not None and c.relative_high is not None
    assert 0.15 < c.relative_low < c.relative < c.relative_high < 0.25
    assert c.difference_low is not None and c.difference_high is not None
    assert 0 < c.difference_low < c.difference < c.difference_high
    assert total_change(before, after, seed=3) == c  # seeded: the same bytes in report.json


def test_no_change_has_an_interval_across_zero() -> None:
    rng = random.Random(2)
    before = [rng.uniform(1, 3) for _ in range(40)]
    after = [rng.uniform(1, 3) for _ in range(40)]  # the same distribution, unpaired noise
    c = total_change(before, after)
    assert c.relative_low is not None and c.relative_high is not None
    assert c.relative_low < 0 < c.relative_high


def test_zero_before_gives_the_difference_only_and_few_cases_are_approximate() -> None:
    c = total_change([0.0, 0.0, 0.0], [0.1, 0.2, 0.0])
    assert c.relative is None and c.relative_low is None
    assert c.difference == pytest.approx(0.3) and c.approximate
    assert c.difference_low is not None and c.difference_high is not None and c.difference_low <= 0.3 <= c.difference_high
    one = total_change([1.0], [2.0])
    assert one.relative == pytest.approx(1.0) and one.relative_low is None


def test_unpaired_or_non_finite_values_are_refused() -> None:
    with pytest.raises(ValueError, match="as many"):
        total_change([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        total_change([1.0, float("nan")], [1.0, 2.0])


def test_the_verdict_line_words() -> None:
    from evalkit.report.site_env import fmt_change

    c = total_change([1.0] * 30, [1.1] * 30)
    assert fmt_change(c, "cost_usd") == "cost +10% [+10%, +10%] ($30.0000 → $33.0000)"
    assert fmt_change(total_change([0.0] * 3, [0.0] * 3), "cost_usd") == "cost $0.0000 in both"
    assert fmt_change(total_change([0.0] * 3, [1.0, 2.0, 3.0]), "wall_s").startswith("time +6.00 s ≈[")
