"""Report statistics checked against statsmodels and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evalkit.stats import (
    MeanEstimate,
    apply_holm,
    compare_binary,
    compare_scores,
    holm,
    mcnemar_exact,
    mean_ci,
    rate,
    wilcoxon_pratt,
    wilson_interval,
)

GRID = [(k, n) for n in (1, 2, 3, 5, 7, 10, 13, 20, 31, 47, 60) for k in range(n + 1)]


@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_wilson_equals_statsmodels(confidence):
    for k, n in GRID:
        low, high = wilson_interval(k, n, confidence)
        ref_low, ref_high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
        assert low == pytest.approx(ref_low, abs=1e-9), (k, n)
        assert high == pytest.approx(ref_high, abs=1e-9), (k, n)


def test_wilson_empty_and_rate_model():
    assert wilson_interval(0, 0) is None
    empty = rate(0, 0)
    assert (empty.value, empty.low, empty.high) == (None, None, None)
    r = rate(3, 10)
    assert r.value == 0.3 and r.method == "wilson"
    assert r.low < 0.3 < r.high
    with pytest.raises(ValueError):
        wilson_interval(5, 3)


def test_mcnemar_equals_statsmodels():
    for b in range(0, 61, 3):
        for c in range(0, 61 - b, 2):
            ref = mcnemar([[7, b], [c, 4]], exact=True).pvalue
            assert mcnemar_exact(b, c) == pytest.approx(ref, abs=1e-9), (b, c)
    assert mcnemar_exact(0, 0) == 1.0
    # hand check: b=0, c=5 -> 2 * 0.5**5
    assert mcnemar_exact(0, 5) == pytest.approx(2 * 0.5**5)


def test_holm_equals_statsmodels():
    rng = np.random.default_rng(3)
    cases = [
        [0.01, 0.04, 0.03, 0.005],
        [0.5, 0.5, 0.5],
        [0.001],
        [0.2, 0.01, 0.01, 0.9, 0.04, 0.03],
        list(rng.uniform(0, 0.2, size=15)),
    ]
    for ps in cases:
        ref = multipletests(ps, method="holm")[1]
        assert holm(ps) == pytest.approx(list(ref), abs=1e-12)


def test_holm_none_passes_through_and_is_capped():
    out = holm([0.3, None, 0.01, 0.4])
    ref = multipletests([0.3, 0.01, 0.4], method="holm")[1]
    assert out[1] is None
    assert [out[0], out[2], out[3]] == pytest.approx(list(ref))
    assert all(p <= 1.0 for p in out if p is not None)
    assert holm([]) == []
    assert holm([None]) == [None]


def test_mean_ci_fallbacks():
    assert mean_ci([]) == MeanEstimate(n=0, value=None, low=None, high=None, method="n<3: no interval")
    two = mean_ci([1.0, 2.0])
    assert (two.value, two.low, two.high, two.method) == (1.5, None, None, "n<3: no interval")
    same = mean_ci([0.4] * 7)
    assert (same.value, same.low, same.high, same.method) == (0.4, 0.4, 0.4, "degenerate: all values equal")


def test_mean_ci_bca_and_percentile_fallback_are_finite():
    r = mean_ci([0.1, 0.5, 0.2, 0.9, 0.4, 0.3, 0.8])
    assert r.method == "bca"
    assert r.low < r.value < r.high
    # with a single resample BCa's bias correction is infinite: the fallback says so
    bad = mean_ci([1.0, 2.0, 3.0, 4.0], n_resamples=1, seed=0)
    assert bad.method == "percentile (bca failed)"
    assert bad.low is not None and math.isfinite(bad.low) and math.isfinite(bad.high)
    assert "NaN" not in bad.model_dump_json()


def test_mean_ci_is_deterministic_per_seed():
    x = list(np.random.default_rng(7).normal(size=200))
    a, b = mean_ci(x, seed=1), mean_ci(x, seed=1)
    assert a.model_dump() == b.model_dump()
    assert a.model_dump_json() == b.model_dump_json()
    assert mean_ci(x, seed=2).low != a.low


def test_mean_ci_rejects_nan():
    with pytest.raises(ValueError, match="finite"):
        mean_ci([1.0, float("nan"), 2.0])


def test_wilcoxon_pratt():
    assert wilcoxon_pratt([1, 2, 3], [1, 2, 3]) == 1.0
    assert wilcoxon_pratt([1.0], [2.0]) is None
    assert wilcoxon_pratt([], []) is None
    from scipy.stats import wilcoxon

    x = [0.1, 0.4, 0.3, 0.9, 0.5, 0.5, 0.2, 0.8]
    y = [0.2, 0.6, 0.3, 0.95, 0.7, 0.55, 0.4, 0.9]
    assert wilcoxon_pratt(x, y) == pytest.approx(wilcoxon(x, y, zero_method="pratt").pvalue)
    with pytest.raises(ValueError, match="length"):
        wilcoxon_pratt([1, 2], [1])


def test_compare_binary_counts_discordant_pairs():
    base = [True, True, False, False, True, False]
    other = [True, False, True, True, True, True]
    cmp = compare_binary("resolved", "kai-baseline", "kai-full", base, other)
    assert cmp.discordant == (1, 3)
    assert cmp.n_pairs == 6 and cmp.kind == "binary" and cmp.test == "mcnemar-exact"
    assert cmp.baseline_value == pytest.approx(3 / 6)
    assert cmp.system_value == pytest.approx(5 / 6)
    assert cmp.difference.value == pytest.approx(2 / 6)
    assert cmp.p_value == pytest.approx(mcnemar([[2, 1], [3, 0]], exact=True).pvalue)
    assert cmp.p_holm is None and cmp.significant is None
    with pytest.raises(ValueError, match="resolved"):
        compare_binary("resolved", "a", "b", [True], [True, False])


def test_compare_scores_and_apply_holm():
    base = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.5]
    better = [b + 0.3 for b in base]
    same = list(base)
    c1 = compare_scores("codebleu", "base", "better", base, better)
    c2 = compare_scores("codebleu", "base", "same", base, same)
    c3 = compare_scores("codebleu", "base", "one", [0.1], [0.2])
    assert c1.difference.value == pytest.approx(0.3)
    assert c2.p_value == 1.0 and c3.p_value is None
    out = apply_holm([c1, c2, c3])
    ref = multipletests([c1.p_value, c2.p_value], method="holm")[1]
    assert out[0].p_holm == pytest.approx(ref[0]) and out[1].p_holm == pytest.approx(ref[1])
    assert out[0].significant is True and out[1].significant is False
    assert out[2].p_holm is None and out[2].significant is None
    # the inputs are left untouched
    assert c1.p_holm is None
