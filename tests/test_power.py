"""evalkit.power against statsmodels' power functions (paired t), and the McNemar normal approximation
against its closed form and a seeded simulation of the test it approximates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import NormalIndPower, TTestPower

from evalkit.power import (WILCOXON_ARE, binary_detectability, exact_floor, mcnemar_exact_mdd, mcnemar_exact_power,
                           mcnemar_mdd, mcnemar_n, mcnemar_power, mcnemar_thresholds, score_detectability, ttest_effect,
                           ttest_nobs, ttest_power)
from evalkit.stats import mcnemar_exact, wilcoxon_pratt

TT = TTestPower()


@pytest.mark.parametrize("effect, nobs", [(0.1, 10), (0.3, 20), (0.8, 7.5), (1.5, 3), (0.05, 2000), (-0.4, 30)])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_ttest_power_is_statsmodels(effect: float, nobs: float, alpha: float) -> None:
    assert ttest_power(effect, nobs, alpha) == pytest.approx(TT.power(effect, nobs, alpha), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("nobs", [5.7, 6, 10, 24, 40, 300, 5000])
def test_minimum_detectable_effect_is_statsmodels(nobs: float) -> None:
    mine = ttest_effect(nobs)
    theirs = TT.solve_power(nobs=nobs, alpha=0.05, power=0.8)
    # statsmodels' root finder stops at its own tolerance (about 6e-5 relative at n = 5000) ...
    assert mine == pytest.approx(theirs, rel=1e-4)
    # ... ours is the tighter root: statsmodels' own power function gives 80% at it
    assert TT.power(mine, nobs, 0.05) == pytest.approx(0.8, abs=1e-9)


@pytest.mark.parametrize("effect", [0.1, 0.25, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("power", [0.8, 0.9])
def test_required_n_is_statsmodels(effect: float, power: float) -> None:
    mine = ttest_nobs(effect, 0.05, power)
    assert mine == pytest.approx(TT.solve_power(effect_size=effect, alpha=0.05, power=power), rel=1e-5)
    assert TT.power(effect, mine, 0.05) == pytest.approx(power, abs=1e-9)


def test_score_detectability_scales_the_t_test_by_the_wilcoxon_efficiency() -> None:
    sd, n = 0.2, 40
    d = score_detectability(n, sd, 0.05, "observed")
    assert d.reachable and d.spread == sd
    assert d.mdd == pytest.approx(TT.solve_power(nobs=n * WILCOXON_ARE, alpha=0.05, power=0.8) * sd, rel=1e-5)
    n_t = TT.solve_power(effect_size=0.05 / sd, alpha=0.05, power=0.8)
    assert d.n_required == math.ceil(n_t / WILCOXON_ARE)
    assert d.more_cases == d.n_required - n
    # more cases, smaller detectable difference
    assert score_detectability(4 * n, sd).mdd < d.mdd / 1.9


def test_large_n_tends_to_the_normal_test() -> None:
    """For large n the paired t power approaches the z-test's (statsmodels' NormalIndPower, one sample)."""
    z = NormalIndPower()
    for n in (2000, 20000):
        e = ttest_effect(n)
        assert e == pytest.approx(z.solve_power(nobs1=n, alpha=0.05, power=0.8, ratio=0), rel=2e-3)


# ---- McNemar --------------------------------------------------------------------------------------------

def connor(diff: float, n: float, pd: float, alpha: float = 0.05) -> float:
    """Connor (1987): power of McNemar's test, normal approximation, written independently with scipy.stats."""
    za = stats.norm.ppf(1 - alpha / 2)
    return float(stats.norm.cdf((abs(diff) * math.sqrt(n) - za * math.sqrt(pd)) / math.sqrt(pd - diff**2)))


@pytest.mark.parametrize("diff, n, pd", [(0.1, 100, 0.3), (0.05, 500, 0.2), (0.2, 30, 0.4), (-0.15, 60, 0.5)])
def test_mcnemar_power_is_the_closed_form(diff: float, n: int, pd: float) -> None:
    assert mcnemar_power(diff, n, pd) == pytest.approx(connor(diff, n, pd), rel=1e-12)


@pytest.mark.parametrize("n, pd", [(24, 0.4), (50, 0.3), (200, 0.1), (1000, 0.5)])
def test_mcnemar_mdd_and_n_invert_the_power(n: int, pd: float) -> None:
    mdd = mcnemar_mdd(n, pd)
    assert mdd is not None and 0 < mdd <= pd
    assert connor(mdd, n, pd) == pytest.approx(0.8, abs=1e-10)
    assert mcnemar_n(mdd, pd) == pytest.approx(n, rel=1e-10)


def test_mcnemar_mdd_none_when_nothing_can_be_detected() -> None:
    assert mcnemar_mdd(3, 1.0) is None  # no root: 3 pairs are too few at any discordance
    assert mcnemar_mdd(30, 0.05) is None  # the root would exceed the discordance itself
    assert mcnemar_mdd(24, 0.25) is None  # even all 6 changes one way have only ~71% power
    assert connor(0.25, 24, 0.25) < 0.8


def test_mcnemar_approximation_holds_by_simulation() -> None:
    """At the n the formula asks for, the McNemar z-test rejects about 80% of the time (seeded)."""
    rng = np.random.default_rng(20261123)
    pd, diff = 0.3, 0.1
    p01, p10 = (pd + diff) / 2, (pd - diff) / 2  # system right and baseline wrong / the reverse
    n = math.ceil(mcnemar_n(diff, pd))
    counts = rng.multinomial(n, [p10, p01, 1 - pd], size=40000)
    b, c = counts[:, 0].astype(float), counts[:, 1].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(b + c > 0, (c - b) / np.sqrt(b + c), 0.0)
    rejected = np.mean(np.abs(z) > stats.norm.ppf(0.975))
    assert rejected == pytest.approx(mcnemar_power(diff, n, pd), abs=0.015)
    assert rejected == pytest.approx(0.8, abs=0.02)
    # the exact test the report runs is a little more conservative, never more powerful by much
    exact = np.mean([mcnemar_exact(int(x), int(y)) < 0.05 for x, y in zip(b[:4000], c[:4000])])
    assert 0.65 < exact < 0.82


def test_exact_floor_is_where_the_exact_tests_can_first_reject() -> None:
    k = exact_floor(0.05)
    assert k == 6
    assert mcnemar_exact(0, k) < 0.05 <= mcnemar_exact(0, k - 1)
    assert wilcoxon_pratt([0.0] * k, [1.0] * k) < 0.05 <= wilcoxon_pratt([0.0] * (k - 1), [1.0] * (k - 1))
    assert exact_floor(0.01) == 8


def brute_force_exact_power(n: int, p10: float, p01: float, alpha: float) -> float:
    """Every (b, c, rest) of the multinomial, statsmodels' exact McNemar p-value on each."""
    from statsmodels.stats.contingency_tables import mcnemar

    total = 0.0
    for b in range(n + 1):
        for c in range(n + 1 - b):
            prob = (math.factorial(n) / (math.factorial(b) * math.factorial(c) * math.factorial(n - b - c))
                    * p10**b * p01**c * (1 - p10 - p01) ** (n - b - c))
            if mcnemar([[0, b], [c, 0]], exact=True).pvalue < alpha:
                total += prob
    return total


@pytest.mark.parametrize("n, p10, p01, alpha", [(6, 0.0, 0.5, 0.05), (12, 0.1, 0.3, 0.05), (20, 0.05, 0.35, 0.05 / 4),
                                                (25, 0.2, 0.2, 0.05), (18, 0.0, 0.6, 0.01), (3, 0.1, 0.9, 0.05)])
def test_exact_mcnemar_power_is_the_enumeration(n: int, p10: float, p01: float, alpha: float) -> None:
    assert mcnemar_exact_power(n, p10, p01, alpha) == pytest.approx(brute_force_exact_power(n, p10, p01, alpha),
                                                                    rel=1e-9, abs=1e-12)


def test_thresholds_are_where_the_exact_p_first_drops_below_alpha() -> None:
    for alpha in (0.05, 0.05 / 3, 0.01):
        for d, k in enumerate(mcnemar_thresholds(60, alpha)):
            if k >= 0:
                assert mcnemar_exact(k, d - k) < alpha
            assert mcnemar_exact(k + 1, d - k - 1) >= alpha or k + 1 > d - k - 1


def test_normal_approximation_falls_short_of_exact_power() -> None:
    """The issue's finding: the old MDD (normal approximation at 0.05) has 74-79% exact power, far less at the
    Holm level of a family of 12; the exact MDD has 80% at the level it is sized for."""
    for n, pd in ((100, 0.3), (60, 0.4), (200, 0.2)):
        approx = mcnemar_mdd(n, pd)
        assert approx is not None
        assert 0.70 < mcnemar_exact_power(n, (pd - approx) / 2, (pd + approx) / 2) < 0.8
        assert mcnemar_exact_power(n, (pd - approx) / 2, (pd + approx) / 2, 0.05 / 12) < 0.5
        for alpha in (0.05, 0.05 / 12):
            exact = mcnemar_exact_mdd(n, pd, alpha)
            assert exact is not None and exact > approx
            assert mcnemar_exact_power(n, (pd - exact) / 2, (pd + exact) / 2, alpha) == pytest.approx(0.8, abs=1e-6)


def test_binary_detectability() -> None:
    tiny = binary_detectability(3, 0, 3, 1.0, "observed")
    assert not tiny.reachable and tiny.mdd is None and "3 pairs" in tiny.note
    assert tiny.n_required is not None and tiny.n_required >= 6  # even an all-way change needs the floor
    # no case changed: not the floor 6/40 labelled "80% power", but the difference an all-one-way change
    # detects with 80% exact power
    none_changed = binary_detectability(40, 0, 0)
    assert none_changed.mdd is not None and none_changed.mdd > 6 / 40 and "no case changed" in none_changed.note.lower()
    assert mcnemar_exact_power(40, 0.0, none_changed.mdd) == pytest.approx(0.8, abs=1e-6)
    d = binary_detectability(100, 12, 18, 0.06, "observed")
    assert d.spread == pytest.approx(0.3)
    assert d.mdd == pytest.approx(mcnemar_exact_mdd(100, 0.3))
    p10, p01 = (0.3 - 0.06) / 2, (0.3 + 0.06) / 2
    assert d.n_required is not None and d.more_cases == d.n_required - 100
    assert mcnemar_exact_power(d.n_required, p10, p01) >= 0.8 > mcnemar_exact_power(d.n_required - 1, p10, p01)
    # at the Holm level of a family of 12: a larger minimum detectable difference, more cases
    holm = binary_detectability(100, 12, 18, 0.06, "observed", alpha=0.05 / 12)
    assert holm.mdd is not None and d.mdd is not None and holm.mdd > d.mdd and holm.floor == exact_floor(0.05 / 12) == 9
    assert holm.n_required is not None and holm.n_required > d.n_required
