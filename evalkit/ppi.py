"""Judge scores corrected by people: the prediction-powered estimate of a mean (Angelopoulos et al. 2023).

The judge scores every output (N of them); people label a few (n). The mean people would give every output is
estimated as the judge's mean over all N outputs plus the mean correction (label minus judge) over the n
labelled ones::

    theta = mean_N(judge) + mean_n(label - judge)

It is unbiased whatever the judge's bias, provided the labelled outputs are a random sample of the outputs; the
judge only buys precision where it tracks the labels. The labelled outputs are among the N, so the variance has
a covariance term (derived by hand; with the labelled set drawn at random from the N)::

    Var = s2(judge over N) / N + s2(label - judge over n) / n + 2 cov(judge, label - judge over n) / N

and the interval is the normal (CLT) one, theta +- z * sqrt(Var), clipped to the scale's bounds when given.
With every output labelled (n = N) it is the people's own mean with its normal interval. The normal interval is
asymptotic: below ``APPROXIMATE_BELOW`` labelled outputs it is marked approximate.
tests/test_ppi.py checks the arithmetic by hand and its coverage by simulation (2,000 label sets).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

from evalkit.models import Model

APPROXIMATE_BELOW = 10
"""Fewer labelled outputs than this: the normal interval is marked approximate (the variance of the correction
is estimated from too few values for the CLT to be trusted)."""


class PPIEstimate(Model):
    """A judge metric's mean corrected by people's labels, beside the raw judge mean."""

    n_outputs: int
    """N: outputs with a judge score (all of them count in the judge's mean)."""
    n_labelled: int
    """n: of those, outputs a person labelled (the correction's sample)."""
    judge_mean: float | None
    """The raw judge mean over the N outputs."""
    label_mean: float | None = None
    """People's mean over the n labelled outputs (the estimate without the judge)."""
    correction: float | None = None
    """Mean of label minus judge over the labelled outputs (negative: the judge scores higher than people)."""
    value: float | None = None
    """The prediction-powered estimate judge_mean + correction; None without a labelled output."""
    low: float | None = None
    """Lower bound of the normal interval; None with fewer than 2 labelled outputs."""
    high: float | None = None
    """Upper bound of the normal interval."""
    confidence: float = 0.95
    """Confidence level of the interval."""
    approximate: bool = False
    """Fewer than APPROXIMATE_BELOW labelled outputs: the normal interval is approximate."""
    method: str = "PPI, normal interval"
    """How it was obtained, or why there is no estimate or interval."""


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def _cov(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Sample covariance (ddof 1); needs 2 or more pairs."""
    mx, my = _mean(xs), _mean(ys)
    return math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys)) / (len(xs) - 1)


def ppi_mean(judge: Sequence[float], labels: Sequence[float | None], confidence: float = 0.95,
             bounds: tuple[float, float] | None = None) -> PPIEstimate:
    """The prediction-powered mean of ``labels`` over every output: ``judge[i]`` is the judge's score of output
    i, ``labels[i]`` a person's (the mean of several people's) or None when nobody labelled it.

    ``bounds`` (the scale's lowest and highest value) clip the interval. Raises ValueError when the two sequences
    differ in length or hold a non-finite value.
    """
    if len(judge) != len(labels):
        raise ValueError(f"judge and labels differ in length ({len(judge)} and {len(labels)})")
    if not all(math.isfinite(v) for v in judge) or not all(math.isfinite(v) for v in labels if v is not None):
        raise ValueError("judge scores and labels must be finite numbers")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    big_n = len(judge)
    pairs = [(float(f), float(y)) for f, y in zip(judge, labels) if y is not None]
    n = len(pairs)
    if big_n == 0:
        return PPIEstimate(n_outputs=0, n_labelled=0, judge_mean=None, confidence=confidence,
                           method="no output has a judge score")
    judge_mean = _mean([float(v) for v in judge])
    base = {"n_outputs": big_n, "n_labelled": n, "judge_mean": judge_mean, "confidence": confidence}
    if n == 0:
        return PPIEstimate(**base, method="no labelled output has a judge score: nothing to correct with")
    f_lab = [f for f, _ in pairs]
    y_lab = [y for _, y in pairs]
    delta = [y - f for f, y in pairs]
    correction = _mean(delta)
    value = judge_mean + correction
    out = {**base, "label_mean": _mean(y_lab), "correction": correction, "value": value,
           "approximate": n < APPROXIMATE_BELOW}
    if n < 2 or big_n < 2:
        return PPIEstimate(**out, method="PPI; one labelled output: no interval")
    var = (_cov(judge, judge) / big_n + _cov(delta, delta) / n + 2 * _cov(f_lab, delta) / big_n)
    if var <= 0:  # every score and label the same: no spread to size an interval with (never a zero-width one)
        return PPIEstimate(**out, method="PPI; no spread in the scores or corrections: no interval")
    half = NormalDist().inv_cdf(0.5 + 0.5 * confidence) * math.sqrt(var)
    low, high = value - half, value + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return PPIEstimate(**out, low=low, high=high)
