"""The statistics of the report: rates with Wilson intervals, bootstrap means, paired tests, Holm.

Conventions: nothing here returns NaN (a value that cannot be computed is ``None`` and the model
says why in ``method``); resampling is seeded, so the same input gives the same bytes out.
"""

from __future__ import annotations

import math
import operator
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from statistics import NormalDist
from typing import TYPE_CHECKING, Literal

from evalkit.models import Model

if TYPE_CHECKING:
    import numpy as np

# numpy and scipy.special are imported inside the functions that need them, and scipy.stats is
# never imported at runtime: importing it costs most of a second, more than the statistics of a
# whole report. The normal distribution's cdf and quantile (scipy.special's ndtr and ndtri) come from
# the standard library (`_ndtr`, `_ndtri`): scipy.special alone costs ~0.3 s to import, which a rerun
# that recomputes one bootstrap mean would otherwise pay.
# The functions below replicate, operation for operation, the scipy.stats 1.17 calls they stand for
# (binomtest(...).proportion_ci("wilson"), bootstrap(method="BCa"), binom.cdf,
# wilcoxon(zero_method="pratt")); tests/test_stats.py checks them against scipy.stats itself.
# A summarize whose aggregates all come from its cache imports neither numpy nor scipy.

ALPHA = 0.05
"""Family-wise significance level applied to Holm-adjusted p-values."""

Verdict = Literal["better", "worse", "no detectable difference", "not testable"]
"""What a paired comparison says, in the one vocabulary of tables, decision summary, console and report.json:
significantly better or worse after Holm; testable but not significant; or no outcome of these pairs could
have been significant (too few changed cases or nonzero differences, or no test at all)."""

MeanMethod = Literal["studentized bootstrap, Hall's bootstrap-t or t, the widest",
                     "studentized bootstrap or t, the wider", "bca", "studentized bootstrap", "t", "degenerate: all values equal", "n<3: no interval",
                     "percentile (bca failed)", "percentile (studentized failed)"]

IntervalMethod = Literal["skew-aware", "studentized-or-t", "studentized", "bca", "t"]
"""The interval methods of mean_ci."""

MEAN_INTERVAL: IntervalMethod = "skew-aware"
"""mean_ci's method: the one whose worst shortfall below nominal 95% coverage at n >= 10 benchmarks/coverage.py
measured smallest on the Kai per-case judge scores and synthetic skewed sets (docs/guide/metrics.md, "Intervals that
cover"): the studentized bootstrap or t, the wider, widened on right-skewed samples by Hall's bootstrap-t. No method
tried kept within 2.5 points everywhere (lognormal at n 10-15 and the Kai effectiveness scores at n 20 fall short)."""

SKEWED_ABOVE = 1.0
"""Sample skewness (g1, the moment estimate m3 / s^3 with s the sd of ddof 1) above which the "skew-aware" interval
also takes Hall's (1992) transformed bootstrap-t: right-skewed samples, whose mean's interval needs a longer upper
arm. Measured by benchmarks/coverage.py: on lognormal data it adds 0.4-2 points of coverage at n 8-25; taken for
|g1| > 1 it also widened the left-skewed Kai average scores' intervals 1.35-1.5x and covered no more."""

STUDENTIZED_FROM = 5
"""With fewer values the default interval is t alone: the bootstrap-t's t* has no usable distribution with 3 or 4
values (near-ties give t* of 1e13 and bounds to match), and the coverage benchmark starts at n = 5."""

APPROXIMATE_BELOW = 30
"""Below this many values the chosen method's coverage fell more than 2.5 points short of nominal on some
real-shaped population in benchmarks/coverage.py (lognormal: 89-93% at n 5-25; the Kai effectiveness scores:
90.5% at n 20): the interval is marked approximate."""


_SQRT_HALF = math.sqrt(0.5)


def _ndtr(x: float) -> float:
    """The standard normal cdf, computed as Cephes' ``ndtr`` (scipy.special.ndtr) computes it: from erf
    near 0 and from erfc in the tails (so a far tail keeps its relative precision). Within ~1e-15
    relative of scipy's on [-8, 8] (tests/test_stats.py)."""
    if math.isnan(x):
        return math.nan
    z = x * _SQRT_HALF
    if abs(z) < _SQRT_HALF:
        return 0.5 + 0.5 * math.erf(z)
    tail = 0.5 * math.erfc(abs(z))
    return 1.0 - tail if z > 0 else tail


def _ndtri(p: float) -> float:
    """The standard normal quantile (scipy.special.ndtri): -inf at 0, inf at 1, NaN outside [0, 1];
    inside, statistics.NormalDist.inv_cdf (Wichura's AS241, ~1e-16 relative)."""
    if p == 0:
        return -math.inf
    if p == 1:
        return math.inf
    if not 0 < p < 1:
        return math.nan

    return NormalDist().inv_cdf(p)


class RateEstimate(Model):
    """A proportion k/n with its Wilson score interval."""

    k: int
    """Number of successes."""
    n: int
    """Number of trials."""
    value: float | None
    """k / n, or None when n is 0."""
    low: float | None
    """Lower bound of the interval, None when n is 0."""
    high: float | None
    """Upper bound of the interval, None when n is 0."""
    confidence: float = 0.95
    """Confidence level of the interval."""
    method: Literal["wilson"] = "wilson"
    """How the interval was computed."""


class MeanEstimate(Model):
    """A mean with a seeded bootstrap confidence interval (or the reason there is none)."""

    n: int
    """Number of values."""
    value: float | None
    """The sample mean, None when there are no values."""
    low: float | None
    """Lower bound of the interval, None when no interval can be given."""
    high: float | None
    """Upper bound of the interval, None when no interval can be given."""
    confidence: float = 0.95
    """Confidence level of the interval."""
    method: MeanMethod
    """How the interval was obtained: bootstrap-t, BCa, t, or which explicit fallback was used."""
    approximate: bool = False
    """Fewer values than APPROXIMATE_BELOW: the coverage benchmark found the interval's coverage off nominal by
    more than 2.5 points at such n, so it is approximate."""


class PairedComparison(Model):
    """One metric of one system against the baseline, on the cases both were scored on."""

    metric: str
    """Metric name."""
    baseline: str
    """Name of the baseline system."""
    system: str
    """Name of the system compared with the baseline."""
    n_pairs: int
    """Number of cases scored for both systems."""
    kind: Literal["binary", "score"]
    """Binary outcomes (pass/fail) or continuous scores."""
    baseline_value: float | None
    """Baseline mean (a rate for binary metrics), None without pairs."""
    system_value: float | None
    """System mean (a rate for binary metrics), None without pairs."""
    difference: MeanEstimate
    """Mean of per-pair differences system minus baseline, with a seeded bootstrap interval."""
    test: Literal["mcnemar-exact", "wilcoxon-pratt"]
    """The paired test used."""
    p_value: float | None
    """Unadjusted two-sided p-value, None when the test is not applicable."""
    p_holm: float | None = None
    """Holm-adjusted p-value within the family given to apply_holm; None before that."""
    significant: bool | None = None
    """p_holm < ALPHA; None until apply_holm ran or when there is no p-value."""
    discordant: tuple[int, int] | None = None
    """Binary only: (b, c) = (baseline right and system wrong, baseline wrong and system right)."""
    holm_family: int | None = None
    """Number of comparisons (with a p-value) Holm adjusted over together; None before apply_holm."""
    sd_difference: float | None = None
    """Sample SD (n - 1) of the per-pair differences, for power (evalkit.power); None with fewer than 2 pairs."""
    p_min: float | None = None
    """The smallest p-value the test can give on these pairs (every changed case, or every nonzero difference,
    going the same way, with the magnitudes observed); None when there is no test."""
    alpha_holm: float | None = None
    """The level Holm held this comparison to: ALPHA / (m - j) at its rank j (0-based) among the family's m
    p-values; None without a p-value or before apply_holm."""
    testable: bool | None = None
    """Whether any outcome of these pairs could have been significant after Holm in this family (p_min in
    place of p_value); False when there is no test; None before apply_holm."""
    verdict: Verdict | None = None
    """better / worse / no detectable difference / not testable (evalkit.report.verdict); None until the report
    layer sets it."""
    mdd: float | None = None
    """No detectable difference only: the minimum detectable difference (80% power) at alpha_holm, in the
    metric's units; None otherwise or when none can be given."""


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval for k successes out of n trials; None when n == 0.

    The arithmetic of scipy.stats ``binomtest(k, n).proportion_ci(method="wilson")`` (Newcombe 1998,
    no continuity correction): the bound is exactly 0 when k == 0 and exactly 1 when k == n.
    """
    k, n = operator.index(k), operator.index(n)
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return None
    if not 0 <= confidence <= 1:
        raise ValueError(f"confidence must lie in [0, 1], got {confidence!r}")
    p = k / n
    z = _ndtri(0.5 + 0.5 * confidence)
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    q = 1 - p
    delta = z / denom * math.sqrt(4 * n * p * q + z**2)
    low = 0.0 if k == 0 else center - delta
    high = 1.0 if k == n else center + delta
    return float(low), float(high)


def rate(k: int, n: int, confidence: float = 0.95) -> RateEstimate:
    """k/n with its Wilson interval (all None when n == 0)."""
    ci = wilson_interval(k, n, confidence)
    return RateEstimate(
        k=k,
        n=n,
        value=k / n if n else None,
        low=ci[0] if ci else None,
        high=ci[1] if ci else None,
        confidence=confidence,
    )


def _finite_array(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"{what}: expected a flat sequence of numbers")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what}: values must be finite numbers (no NaN/inf)")
    return x


def _quantile_linear(sorted_values: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """scipy.stats.quantile(method="linear") of sorted 1-D values; NaN for a prob off [0, 1]."""
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    p = np.asarray(probs, dtype=float)
    bad = (p > 1) | (p < 0) | np.isnan(p)
    p = np.where(bad, 0.5, p)
    n = np.asarray([float(sorted_values.size)])
    jg = p * n + (1 - p)
    jp1 = jg // 1
    j = jp1 - 1
    g = jg % 1
    g[j < 0] = 0
    j = np.clip(j, 0.0, n - 1)
    jp1 = np.clip(jp1, 0.0, n - 1)
    res = (1 - g) * sorted_values[j.astype(np.int64)] + g * sorted_values[jp1.astype(np.int64)]
    res[bad] = np.nan
    return res


def _bca_bootstrap(x: np.ndarray, n_resamples: int, seed: int, confidence: float
                   ) -> tuple[float, float, np.ndarray]:
    """(low, high, bootstrap distribution) of the mean, as scipy.stats.bootstrap(method="BCa").

    The same draws as ``bootstrap((x,), np.mean, vectorized=True, random_state=default_rng(seed))``
    with the default batch (one batch): an (n_resamples, n) matrix of ``Generator.integers(0, n)``
    indices; then the same BCa arithmetic (Efron & Tibshirani 14.3, 15.4): z0 from the 'mean'
    percentile of the estimate, the acceleration from the leave-one-out means, and scipy.stats'
    linear quantile of the bootstrap distribution. A bound may be NaN (e.g. z0 infinite).
    """
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    n = int(x.size)
    theta_hat_b = np.mean(x[_indices(n, n_resamples, seed)], axis=-1)

    alpha = (1 - confidence) / 2
    # z0: percentile of the estimate in the bootstrap distribution, ties counted half
    theta_hat = np.mean(x, axis=-1)
    below = np.count_nonzero(theta_hat_b < theta_hat) + np.count_nonzero(theta_hat_b <= theta_hat)
    z0_hat = _ndtri(below / (2 * n_resamples))
    # acceleration from the jackknife (leave-one-out) means
    keep = np.ones((n, n), dtype=bool)
    np.fill_diagonal(keep, False)
    jack_idx = np.broadcast_to(np.arange(n), (n, n))[keep].reshape((n, n - 1))
    theta_hat_i = np.mean(x[jack_idx], axis=-1)
    n_f = float(n)
    theta_hat_dot = np.mean(theta_hat_i, axis=-1, keepdims=True)
    u = (n_f - 1) * (theta_hat_dot - theta_hat_i)
    num = np.sum(u**3, axis=-1) / n_f**3
    den = np.sum(u**2, axis=-1) / n_f**2
    a_hat = 1 / 6 * num / den ** (3 / 2)

    z_alpha = _ndtri(alpha)
    z_1alpha = -z_alpha
    num1 = z0_hat + z_alpha
    alpha_1 = _ndtr(float(z0_hat + num1 / (1 - a_hat * num1)))
    num2 = z0_hat + z_1alpha
    alpha_2 = _ndtr(float(z0_hat + num2 / (1 - a_hat * num2)))

    ci = _quantile_linear(np.sort(theta_hat_b), np.stack((alpha_1, alpha_2), axis=-1))
    return float(ci[0]), float(ci[1]), theta_hat_b


class _SharedDraws(threading.local):
    """While `_sharing_draws` is open in this thread: the one set of draws made in it (``drawn``), so the studentized
    bootstrap and Hall's bootstrap-t of one skew-aware interval resample once (the same seed gives both the same
    indices). Outside it ``open`` is False and nothing is kept: an n_resamples x n matrix (160 MB at 10,000 cases) is
    not kept past the interval that drew it. Per thread: doit runs actions in threads."""

    open = False
    drawn: tuple[tuple[bytes, int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None


_SHARED_DRAWS = _SharedDraws()


@contextmanager
def _sharing_draws() -> Iterator[None]:
    _SHARED_DRAWS.open, _SHARED_DRAWS.drawn = True, None
    try:
        yield
    finally:
        _SHARED_DRAWS.open, _SHARED_DRAWS.drawn = False, None


class _KeptIndices(threading.local):
    """While `reusing_resample_indices` is open in this thread: the resample index matrices drawn in it, by (n,
    n_resamples, seed), most recent last, at most `KEPT_INDEX_BYTES` in all."""

    open = False
    kept: dict[tuple[int, int, int], np.ndarray]

    def __init__(self) -> None:
        self.kept = {}


_KEPT_INDICES = _KeptIndices()
KEPT_INDEX_BYTES = 256 << 20
"""The most `reusing_resample_indices` keeps (a 2,000 x 1,000 matrix is 16 MB; one of 2,000 x 10,000 is kept as int32,
80 MB)."""


@contextmanager
def reusing_resample_indices() -> Iterator[None]:
    """Within it (in this thread), a bootstrap of n values with the seed and resample count of an earlier one reuses
    its index matrix: the seeded draw depends on nothing else, so the values are the ones drawing again would give.
    summarize asks for many intervals of equal n (every metric of a suite, the paired differences of its systems),
    and drawing 2,000 x 1,000 indices was most of an interval's time after the arithmetic."""
    was = _KEPT_INDICES.open
    _KEPT_INDICES.open = True
    try:
        yield
    finally:
        _KEPT_INDICES.open = was
        if not was:
            _KEPT_INDICES.kept = {}


def _indices(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """An n_resamples x n matrix of seeded ``Generator.integers(0, n)`` (scipy.stats.bootstrap's draws), kept for
    reuse while `reusing_resample_indices` is open."""
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    key = (n, n_resamples, seed)
    kept = _KEPT_INDICES.kept
    found = kept.get(key) if _KEPT_INDICES.open else None
    if found is not None:
        kept[key] = kept.pop(key)  # most recent last
        return found
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n), dtype="int64", endpoint=False)
    if not _KEPT_INDICES.open:
        return idx
    if idx.nbytes > KEPT_INDEX_BYTES and n <= np.iinfo(np.int32).max:
        idx = idx.astype(np.int32)  # the same values in half the bytes (numpy gathers by int32 a little slower)
    idx.flags.writeable = False
    if idx.nbytes <= KEPT_INDEX_BYTES:
        kept[key] = idx
        while sum(a.nbytes for a in kept.values()) > KEPT_INDEX_BYTES:
            kept.pop(next(iter(kept)))
    return idx


def _draws(x: np.ndarray, n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bootstrap's resamples of ``x`` (an n_resamples x n matrix of seeded ``Generator.integers(0, n)`` indices,
    as `_bca_bootstrap` draws them), with each resample's mean and sd (ddof 1); drawn once per `_sharing_draws`."""
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    sharing = _SHARED_DRAWS.open
    key = (x.tobytes(), n_resamples, seed) if sharing else None  # (a copy of the values: only when it is of use)
    shared = _SHARED_DRAWS.drawn
    if shared is not None and shared[0] == key:
        return shared[1]
    xb = x[_indices(int(x.size), n_resamples, seed)]
    drawn = (xb, np.mean(xb, axis=-1), np.std(xb, axis=-1, ddof=1))
    if key is not None:
        _SHARED_DRAWS.drawn = (key, drawn)
    return drawn


def _studentized_bootstrap(x: np.ndarray, n_resamples: int, seed: int, confidence: float
                           ) -> tuple[float, float, np.ndarray]:
    """(low, high) of the bootstrap-t (studentized) interval of the mean (Efron & Tibshirani 12.5).

    The same resample indices as `_bca_bootstrap` (seeded Generator.integers); each resample's
    t* = (mean* - mean) / (sd* / sqrt(n)); the interval is [mean - q(1 - a/2) se, mean - q(a/2) se] with se
    the sample's sd / sqrt(n) and q the linear quantiles of t*. A resample whose values are all equal has
    sd* 0 and no t*: it is left out (on discrete scores, e.g. nine 8s and one 7, a third of the resamples
    miss the 7; counting them as infinite t* would make the interval infinite). Both bounds are NaN when
    fewer than half the resamples have a t*. Returns (low, high, the resamples' means).
    """
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    n = int(x.size)
    _, mb, sdb = _draws(x, n_resamples, seed)
    sb = sdb / math.sqrt(n)
    m = float(np.mean(x))
    se = float(np.std(x, ddof=1)) / math.sqrt(n)
    keep = sb > 1e-9 * se  # all equal, or equal but for rounding (0.8 and 0.8 + 1 ulp): no usable t*
    t = (mb - m)[keep] / sb[keep]
    if 2 * t.size < n_resamples:
        return math.nan, math.nan, mb
    alpha = (1 - confidence) / 2
    q = _quantile_linear(np.sort(t), np.asarray([alpha, 1 - alpha]))
    return m - float(q[1]) * se, m - float(q[0]) * se, mb


def _skewness(x: np.ndarray) -> float:
    """m3 / s^3: the third central moment (over n) over the cube of the sd of ddof 1; 0 when all values are equal."""
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    s = float(np.std(x, ddof=1))
    return float(np.mean((x - np.mean(x)) ** 3)) / s**3 if s > 0 else 0.0


def _hall_inverse(q: np.ndarray, a: np.ndarray) -> np.ndarray:
    """The inverse of Hall's transformation g(t) = t + a t^2 / 3 + a^2 t^3 / 27 + a / 6 (increasing in t):
    g(t) = ((1 + a t / 3)^3 - 1) / a + a / 6, so t = 3 / a ((1 + a (q - a / 6))^(1/3) - 1); q - a / 6 when a is 0."""
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    small = np.abs(a) < 1e-12
    safe = np.where(small, 1.0, a)
    return np.where(small, q - a / 6, 3 / safe * (np.cbrt(1 + safe * (q - safe / 6)) - 1))


def _hall_bootstrap_t(x: np.ndarray, n_resamples: int, seed: int, confidence: float) -> tuple[float, float]:
    """(low, high) of the bootstrap-t of Hall's (1992) skewness-removing transformation of the t statistic.

    The same resample indices as `_studentized_bootstrap`; each resample's t* = (mean* - mean) / (sd* / sqrt(n)) and
    a* = g1* / sqrt(n) (g1 = m3 / s^3, `_skewness`) give g(t*) = t* + a* t*^2 / 3 + a*^2 t*^3 / 27 + a* / 6; with
    q the linear quantiles of g(t*), the interval is [mean - se g^-1(q(1 - a/2); a), mean - se g^-1(q(a/2); a)],
    a = g1 / sqrt(n) of the sample. Resamples with all values equal are left out as in the studentized bootstrap;
    NaN bounds when fewer than half remain.
    """
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    n = int(x.size)
    xb, mb, sdb = _draws(x, n_resamples, seed)
    m = float(np.mean(x))
    sd = float(np.std(x, ddof=1))
    se = sd / math.sqrt(n)
    keep = sdb / math.sqrt(n) > 1e-9 * se
    kept = int(np.count_nonzero(keep))
    if 2 * kept < n_resamples:
        return math.nan, math.nan
    if kept < keep.size:  # (a boolean index copies the n_resamples x n values even when it keeps them all)
        xb, mb, sdb = xb[keep], mb[keep], sdb[keep]
    t = (mb - m) / (sdb / math.sqrt(n))
    dev = xb - mb[:, None]
    cubes = dev * dev
    cubes *= dev  # dev**3 is numpy's float pow, 20x slower; in place, the same products without a third array
    ab = np.mean(cubes, axis=-1) / sdb**3 / math.sqrt(n)
    g = t + ab * t**2 / 3 + ab**2 * t**3 / 27 + ab / 6
    alpha = (1 - confidence) / 2
    q = _quantile_linear(np.sort(g), np.asarray([alpha, 1 - alpha]))
    a = np.full(2, _skewness(x) / math.sqrt(n))
    t_q = _hall_inverse(q, a)
    return m - float(t_q[1]) * se, m - float(t_q[0]) * se


_T_QUANTILES: dict[tuple[int, float], float] = {}
"""(degrees of freedom, probability) -> scipy.special.stdtrit of them, computed in this process or remembered from an
earlier one (`remember_t_quantiles`, summarize's statistics cache): scipy.special costs ~0.2 s of CPU to import, and a
rerun that recomputes a mean's interval (one edited case changes a system's wall_s) asks for the same quantile (the
same number of cases) as the run before."""


def t_quantile(df: int, p: float) -> float:
    """scipy.special.stdtrit(df, p) as a float, the same number whether computed now or remembered."""
    key = (int(df), float(p))
    got = _T_QUANTILES.get(key)
    if got is None:
        from scipy.special import stdtrit  # deferred: scipy (~0.2 s), only when the quantile is not remembered

        got = _T_QUANTILES[key] = float(stdtrit(key[0], key[1]))
    return got


def t_quantiles() -> list[list[float]]:
    """Every t quantile this process knows, as [df, p, quantile] rows (JSON keeps each float exactly)."""
    return [[df, p, q] for (df, p), q in sorted(_T_QUANTILES.items())]


def remember_t_quantiles(rows: object) -> None:
    """Take [df, p, quantile] rows written by `t_quantiles` under the same code and scipy (the caller checks:
    summarize's cache salt); anything malformed is left out (it is computed again when needed)."""
    if not isinstance(rows, list):
        return
    for row in rows:
        if (isinstance(row, list) and len(row) == 3 and isinstance(row[0], int) and not isinstance(row[0], bool)
                and all(isinstance(v, float) for v in row[1:])):
            _T_QUANTILES.setdefault((row[0], row[1]), row[2])


def _t_interval(x: np.ndarray, confidence: float) -> tuple[float, float]:
    """mean +- t(n - 1, 1 - a/2) sd / sqrt(n)."""
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    n = int(x.size)
    m = float(np.mean(x))
    half = t_quantile(n - 1, 0.5 + confidence / 2) * float(np.std(x, ddof=1)) / math.sqrt(n)
    return m - half, m + half


def mean_ci(
    values: Sequence[float],
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    method: IntervalMethod = MEAN_INTERVAL,
) -> MeanEstimate:
    """Mean with a confidence interval, with explicit fallbacks.

    ``method``: "skew-aware" (the default: the union of the studentized bootstrap and the t interval, each bound
    the wider of the two, and when the sample's skewness g1 exceeds SKEWED_ABOVE also of Hall's transformed
    bootstrap-t; the method whose worst under-coverage benchmarks/coverage.py measured smallest on real-shaped
    data), "studentized-or-t" (the union without Hall's), "studentized" (bootstrap-t), "bca" (the bias-corrected and accelerated
    bootstrap, scipy.stats ``bootstrap(method="BCa")`` computed without scipy.stats) or "t" (Student's t).
    A studentized bootstrap that fails falls back to t in the union, and below STUDENTIZED_FROM values the
    default is t alone.

    - n < 3: no interval (low/high None); with n == 0 the value is None too.
    - all values equal: no interval either (low/high None): every method would print [v, v], a zero-width
      "interval" that claims a certainty n equal values do not give.
    - a bootstrap gives a non-finite bound (BCa: the bootstrap distribution lies entirely on one side of
      the estimate; bootstrap-t: too many resamples with all values equal): the percentile interval of the
      same resamples is used instead.
    - ``approximate`` is set below APPROXIMATE_BELOW values, where the benchmark found the coverage more than
      2.5 points short of nominal on some population.
    """
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    x = _finite_array(values, "mean_ci")
    n = int(x.size)
    value = float(x.mean()) if n else None
    if n < 3:
        return MeanEstimate(n=n, value=value, low=None, high=None, confidence=confidence,
                            method="n<3: no interval")
    if float(np.ptp(x)) == 0.0:
        return MeanEstimate(n=n, value=float(x[0]), low=None, high=None, confidence=confidence,
                            method="degenerate: all values equal")
    if operator.index(n_resamples) < 1:
        raise ValueError(f"mean_ci: n_resamples must be a positive integer, got {n_resamples!r}")
    approximate = n < APPROXIMATE_BELOW
    if method == "t":
        low, high = _t_interval(x, float(confidence))
        return MeanEstimate(n=n, value=value, low=low, high=high, confidence=confidence, method="t",
                            approximate=approximate)
    if method in ("studentized-or-t", "skew-aware") and n < STUDENTIZED_FROM:
        low, high = _t_interval(x, float(confidence))
        return MeanEstimate(n=n, value=value, low=low, high=high, confidence=confidence, method="t",
                            approximate=approximate)
    if method == "studentized-or-t":
        boot = mean_ci(values, n_resamples, seed, confidence, "studentized")
        t_low, t_high = _t_interval(x, float(confidence))
        if boot.method != "studentized bootstrap" or boot.low is None or boot.high is None:
            return MeanEstimate(n=n, value=value, low=t_low, high=t_high, confidence=confidence, method="t",
                                approximate=approximate)
        return MeanEstimate(n=n, value=value, low=min(boot.low, t_low), high=max(boot.high, t_high),
                            confidence=confidence, method="studentized bootstrap or t, the wider",
                            approximate=approximate)
    if method == "skew-aware":
        if _skewness(x) <= SKEWED_ABOVE:
            return mean_ci(values, n_resamples, seed, confidence, "studentized-or-t")
        with _sharing_draws():  # Hall's bootstrap-t resamples as the studentized bootstrap did: drawn once
            union = mean_ci(values, n_resamples, seed, confidence, "studentized-or-t")
            if union.low is None or union.high is None:
                return union
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                h_low, h_high = _hall_bootstrap_t(x, operator.index(n_resamples), seed, float(confidence))
        if not (math.isfinite(h_low) and math.isfinite(h_high)):
            return union
        return MeanEstimate(n=n, value=value, low=min(union.low, h_low), high=max(union.high, h_high),
                            confidence=confidence, method="studentized bootstrap, Hall's bootstrap-t or t, the widest",
                            approximate=approximate)

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # failure (inf/NaN along the way) is detected from the result and reported in `method`.
        warnings.simplefilter("ignore")
        used: MeanMethod
        if method == "studentized":
            low, high, dist = _studentized_bootstrap(x, operator.index(n_resamples), seed, float(confidence))
            used = "studentized bootstrap"
        else:
            low, high, dist = _bca_bootstrap(x, operator.index(n_resamples), seed, float(confidence))
            used = "bca"
        if not (math.isfinite(low) and math.isfinite(high)):
            alpha = 1.0 - confidence
            low = float(np.percentile(dist, 100 * alpha / 2))
            high = float(np.percentile(dist, 100 * (1 - alpha / 2)))
            used = "percentile (bca failed)" if method == "bca" else "percentile (studentized failed)"
    return MeanEstimate(n=n, value=value, low=low, high=high, confidence=confidence, method=used,
                        approximate=approximate)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value on the discordant pairs b and c (1.0 when b + c == 0).

    Same formula as statsmodels' ``mcnemar(exact=True)``: min(1, 2 * Binom(b + c, 1/2).cdf(min(b, c))).
    The binomial cdf is the Boost one behind scipy.stats.binom.cdf
    (scipy.special._ufuncs._binom_cdf); should a scipy no longer ship that private name, the public
    scipy.special.bdtr is used (it agrees to ~1e-11 relative).
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    if b + c == 0:
        return 1.0
    try:
        # a private name (stubs do not list it): the fallback below covers its absence
        from scipy.special._ufuncs import _binom_cdf as binom_cdf  # pyright: ignore[reportAttributeAccessIssue]  # deferred: scipy (~0.3 s), only here
    except ImportError:  # pragma: no cover - private name of scipy 1.17
        from scipy.special import bdtr as binom_cdf  # deferred: scipy (~0.3 s), only here

    cdf = float(binom_cdf(float(math.floor(min(b, c))), float(b + c), 0.5))
    return float(min(1.0, 2.0 * min(1.0, max(0.0, cdf))))


def _wilcoxon_exact_pmf(n: int) -> np.ndarray:
    """Null pmf of the signed-rank sum r+ for n untied, nonzero differences (r+ = 0 .. n(n+1)/2)."""
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    c = np.ones(1, dtype=np.float64)
    for k in range(1, n + 1):
        prev_c = c
        c = np.zeros(k * (k + 1) // 2 + 1, dtype=np.float64)
        m = len(prev_c)
        c[:m] = prev_c * 0.5
        c[-m:] += prev_c * 0.5
    return c


def _wilcoxon_pratt_pvalue(d: np.ndarray) -> float:
    """Two-sided p-value of scipy.stats.wilcoxon(d, zero_method="pratt") with its defaults.

    Defaults of scipy 1.17: correction=False, method="auto", which means: n > 50 -> normal
    approximation; else no ties and no zeros -> exact null distribution; else n <= 13 -> an exact
    sign-flip permutation test (all 2**n flips, since 2**13 < 9999 resamples); else normal
    approximation. The normal approximation carries Pratt's (Cureton's) zero adjustment and the
    tie correction, without continuity correction.
    """
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    n = int(d.size)
    abs_d = np.abs(d)
    # average ranks of |d| and tie counts, as scipy.stats._stats_py._rankdata
    order = np.argsort(abs_d, kind="stable")
    ys = abs_d[order]
    first = np.concatenate([np.ones(1, dtype=bool), ys[:-1] != ys[1:]])
    starts = np.arange(n)[first]
    counts = np.diff(starts, append=np.asarray([n], dtype=starts.dtype))
    ordinal = np.arange(1, n + 1, dtype=np.float64)
    rank_of_group = ordinal[first] + (counts.astype(np.float64) - 1) / 2
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = np.repeat(rank_of_group, counts)
    ties = np.zeros(n, dtype=np.float64)
    ties[first] = counts.astype(np.float64)

    is_zero = d == 0
    n_zero_int = int(np.count_nonzero(is_zero))
    has_ties = bool(np.any(ties == 0))
    r_plus = np.sum((d > 0).astype(np.float64) * ranks, axis=-1)

    count = np.float64(n)
    mn = count * (count + 1.0) * 0.25
    se = count * (count + 1.0) * (2.0 * count + 1.0)
    n_zero = np.float64(n_zero_int)
    mn = mn - n_zero * (n_zero + 1.0) * 0.25
    se = se - n_zero * (n_zero + 1.0) * (2.0 * n_zero + 1.0)
    if n_zero_int:
        ties[0] = 0.0  # the zeros (lowest |d|) are not part of the tie correction
    tie_correct = np.sum(ties**3 - ties, axis=-1)
    se = np.sqrt((se - tie_correct / 2) / 24)

    if n > 50:
        method = "asymptotic"
    elif not (has_ties or n_zero_int > 0):
        method = "exact"
    elif n <= 13:
        method = "permutation"
    else:
        method = "asymptotic"

    if method == "asymptotic":
        z = (r_plus - mn) / se
        return float(2 * _ndtr(-abs(float(z))))
    if method == "exact":
        pmfs = _wilcoxon_exact_pmf(n)
        mean = n * (n + 1) / 4

        def cdf(k: int) -> float:
            return float(pmfs[:k + 1].sum()) if k <= mean else float(1 - pmfs[k + 1:].sum())

        def sf(k: int) -> float:
            return float(pmfs[k:].sum()) if k <= mean else float(1 - pmfs[:k].sum())

        # r+ is integral here (no ties, no zeros); scipy's floor/ceil kept for the record
        p = 2 * np.minimum(sf(int(np.floor(r_plus))), cdf(int(np.ceil(r_plus))))
        return float(np.clip(p, 0, 1))
    # Permutation: r+ of every one of the 2**n sign flips. Ranks are multiples of 1/2, so work with
    # doubled (integer) ranks; a zero contributes nothing whatever its sign, so each subset of the
    # nonzero ranks stands for 2**n_zero flips. All sums are exact, as are scipy's (its tolerance
    # 1e-14 * |r+| cannot bridge the 1/2 between two distinct values).
    doubled = np.rint(2 * ranks[~is_zero]).astype(np.int64)
    ways = [1] + [0] * int(doubled.sum())
    for v in doubled.tolist():
        for s in range(len(ways) - 1, v - 1, -1):
            ways[s] += ways[s - v]
    observed = int(np.rint(2 * r_plus))
    at_most = sum(ways[:observed + 1]) << n_zero_int
    at_least = sum(ways[observed:]) << n_zero_int
    total = 1 << n
    p = np.minimum(np.float64(at_most) / total, np.float64(at_least) / total) * 2
    return float(np.clip(p, 0.0, 1.0))


def wilcoxon_pratt(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float | None:
    """Two-sided Wilcoxon signed-rank p-value for paired x, y, zeros ranked by Pratt's method.

    Returns 1.0 when every difference is zero (no evidence of any difference; scipy would warn
    or fail there). Returns None when there are fewer than 2 pairs: one signed rank has no
    sampling distribution to speak of, so the test is not applicable rather than "not significant".
    Otherwise the p-value of scipy.stats ``wilcoxon(x, y, zero_method="pratt")`` (its defaults:
    method "auto", no continuity correction), computed without scipy.stats.
    """
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    a, b = _finite_array(x, "wilcoxon_pratt x"), _finite_array(y, "wilcoxon_pratt y")
    if a.size != b.size:
        raise ValueError(f"wilcoxon_pratt: paired samples differ in length ({a.size} vs {b.size})")
    if a.size < 2:
        return None
    d = a - b
    if np.all(d == 0):
        return 1.0
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        p = _wilcoxon_pratt_pvalue(d)
    return p if math.isfinite(p) else None


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values, in input order; None entries pass through.

    With the m non-None p-values sorted ascending, p_adj(i) = max_{j<=i} min(1, (m - j) p(j))
    (0-based j), as statsmodels' ``multipletests(method="holm")``.
    """
    indexed = [(p, i) for i, p in enumerate(pvalues) if p is not None]
    for p, _ in indexed:
        if not (0.0 <= p <= 1.0) or math.isnan(p):
            raise ValueError(f"holm: p-values must lie in [0, 1], got {p!r}")
    indexed.sort(key=lambda t: (t[0], t[1]))
    m = len(indexed)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for j, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - j) * p))
        out[i] = running
    return out


def _check_pairs(base: Sequence[object], other: Sequence[object], metric: str) -> None:
    if len(base) != len(other):
        raise ValueError(
            f"{metric}: baseline has {len(base)} paired values but the system has {len(other)}"
        )


def _sd(values: list[float]) -> float | None:
    """Sample standard deviation (n - 1), None with fewer than 2 values."""
    n = len(values)
    if n < 2:
        return None
    m = math.fsum(values) / n
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))


def compare_binary(
    metric: str,
    baseline_name: str,
    system_name: str,
    base: list[bool],
    other: list[bool],
    seed: int = 0,
) -> PairedComparison:
    """Paired comparison of pass/fail outcomes with the exact McNemar test."""
    _check_pairs(base, other, metric)
    b = sum(1 for x, y in zip(base, other) if x and not y)
    c = sum(1 for x, y in zip(base, other) if y and not x)
    n = len(base)
    diffs = [float(bool(y)) - float(bool(x)) for x, y in zip(base, other)]
    return PairedComparison(
        metric=metric,
        baseline=baseline_name,
        system=system_name,
        n_pairs=n,
        kind="binary",
        baseline_value=sum(map(bool, base)) / n if n else None,
        system_value=sum(map(bool, other)) / n if n else None,
        difference=mean_ci(diffs, seed=seed),
        test="mcnemar-exact",
        p_value=mcnemar_exact(b, c) if n else None,
        discordant=(b, c),
        sd_difference=_sd(diffs),
        p_min=mcnemar_exact(b + c, 0) if n else None,
    )


def compare_scores(
    metric: str,
    baseline_name: str,
    system_name: str,
    base: list[float],
    other: list[float],
    seed: int = 0,
) -> PairedComparison:
    """Paired comparison of continuous scores with the Wilcoxon signed-rank test (Pratt zeros)."""
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    _check_pairs(base, other, metric)
    x = _finite_array(base, f"{metric} baseline")
    y = _finite_array(other, f"{metric} system")
    n = int(x.size)
    return PairedComparison(
        metric=metric,
        baseline=baseline_name,
        system=system_name,
        n_pairs=n,
        kind="score",
        baseline_value=float(x.mean()) if n else None,
        system_value=float(y.mean()) if n else None,
        difference=mean_ci((y - x).tolist(), seed=seed),
        test="wilcoxon-pratt",
        p_value=wilcoxon_pratt(x, y),
        sd_difference=_sd((y - x).tolist()),
        p_min=wilcoxon_pratt(np.abs(y - x), np.zeros(n)),
    )


def holm_levels(pvalues: Sequence[float | None], alpha: float = ALPHA) -> list[float | None]:
    """The level Holm's step-down holds each p-value to: alpha / (m - j) at its rank j (0-based, ties in
    input order, as `holm`) among the m non-None p-values; None entries pass through."""
    order = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(order)
    out: list[float | None] = [None] * len(pvalues)
    for j, (_, i) in enumerate(order):
        out[i] = alpha / (m - j)
    return out


def could_reject(pvalues: Sequence[float | None], i: int, p_min: float | None, alpha: float = ALPHA) -> bool:
    """Whether comparison ``i`` of the family could have been significant after Holm had its test given
    ``p_min`` (the smallest p-value its pairs allow) instead of its p-value, the others unchanged."""
    p = pvalues[i]
    if p is None or p_min is None:
        return False
    trial = list(pvalues)
    trial[i] = min(p_min, p)
    adjusted = holm(trial)[i]
    return adjusted is not None and adjusted < alpha


def apply_holm(comparisons: list[PairedComparison], family: int | None = None) -> list[PairedComparison]:
    """Copies of ``comparisons`` with p_holm, significant, holm_family, alpha_holm and testable filled in,
    Holm over this family.

    ``family``: the size of the family fixed in advance (e.g. every comparable metric of a suite), when some of
    its members have no p-value here (no pairs, too few pairs): they count as p = 1, so the correction does not
    shrink with how many values a system happened to have. Never below the comparisons with a p-value."""
    n = len(comparisons)
    with_p = sum(1 for c in comparisons if c.p_value is not None)
    pad = max(0, (family or 0) - with_p)
    pvalues: list[float | None] = [c.p_value for c in comparisons] + [1.0] * pad
    adjusted = holm(pvalues)[:n]
    levels = holm_levels(pvalues)[:n]
    return [
        c.model_copy(update={"p_holm": p, "significant": None if p is None else p < ALPHA, "holm_family": with_p + pad,
                             "alpha_holm": level, "testable": could_reject(pvalues, i, c.p_min)})
        for i, (c, p, level) in enumerate(zip(comparisons, adjusted, levels))
    ]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass@k from n samples of which c are correct (Chen et al. 2021, "Evaluating Large
    Language Models Trained on Code", eq. 1): 1 - C(n - c, k) / C(n, k), the chance that k samples drawn
    without replacement from the n hold at least one correct one. Computed as their numerically stable
    product 1 - prod_{i = n - c + 1}^{n} (1 - k / i)."""
    n, c, k = operator.index(n), operator.index(c), operator.index(k)
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass^k (every one of k attempts correct; Yao et al. 2024, tau-bench) from n samples
    of which c are correct: C(c, k) / C(n, k), the chance that k samples drawn without replacement from the n
    are all correct."""
    n, c, k = operator.index(n), operator.index(c), operator.index(k)
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if c < k:
        return 0.0
    prod = 1.0
    for i in range(k):
        prod *= (c - i) / (n - i)
    return prod
