"""How a total over the same cases changed between two releases (cost, time), with an interval.

The unit that varies is the case: each case has a total before and after (its systems' costs summed, say).
The change is the relative change of the totals, Σ after / Σ before − 1, with a paired percentile bootstrap
over cases (cases drawn with replacement, the same draw on both sides; ``N_RESAMPLES`` draws, seeded, so the
same input gives the same bytes). When the total before is 0 the relative change is undefined and only the
difference of totals is given, with its interval from the same draws.

The percentile bootstrap of a ratio of sums is approximate with few cases (under ~20 its 95% interval covers
less than 95% on skewed costs); ``approximate`` says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalkit.models import Model

N_RESAMPLES = 2000
CONFIDENCE = 0.95
APPROXIMATE_BELOW = 20
METHOD = "paired percentile bootstrap over cases"


class TotalChange(Model):
    """A total over paired cases, before and after, and its change with a 95% interval."""

    n_cases: int
    """Cases with a value on both sides."""
    before: float
    """The total in the previous release over these cases."""
    after: float
    """The total in this release over these cases."""
    difference: float
    """after − before."""
    difference_low: float | None = None
    difference_high: float | None = None
    """95% interval of the difference (None with fewer than 2 cases)."""
    relative: float | None = None
    """after / before − 1 (None when before is 0)."""
    relative_low: float | None = None
    relative_high: float | None = None
    """95% interval of the relative change (None when before is 0 in the sample or with fewer than 2 cases)."""
    method: str = METHOD
    approximate: bool = False
    """Fewer than ``APPROXIMATE_BELOW`` cases: the interval's coverage falls short of 95%."""


def total_change(before: Sequence[float], after: Sequence[float], seed: int = 0) -> TotalChange:
    """The change of Σ ``after`` over Σ ``before``, the two paired by position (one value per case)."""
    import numpy as np  # deferred: numpy, only for this interval (a no-op run imports none)

    if len(before) != len(after):
        raise ValueError(f"paired totals need as many values after ({len(after)}) as before ({len(before)})")
    b = np.asarray(before, dtype=float)
    a = np.asarray(after, dtype=float)
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(a))):
        raise ValueError("paired totals must be finite numbers")
    n = len(b)
    tb, ta = float(b.sum()), float(a.sum())
    out = TotalChange(n_cases=n, before=round(tb, 9), after=round(ta, 9), difference=round(ta - tb, 9),
                      relative=round(ta / tb - 1, 9) if tb > 0 else None, approximate=n < APPROXIMATE_BELOW)
    if n < 2:
        return out
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(N_RESAMPLES, n))
    sb, sa = b[idx].sum(axis=1), a[idx].sum(axis=1)
    tail = (1 - CONFIDENCE) / 2
    lo, hi = np.quantile(sa - sb, [tail, 1 - tail])
    out.difference_low, out.difference_high = round(float(lo), 9), round(float(hi), 9)
    if tb > 0 and bool(np.all(sb > 0)):
        lo, hi = np.quantile(sa / sb - 1, [tail, 1 - tail])
        out.relative_low, out.relative_high = round(float(lo), 9), round(float(hi), 9)
    return out
