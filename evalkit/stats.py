"""The statistics of the report: rates with Wilson intervals, bootstrap means, paired tests, Holm.

Conventions: nothing here returns NaN (a value that cannot be computed is ``None`` and the model
says why in ``method``); resampling is seeded, so the same input gives the same bytes out.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from evalkit.models import Model

if TYPE_CHECKING:
    import numpy as np

# numpy and scipy are imported inside the functions that need them: importing scipy.stats costs
# most of a second, and a summarize whose aggregates all come from its cache needs neither.

ALPHA = 0.05
"""Family-wise significance level applied to Holm-adjusted p-values."""

MeanMethod = Literal["bca", "degenerate: all values equal", "n<3: no interval", "percentile (bca failed)"]


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
    """How the interval was obtained: BCa bootstrap, or which explicit fallback was used."""


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


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval for k successes out of n trials; None when n == 0."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return None
    from scipy import stats as _st

    ci = _st.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


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


def _finite_array(values: Sequence[float], what: str) -> np.ndarray:
    import numpy as np

    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"{what}: expected a flat sequence of numbers")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what}: values must be finite numbers (no NaN/inf)")
    return x


def mean_ci(
    values: Sequence[float],
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> MeanEstimate:
    """Mean with a BCa bootstrap interval (seeded), with explicit fallbacks.

    - n < 3: no interval (low/high None); with n == 0 the value is None too.
    - all values equal: the interval is [v, v] (the bootstrap would be degenerate).
    - BCa gives a non-finite bound (e.g. the bootstrap distribution lies entirely on one side of
      the estimate): the percentile interval of the same resamples is used instead.
    """
    import numpy as np

    x = _finite_array(values, "mean_ci")
    n = int(x.size)
    value = float(x.mean()) if n else None
    if n < 3:
        return MeanEstimate(n=n, value=value, low=None, high=None, confidence=confidence,
                            method="n<3: no interval")
    if float(np.ptp(x)) == 0.0:
        v = float(x[0])
        return MeanEstimate(n=n, value=v, low=v, high=v, confidence=confidence,
                            method="degenerate: all values equal")
    from scipy import stats as _st

    with warnings.catch_warnings():
        # BCa failure is detected from its result and reported in `method`.
        warnings.simplefilter("ignore")
        res = _st.bootstrap(
            (x,),
            np.mean,
            method="BCa",
            n_resamples=n_resamples,
            confidence_level=confidence,
            random_state=np.random.default_rng(seed),
            vectorized=True,
        )
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        method: MeanMethod = "bca"
        if not (math.isfinite(low) and math.isfinite(high)):
            alpha = 1.0 - confidence
            dist = np.asarray(res.bootstrap_distribution, dtype=float)
            low = float(np.percentile(dist, 100 * alpha / 2))
            high = float(np.percentile(dist, 100 * (1 - alpha / 2)))
            method = "percentile (bca failed)"
    return MeanEstimate(n=n, value=value, low=low, high=high, confidence=confidence, method=method)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value on the discordant pairs b and c (1.0 when b + c == 0).

    Same formula as statsmodels' ``mcnemar(exact=True)``: min(1, 2 * Binom(b + c, 1/2).cdf(min(b, c))).
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    if b + c == 0:
        return 1.0
    from scipy import stats as _st

    return float(min(1.0, 2.0 * _st.binom.cdf(min(b, c), b + c, 0.5)))


def wilcoxon_pratt(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Two-sided Wilcoxon signed-rank p-value for paired x, y, zeros ranked by Pratt's method.

    Returns 1.0 when every difference is zero (no evidence of any difference; scipy would warn
    or fail there). Returns None when there are fewer than 2 pairs: one signed rank has no
    sampling distribution to speak of, so the test is not applicable rather than "not significant".
    """
    import numpy as np
    from scipy import stats as _st

    a, b = _finite_array(x, "wilcoxon_pratt x"), _finite_array(y, "wilcoxon_pratt y")
    if a.size != b.size:
        raise ValueError(f"wilcoxon_pratt: paired samples differ in length ({a.size} vs {b.size})")
    if a.size < 2:
        return None
    if np.all(a - b == 0):
        return 1.0
    p = float(_st.wilcoxon(a, b, zero_method="pratt").pvalue)
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
    )


def apply_holm(comparisons: list[PairedComparison]) -> list[PairedComparison]:
    """Copies of ``comparisons`` with p_holm and significant filled in, Holm over this family."""
    adjusted = holm([c.p_value for c in comparisons])
    return [
        c.model_copy(update={"p_holm": p, "significant": None if p is None else p < ALPHA})
        for c, p in zip(comparisons, adjusted)
    ]
