"""Report statistics checked against statsmodels and hand-computed cases."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator

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

@pytest.fixture
def frozen_heap() -> Iterator[None]:
    """statsmodels' Holm (`multipletests(method="holm")`, statsmodels 0.15) runs `gc.collect()` on every call: a
    full collection of the test process's heap, 0.2 s in a run of this file alone and seconds in a worker of the
    whole suite (120 families took 2027 s there). `gc.freeze()` moves the objects that exist now out of the
    collector's sight, so each collection sees only what the test made since; the oracle's numbers are the same."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


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


def test_holm_equals_statsmodels(frozen_heap):
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
    same = mean_ci([0.4] * 7)  # no zero-width interval: none at all
    assert (same.value, same.low, same.high, same.method) == (0.4, None, None, "degenerate: all values equal")


def test_mean_ci_bca_and_percentile_fallback_are_finite():
    r = mean_ci([0.1, 0.5, 0.2, 0.9, 0.4, 0.3, 0.8], method="bca")
    assert r.method == "bca"
    assert r.low < r.value < r.high
    # with a single resample BCa's bias correction is infinite: the fallback says so
    bad = mean_ci([1.0, 2.0, 3.0, 4.0], n_resamples=1, seed=0, method="bca")
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


# --- the scipy.stats-free implementations against scipy.stats itself (the reference) ------------

def _scipy_mean_ci(x, n_resamples=2000, seed=0, confidence=0.95):
    """What mean_ci computed when it called scipy.stats.bootstrap (same fallback rule)."""
    import warnings

    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((np.asarray(x, dtype=float),), np.mean, method="BCa",
                              n_resamples=n_resamples, confidence_level=confidence,
                              random_state=np.random.default_rng(seed), vectorized=True)
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if math.isfinite(low) and math.isfinite(high):
        return low, high, "bca"
    alpha = 1.0 - confidence
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    low = float(np.percentile(dist, 100 * alpha / 2))
    high = float(np.percentile(dist, 100 * (1 - alpha / 2)))
    return low, high, "percentile (bca failed)"


def _mean_ci_cases():
    rng = np.random.default_rng(20240601)
    kinds = ["normal", "lognormal", "few levels", "binary diffs", "one outlier", "rounded"]
    for i in range(150):
        n = 3 + (i * 197) // 149  # n = 3 .. 200
        kind = kinds[i % len(kinds)]
        if kind == "normal":
            x = rng.normal(size=n)
        elif kind == "lognormal":  # heavily skewed
            x = rng.lognormal(sigma=2.0, size=n)
        elif kind == "few levels":  # many ties
            x = rng.integers(0, 3, size=n).astype(float)
        elif kind == "binary diffs":  # what compare_binary feeds in
            x = rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.1, 0.8, 0.1])
        elif kind == "one outlier":
            x = np.zeros(n)
            x[int(rng.integers(0, n))] = 1.0
        else:
            x = np.round(rng.random(n), 1)
        if np.ptp(x) == 0:
            x[0] += 1.0
        resamples = [2000, 2000, 999, 50, 3, 1][i % 6]
        confidence = [0.95, 0.9, 0.99][i % 3]
        yield x.tolist(), resamples, int(rng.integers(0, 10_000)), confidence


def test_mean_ci_equals_scipy_bootstrap_bca():
    methods = set()
    for x, resamples, seed, confidence in _mean_ci_cases():
        got = mean_ci(x, n_resamples=resamples, seed=seed, confidence=confidence, method="bca")
        low, high, method = _scipy_mean_ci(x, resamples, seed, confidence)
        assert got.method == method, (len(x), resamples, seed)
        assert got.low == pytest.approx(low, rel=1e-12, abs=1e-12), (len(x), resamples, seed)
        assert got.high == pytest.approx(high, rel=1e-12, abs=1e-12), (len(x), resamples, seed)
        assert got.value == pytest.approx(float(np.mean(x)), rel=1e-15)
        methods.add(method)
    # both the BCa interval and the percentile fallback were exercised
    assert methods == {"bca", "percentile (bca failed)"}


@pytest.mark.parametrize("x", [
    [1.0, 1.0, 1.0 + 2**-52],
    [1.0, 1.0, 1.0, 1.0 + 2**-52],
    [0.1, 0.1, 0.1, 0.1 + 2**-55],
    [1e16, 1e16, 1e16 + 2.0],
])
def test_mean_ci_fallback_where_scipy_bca_is_nan_at_default_resamples(x):
    # all-but-one equal values, the odd one one ulp off: the leave-one-out means are all equal, so
    # BCa's acceleration is 0/0 and scipy's interval is NaN; the percentile interval is used
    import warnings

    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((np.asarray(x),), np.mean, method="BCa", n_resamples=2000,
                              random_state=np.random.default_rng(0), vectorized=True)
    assert math.isnan(res.confidence_interval.low)
    got = mean_ci(x, method="bca")
    assert got.method == "percentile (bca failed)"
    assert (got.low, got.high) == (float(np.percentile(res.bootstrap_distribution, 2.5)),
                                   float(np.percentile(res.bootstrap_distribution, 97.5)))
    assert (got.low, got.high, got.method) == _scipy_mean_ci(x)


def test_mean_ci_rejects_zero_resamples():
    with pytest.raises(ValueError, match="n_resamples"):
        mean_ci([1.0, 2.0, 4.0], n_resamples=0)


def test_wilson_equals_scipy_binomtest():
    from scipy import stats

    pairs = [(k, n) for n in range(1, 41) for k in range(n + 1)]
    pairs += [(k, n) for n in (97, 500, 1000, 12345) for k in (0, 1, n // 3, n // 2, n - 1, n)]
    for confidence in (0.95, 0.9, 0.99, 0.5):
        for k, n in pairs:
            ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
            low, high = wilson_interval(k, n, confidence)
            assert low == pytest.approx(float(ci.low), rel=1e-12, abs=0), (k, n, confidence)
            assert high == pytest.approx(float(ci.high), rel=1e-12, abs=0), (k, n, confidence)
    assert wilson_interval(0, 1)[0] == 0.0 and wilson_interval(1, 1)[1] == 1.0
    assert wilson_interval(np.int64(3), np.int64(10)) == wilson_interval(3, 10)
    with pytest.raises(TypeError):
        wilson_interval(2.5, 10)


def test_mcnemar_equals_scipy_binom_cdf():
    from scipy import stats

    rng = np.random.default_rng(11)
    cases = [(b, c) for b in range(0, 40) for c in range(0, 40)]
    for total in list(range(40, 400, 7)) + [999, 1000, 2047, 2500, 3000, 4321]:
        cases += [(int(b), total - int(b)) for b in rng.integers(0, total + 1, size=12)]
        cases += [(total // 2, total - total // 2), (0, total), (1, total - 1)]
    tiny = 0
    for b, c in cases:
        if b + c == 0:
            continue
        ref = float(min(1.0, 2.0 * stats.binom.cdf(min(b, c), b + c, 0.5)))
        assert mcnemar_exact(b, c) == pytest.approx(ref, rel=1e-12, abs=0), (b, c)
        tiny += ref < 1e-100
    assert tiny > 10  # deep tails were compared too, relatively


def _wilcoxon_cases():
    rng = np.random.default_rng(99)
    for i in range(330):
        n = 2 + (i * 118) // 329  # n = 2 .. 120
        kind = i % 6
        if kind == 0:  # continuous: no ties, no zeros
            x, y = rng.normal(size=n), rng.normal(size=n) + 0.3
        elif kind == 1:  # coarse grid: ties and zeros
            x, y = rng.integers(0, 5, size=n) / 4, rng.integers(0, 5, size=n) / 4
        elif kind == 2:  # zeros, otherwise continuous
            x = rng.normal(size=n)
            y = x.copy()
            moved = rng.random(n) < 0.7
            y[moved] += rng.normal(size=int(moved.sum()))
        elif kind == 3:  # ties, few zeros
            x, y = np.round(rng.normal(size=n), 1), np.round(rng.normal(size=n) + 0.2, 1)
        elif kind == 4:  # half the pairs identical
            x, y = rng.random(n), rng.random(n)
            y[: n // 2] = x[: n // 2]
        else:  # a shift that gives small p-values
            x = rng.random(n)
            y = x + 0.2 + rng.normal(scale=0.1, size=n)
        if np.all(x == y):
            y[0] += 1.0
        yield x, y


def _wilcoxon_regime(x, y):
    d = np.asarray(x) - np.asarray(y)
    ties_or_zeros = bool(np.any(d == 0)) or np.unique(np.abs(d)).size < d.size
    if d.size > 50:
        return "normal approximation"
    if not ties_or_zeros:
        return "exact"
    return "permutation" if d.size <= 13 else "normal approximation"


def test_wilcoxon_pratt_equals_scipy_wilcoxon():
    from scipy.stats import wilcoxon

    regimes: dict[str, int] = {}
    for x, y in _wilcoxon_cases():
        ref = float(wilcoxon(x, y, zero_method="pratt").pvalue)
        got = wilcoxon_pratt(x.tolist(), y.tolist())
        assert got == pytest.approx(ref, rel=1e-12, abs=0), (x.size, _wilcoxon_regime(x, y))
        regime = _wilcoxon_regime(x, y)
        regimes[regime] = regimes.get(regime, 0) + 1
    # every branch of scipy's method="auto" was compared, small n with ties and zeros included
    assert set(regimes) == {"exact", "permutation", "normal approximation"}
    assert min(regimes.values()) >= 20, regimes


def test_wilcoxon_pratt_small_hand_checked_cases():
    from scipy.stats import wilcoxon

    # two pairs, one zero difference: the 4 sign flips give r+ in {0, 2, 0, 2} -> p = 1
    assert wilcoxon_pratt([1.0, 2.0], [1.0, 3.0]) == 1.0
    # 5 positive untied differences: exact p = 2 / 2**5
    assert wilcoxon_pratt([1, 2, 3, 4, 5], [0, 0, 0, 0, 0]) == pytest.approx(2 / 32, rel=1e-15)
    # the same with one tie: the permutation test over 2**5 flips gives the same 2 / 32
    assert wilcoxon_pratt([1, 1, 3, 4, 5], [0, 0, 0, 0, 0]) == pytest.approx(2 / 32, rel=1e-15)
    x, y = [0.5, 0.5, 0.2, 0.9, 0.1, 0.3], [0.5, 0.7, 0.2, 0.4, 0.35, 0.3]
    ref = wilcoxon(x, y, zero_method="pratt").pvalue
    assert wilcoxon_pratt(x, y) == pytest.approx(ref, rel=1e-12)


def test_stats_never_import_scipy_stats():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from evalkit.stats import mean_ci, wilcoxon_pratt, rate, mcnemar_exact, wilson_interval\n"
        "assert mean_ci([1.0, 2.0, 3.0, 5.0, 8.0], method='bca').method == 'bca'\n"
        "assert mean_ci([1.0, 1.0, 1.0 + 2**-52], method='bca').method == 'percentile (bca failed)'\n"
        "wilcoxon_pratt([1, 2, 3, 4.0], [2, 2, 5, 1.0])\n"  # ties and a zero: permutation
        "wilcoxon_pratt([1, 2, 3, 4.5], [2, 4, 6, 1.0])\n"  # exact
        "wilcoxon_pratt(list(range(60)), [v * 1.1 for v in range(60)])\n"  # normal approximation
        "rate(3, 10); wilson_interval(0, 1)\n"
        "assert 'numpy' in sys.modules and 'scipy' not in sys.modules, 'BCa means and rates need no scipy'\n"
        "mcnemar_exact(3, 50)\n"
        "assert mean_ci([1.0, 2.0, 3.0, 5.0, 8.0]).method == 'studentized bootstrap or t, the wider'\n"
        "assert 'scipy.special' in sys.modules\n"
        "heavy = [m for m in ('scipy.stats', 'scipy.optimize', 'scipy.sparse', 'scipy.spatial',\n"
        "                     'scipy.linalg') if m in sys.modules]\n"
        "print(heavy)\n"
        "assert 'scipy.stats' not in sys.modules\n"
        "assert not heavy, heavy\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_normal_cdf_and_quantile_equal_scipy_special():
    # the stdlib stand-ins for scipy.special.ndtr / ndtri used by the bootstrap, Wilson and Wilcoxon
    from scipy.special import ndtr, ndtri

    from evalkit.stats import _ndtr, _ndtri

    for x in np.linspace(-3, 3, 6001):  # where the bootstrap's and Wilson's probabilities live
        assert _ndtr(float(x)) == pytest.approx(float(ndtr(x)), rel=3e-15, abs=0), x  # measured 1.5e-15
    for x in np.concatenate([np.linspace(-37, 37, 20001), [0.0, -0.0, 1e-300]]):  # the far lower tail
        assert _ndtr(float(x)) == pytest.approx(float(ndtr(x)), rel=1e-13, abs=0), x  # keeps its precision
    assert _ndtr(math.inf) == 1.0 and _ndtr(-math.inf) == 0.0 and math.isnan(_ndtr(math.nan))
    probs = np.concatenate([np.linspace(1e-9, 1 - 1e-9, 20001), np.logspace(-300, -1, 500),
                            [0.025, 0.975, 0.5, 0.005, 0.995]])
    for p in probs:
        assert _ndtri(float(p)) == pytest.approx(float(ndtri(p)), rel=5e-15, abs=1e-300), p
    assert (_ndtri(0.0), _ndtri(1.0)) == (-math.inf, math.inf)
    assert math.isnan(_ndtri(1.5)) and math.isnan(_ndtri(-0.1)) and math.isnan(_ndtri(math.nan))


def test_p_min_is_the_most_extreme_outcome_of_the_pairs():
    """p_min: McNemar with every changed case one way (statsmodels), Wilcoxon with every sign positive (scipy)."""
    from scipy.stats import wilcoxon

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 40))
        base = rng.random(n) < 0.5
        other = rng.random(n) < 0.6
        c = compare_binary("resolved", "a", "b", base.tolist(), other.tolist())
        k = sum(c.discordant)
        assert c.p_min == pytest.approx(mcnemar([[0, k], [0, 0]], exact=True).pvalue if k else 1.0, rel=1e-12)
        assert c.p_min <= c.p_value
        x = np.round(rng.normal(size=n), 1)
        y = np.where(rng.random(n) < 0.3, x, np.round(x + rng.normal(size=n), 1))
        s = compare_scores("codebleu", "a", "b", x.tolist(), y.tolist())
        d = np.abs(y - x)
        expected = 1.0 if np.all(d == 0) else wilcoxon(d, zero_method="pratt").pvalue
        assert s.p_min == pytest.approx(expected, rel=1e-9, abs=1e-15) and s.p_min <= s.p_value + 1e-15


def test_testable_is_whether_p_min_could_survive_holm(frozen_heap):
    """Brute force: testable iff Holm (statsmodels) of the family with this p-value replaced by p_min rejects;
    alpha_holm is alpha / (m - rank)."""
    rng = np.random.default_rng(11)
    for _ in range(120):
        m = int(rng.integers(1, 8))
        comps = []
        for _ in range(m):
            n = int(rng.integers(1, 14))
            base = (rng.random(n) < 0.4).tolist()
            other = (rng.random(n) < 0.7).tolist()
            comps.append(compare_binary("resolved", "a", "b", base, other))
        out = apply_holm(comps)
        ps = [c.p_value for c in comps]
        order = sorted(range(m), key=lambda i: (ps[i], i))
        for i, c in enumerate(out):
            trial = [min(c.p_min, p) if j == i else p for j, p in enumerate(ps)]
            reject = multipletests(trial, alpha=0.05, method="holm")[0][i]
            assert c.testable == bool(reject)
            assert c.alpha_holm == pytest.approx(0.05 / (m - order.index(i)))
            if c.significant:
                assert c.testable


def test_no_test_is_not_testable():
    out = apply_holm([compare_scores("codebleu", "a", "b", [0.1], [0.9])])
    assert out[0].p_value is None and out[0].testable is False and out[0].alpha_holm is None


def _studentized_reference(x, resamples, seed, confidence):
    """The bootstrap-t interval written out resample by resample (the same seeded indices)."""
    x = np.asarray(x, dtype=float)
    n = x.size
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n), dtype="int64", endpoint=False)
    m, se = x.mean(), x.std(ddof=1) / math.sqrt(n)
    ts = []
    for row in idx:
        xb = x[row]
        sb = xb.std(ddof=1) / math.sqrt(n)
        if sb > 1e-9 * se:
            ts.append((xb.mean() - m) / sb)
    a = (1 - confidence) / 2
    lo_q, hi_q = np.quantile(np.asarray(ts), [a, 1 - a], method="linear")
    return m - hi_q * se, m - lo_q * se


def test_studentized_bootstrap_equals_a_written_out_reference():
    rng = np.random.default_rng(3)
    for i in range(40):
        n = int(rng.integers(3, 40))
        x = np.round(rng.lognormal(size=n), int(rng.integers(0, 3))).tolist()
        if len(set(x)) < 2:
            continue
        resamples, seed, confidence = [2000, 500, 999][i % 3], int(rng.integers(0, 1000)), [0.95, 0.9][i % 2]
        got = mean_ci(x, n_resamples=resamples, seed=seed, confidence=confidence, method="studentized")
        if got.method != "studentized bootstrap":
            continue
        low, high = _studentized_reference(x, resamples, seed, confidence)
        assert got.low == pytest.approx(low, rel=1e-10, abs=1e-12)
        assert got.high == pytest.approx(high, rel=1e-10, abs=1e-12)
        assert got.low < got.value < got.high


def test_t_interval_equals_scipy():
    from scipy import stats

    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(3, 60))
        x = rng.exponential(size=n)
        got = mean_ci(x.tolist(), method="t")
        low, high = stats.t.interval(0.95, n - 1, loc=x.mean(), scale=stats.sem(x))
        assert (got.method, got.low, got.high) == ("t", pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))


def test_no_zero_width_interval_and_approximate_below_ten():
    from evalkit.stats import APPROXIMATE_BELOW

    for method in ("skew-aware", "studentized-or-t", "studentized", "bca", "t"):
        same = mean_ci([3.0] * 12, method=method)
        assert same.low is None and same.high is None and same.method == "degenerate: all values equal"
    small = mean_ci([1.0, 2.0, 4.0, 8.0, 3.0] * 5)
    big = mean_ci([1.0, 2.0, 4.0, 8.0, 3.0] * 6)
    assert small.approximate and not big.approximate and APPROXIMATE_BELOW == 30
    assert small.method == "studentized bootstrap or t, the wider"
    assert small.low < small.high and big.low < big.high


def test_pass_at_k_and_pass_hat_k_against_the_closed_form_and_enumeration():
    """pass@k = 1 - C(n-c, k) / C(n, k), pass^k = C(c, k) / C(n, k) (closed forms, math.comb), and both the
    chance over every k-subset of the n samples (itertools.combinations) that one / all are correct."""
    from itertools import combinations

    from evalkit.stats import pass_at_k, pass_hat_k

    for n in range(1, 11):
        for c in range(n + 1):
            correct = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(combinations(correct, k))
                any_rate = sum(any(s) for s in subsets) / len(subsets)
                all_rate = sum(all(s) for s in subsets) / len(subsets)
                assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)
                assert pass_at_k(n, c, k) == pytest.approx(any_rate, abs=1e-12)
                assert pass_hat_k(n, c, k) == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-12)
                assert pass_hat_k(n, c, k) == pytest.approx(all_rate, abs=1e-12)
    assert pass_at_k(200, 13, 1) == pytest.approx(13 / 200)  # pass@1 is the share correct
    assert pass_at_k(200, 13, 100) == pytest.approx(1 - math.comb(187, 100) / math.comb(200, 100), rel=1e-10)
    with pytest.raises(ValueError):
        pass_at_k(5, 6, 1)
    with pytest.raises(ValueError):
        pass_hat_k(5, 2, 0)


def test_the_default_interval_is_the_wider_of_studentized_and_t():
    from evalkit.stats import MEAN_INTERVAL

    assert MEAN_INTERVAL == "skew-aware"
    rng = np.random.default_rng(9)
    for _ in range(30):
        x = rng.lognormal(size=int(rng.integers(5, 40))).tolist()
        both = mean_ci(x, method="studentized-or-t")
        s, t = mean_ci(x, method="studentized"), mean_ci(x, method="t")
        assert both.method == "studentized bootstrap or t, the wider"
        assert both.low == min(s.low, t.low) and both.high == max(s.high, t.high)


def test_patch_scorer_counts_resolving_samples_for_pass_k():
    """The patch scorer: k samples, c of them resolved (the harness's verdict first), into pass@1 / pass@k / pass^k."""
    from evalkit.artifacts import ExecutionArtifact, OutputArtifact, Sample
    from evalkit.outcomes import SandboxRun
    from evalkit.kinds.patch.score import pass_k_metrics
    from evalkit.stats import pass_at_k, pass_hat_k

    def run(resolved, harness=None):
        return SandboxRun(status="completed", reason="", isolation="local", resolved=resolved, harness_resolved=harness)

    out = OutputArtifact(system="s", suite="p", case_id="c",
                         samples=[Sample(), Sample(), Sample(status="error"), Sample()])
    ex = ExecutionArtifact(system="s", suite="p", case_id="c",
                           runs=[run(True), run(False, harness=True), run(True), run(True, harness=False)])
    m = pass_k_metrics(out, ex)  # resolving: 0 and 1 (harness); 2 failed; 3 not (harness)
    assert m == {"pass_at_1": 0.5, "pass_at_k": pass_at_k(4, 2, 4), "pass_hat_k": pass_hat_k(4, 2, 4)}
    assert (m["pass_at_k"], m["pass_hat_k"]) == (1.0, 0.0)
    assert pass_k_metrics(OutputArtifact(system="s", suite="p", case_id="c", samples=[Sample()]), ex) == {}


def test_near_ties_and_tiny_n_do_not_blow_up_the_default_interval():
    """0.8 and 0.8 + 1 ulp are equal for the bootstrap-t; with 3 values the default is t alone (the demo printed
    [-4.1e13, 0.5] for three values before)."""
    from scipy import stats

    x = [0.8, 0.8 + 2**-52, 0.7]
    got = mean_ci(x)
    low, high = stats.t.interval(0.95, 2, loc=np.mean(x), scale=stats.sem(x))
    assert got.method == "t" and got.low == pytest.approx(low) and got.high == pytest.approx(high)
    y = [0.8, 0.8 + 2**-52, 0.8, 0.8 + 2**-53, 0.7, 0.8]
    s = mean_ci(y, method="studentized")
    assert s.low is not None and s.high is not None and -1 < s.low < s.high < 2


def test_a_fixed_family_counts_members_without_a_p_value_as_one(frozen_heap):
    """apply_holm(family=m): Holm as statsmodels' over the p-values padded with ones to m members."""
    rng = np.random.default_rng(13)
    for _ in range(100):
        k = int(rng.integers(1, 6))
        comps = [compare_binary("resolved", "a", "b", (rng.random(30) < 0.3).tolist(), (rng.random(30) < 0.7).tolist())
                 for _ in range(k)]
        m = k + int(rng.integers(0, 6))
        out = apply_holm(comps, family=m)
        ps = [c.p_value for c in comps] + [1.0] * (m - k)
        reject, adjusted, _, _ = multipletests(ps, alpha=0.05, method="holm")
        for c, a in zip(out, adjusted[:k]):
            assert c.holm_family == m and c.p_holm == pytest.approx(a, rel=1e-12)
    assert apply_holm(comps, family=1)[0].holm_family == len(comps)  # never below the comparisons with a p


def _hall_reference(x, resamples, seed, confidence):
    """Hall's (1992) transformed bootstrap-t written out resample by resample (the same seeded indices), the
    transformation's inverse found by bisection rather than the closed form."""
    x = np.asarray(x, dtype=float)
    n = x.size

    def skew(v):
        s = v.std(ddof=1)
        return float(np.mean((v - v.mean()) ** 3)) / s**3

    def g(t, a):
        return t + a * t * t / 3 + a * a * t**3 / 27 + a / 6

    def g_inverse(q, a):
        lo, hi = -1e6, 1e6
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if g(mid, a) < q else (lo, mid)
        return (lo + hi) / 2

    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n), dtype="int64", endpoint=False)
    m, se = x.mean(), x.std(ddof=1) / math.sqrt(n)
    gs = []
    for row in idx:
        xb = x[row]
        sb = xb.std(ddof=1) / math.sqrt(n)
        if sb > 1e-9 * se:
            gs.append(g((xb.mean() - m) / sb, skew(xb) / math.sqrt(n)))
    a = (1 - confidence) / 2
    lo_q, hi_q = np.quantile(np.asarray(gs), [a, 1 - a], method="linear")
    a_hat = skew(x) / math.sqrt(n)
    return m - g_inverse(hi_q, a_hat) * se, m - g_inverse(lo_q, a_hat) * se


def test_skew_aware_adds_halls_bootstrap_t_on_skewed_samples_as_a_written_out_reference():
    """The skew-aware interval: the studentized-or-t union, widened by Hall's bootstrap-t where g1 > SKEWED_ABOVE
    (checked against `_hall_reference`), the union alone elsewhere (left skew too); never narrower than the union."""
    from evalkit.stats import SKEWED_ABOVE

    rng = np.random.default_rng(21)
    skewed = 0
    for i in range(40):
        n = int(rng.integers(5, 30))
        x = ([rng.lognormal(size=n), rng.normal(size=n), -rng.lognormal(size=n)][i % 3]).tolist()
        resamples, seed, confidence = [2000, 999][i % 2], int(rng.integers(0, 1000)), [0.95, 0.9][i % 2]
        got = mean_ci(x, n_resamples=resamples, seed=seed, confidence=confidence, method="skew-aware")
        union = mean_ci(x, n_resamples=resamples, seed=seed, confidence=confidence, method="studentized-or-t")
        v = np.asarray(x)
        g1 = float(np.mean((v - v.mean()) ** 3)) / v.std(ddof=1) ** 3
        if g1 <= SKEWED_ABOVE:
            assert got == union
            continue
        skewed += 1
        h_low, h_high = _hall_reference(x, resamples, seed, confidence)
        assert got.method == "studentized bootstrap, Hall's bootstrap-t or t, the widest"
        assert got.low == pytest.approx(min(union.low, h_low), rel=1e-9, abs=1e-12)
        assert got.high == pytest.approx(max(union.high, h_high), rel=1e-9, abs=1e-12)
        assert got.low <= union.low and got.high >= union.high
    assert skewed >= 8


def test_a_skew_aware_interval_resamples_once_and_keeps_no_resamples(monkeypatch):
    """The studentized bootstrap and Hall's bootstrap-t of one skewed sample share one draw of the resample matrix
    (the same seeded indices: drawing twice cost ~40 % of a 1,000-case interval), with the interval unchanged; a draw is
    not shared across intervals (another sample, seed or size draws anew) nor kept after one (160 MB at 10,000 cases)."""
    import evalkit.stats as stats

    drawn: list[int] = []
    real = np.random.default_rng

    def counting_rng(seed):
        drawn.append(seed)
        return real(seed)

    x = np.random.default_rng(4).lognormal(size=200).tolist()
    before = mean_ci(x, n_resamples=999, seed=7, method="skew-aware")
    monkeypatch.setattr(np.random, "default_rng", counting_rng)  # stats imports numpy inside its functions
    got = mean_ci(x, n_resamples=999, seed=7, method="skew-aware")
    assert got == before and got.method == "studentized bootstrap, Hall's bootstrap-t or t, the widest"
    assert drawn == [7]
    assert not stats._SHARED_DRAWS.open and stats._SHARED_DRAWS.drawn is None
    drawn.clear()
    mean_ci(x, n_resamples=999, seed=8, method="skew-aware")
    mean_ci(x[:-1], n_resamples=999, seed=8, method="skew-aware")
    assert drawn == [8, 8]


def test_summarize_reuses_one_index_matrix_for_intervals_of_equal_size(monkeypatch):
    """Within `reusing_resample_indices` intervals and paired tests of n values, one seed and one resample count draw
    the index matrix once, every result as drawn anew; another n or seed draws; nothing is kept after it, nor past
    KEPT_INDEX_BYTES."""
    import evalkit.stats as stats
    from evalkit.stats import compare_scores, reusing_resample_indices

    rng = np.random.default_rng(12)
    samples = [rng.lognormal(size=80).tolist(), rng.normal(size=80).tolist(), rng.exponential(size=80).tolist(),
               rng.lognormal(size=81).tolist()]
    methods = ["skew-aware", "studentized-or-t", "bca"]
    expected = [mean_ci(x, n_resamples=999, seed=5, method=m) for x in samples for m in methods]
    paired = compare_scores("m", "a", "b", samples[0], samples[2], seed=5)

    drawn: list[int] = []
    real = np.random.default_rng

    def counting_rng(seed):
        drawn.append(seed)
        return real(seed)

    monkeypatch.setattr(np.random, "default_rng", counting_rng)
    with reusing_resample_indices():
        got = [mean_ci(x, n_resamples=999, seed=5, method=m) for x in samples for m in methods]
        assert compare_scores("m", "a", "b", samples[0], samples[2], seed=5) == paired
        assert got == expected
        assert compare_scores("m", "a", "b", samples[1], samples[2], seed=5).p_value is not None
        assert set(stats._KEPT_INDICES.kept) == {(80, 999, 5), (81, 999, 5), (80, 2000, 5)}  # the test's own count
    assert drawn.count(5) == 3, drawn  # once each: 999 resamples of 80 and of 81 values, the paired test's 2,000
    assert stats._KEPT_INDICES.kept == {} and not stats._KEPT_INDICES.open
    drawn.clear()
    monkeypatch.setattr(stats, "KEPT_INDEX_BYTES", 1000)  # smaller than one matrix: none is kept, each is drawn
    with reusing_resample_indices():
        assert [mean_ci(x, n_resamples=999, seed=5, method="bca") for x in samples[:2]] == expected[2:6:3]
        assert stats._KEPT_INDICES.kept == {}
    assert drawn == [5, 5]


def test_skew_aware_intervals_in_threads_equal_the_same_intervals_one_after_another():
    """doit runs actions in threads: the draws one interval shares are that thread's, never another interval's."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(9)
    samples = [rng.lognormal(sigma=1.0 + i / 10, size=60 + i).tolist() for i in range(12)]
    alone = [mean_ci(x, n_resamples=499, seed=i, method="skew-aware") for i, x in enumerate(samples)]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            together = list(pool.map(lambda ix: mean_ci(ix[1], n_resamples=499, seed=ix[0], method="skew-aware"),
                                     enumerate(samples)))
            assert together == alone
    assert sum(m.method.startswith("studentized bootstrap, Hall's") for m in alone) >= 6
