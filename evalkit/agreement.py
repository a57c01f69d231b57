"""Agreement between two raters of the same items: Cohen's kappa, weighted or not, with a seeded
bootstrap interval over items.

The kappa is scikit-learn's ``cohen_kappa_score`` arithmetic (tests/test_agreement.py holds it to
1e-9): a confusion matrix over the categories, expected counts from the margins, and
``kappa = 1 - sum(W * observed) / sum(W * expected)`` with W the 0/1 disagreement weights
(unweighted) or the squared distance of the category indices (quadratic). Where every label of
both raters lies in one category the expected disagreement is 0 and kappa is undefined: ``None``
with the reason, never NaN.

An item may carry several pairs (a judge's verdict against each of two people): the bootstrap
resamples items, each with all its pairs, so pairs of one item are never treated as independent.
Same conventions as evalkit.stats: seeded resampling (numpy's default_rng), nothing returns NaN.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from evalkit.models import Model

if TYPE_CHECKING:
    import numpy as np

Weights = Literal["quadratic", "none"]
Scale = Literal["ordinal", "boolean"]
MIN_ITEMS_FOR_INTERVAL = 3
"""Fewer items than this: a kappa but no interval (as mean_ci gives no interval below 3 values)."""


class Agreement(Model):
    """How far two raters agree on one field, chance corrected."""

    field: str
    """The rubric field rated (e.g. semantic_equivalence_score)."""
    scale: Scale
    """ordinal (quadratic-weighted kappa) or boolean (Cohen's kappa)."""
    statistic: Literal["quadratic-weighted kappa", "kappa"]
    """Which kappa the value is."""
    n: int
    """Pairs of ratings compared."""
    n_items: int
    """Items (outputs) they belong to; the bootstrap resamples these."""
    kappa: float | None
    """The kappa; None when undefined (see ``undefined``) or with no pair."""
    low: float | None = None
    """Lower end of the bootstrap percentile interval (None when there is none)."""
    high: float | None = None
    """Upper end of the interval."""
    confidence: float = 0.95
    """Confidence level of the interval."""
    method: str
    """How the interval was made: 'percentile bootstrap over items', or why there is none."""
    undefined: str | None = None
    """Why kappa is undefined (every rating in one category), None when it is defined."""
    observed_agreement: float | None = None
    """Share of pairs rated exactly alike (None without pairs)."""
    base_rate: float | None = None
    """Share of the reference ratings (the second rater's) in their most common category; for a boolean
    field the share rated true."""
    base_label: str | None = None
    """The category base_rate counts (for a boolean field: 'true')."""
    distribution: dict[str, int] = {}
    """Reference ratings per category."""
    resamples_undefined: int = 0
    """Bootstrap resamples in which kappa was undefined (left out of the interval)."""


def _label(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _codes(values: Sequence[Hashable], categories: Sequence[Hashable], who: str) -> list[int]:
    index = {c: i for i, c in enumerate(categories)}
    out = []
    for v in values:
        if v not in index:
            raise ValueError(f"{who}: {v!r} is not one of the categories {list(categories)!r}")
        out.append(index[v])
    return out


def weight_matrix(k: int, weights: Weights) -> np.ndarray:
    """Disagreement weights over k categories: 0/1 (none) or squared index distance (quadratic)."""
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    idx = np.arange(k, dtype=np.float64)
    if weights == "quadratic":
        return (idx[:, None] - idx[None, :]) ** 2
    if weights == "none":
        return 1.0 - np.eye(k)
    raise ValueError(f"weights must be 'quadratic' or 'none', got {weights!r}")


def kappa_of_confusion(confusion: np.ndarray, weights: Weights) -> np.ndarray:
    """Kappa of each K x K confusion matrix in ``confusion`` (shape (..., K, K)); NaN where undefined.

    NaN stays inside this module: the public functions turn it into None with a reason.
    """
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    conf = np.asarray(confusion, dtype=np.float64)
    w = weight_matrix(conf.shape[-1], weights)
    rows = conf.sum(axis=-1)
    cols = conf.sum(axis=-2)
    total = rows.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = rows[..., :, None] * cols[..., None, :] / total[..., None, None]
        num = (w * conf).sum(axis=(-2, -1))
        den = (w * expected).sum(axis=(-2, -1))
        out = 1.0 - num / den
    return np.where((den == 0) | (total == 0), np.nan, out)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable], weights: Weights = "none",
                categories: Sequence[Hashable] | None = None) -> float | None:
    """Cohen's kappa of paired ratings ``a`` and ``b`` (None when undefined or empty).

    ``categories`` fixes the scale and its order (quadratic weights use the distance of the
    category indices, so give the whole scale, e.g. 1..5); by default the sorted union of both.
    Equals ``sklearn.metrics.cohen_kappa_score(a, b, labels=categories, weights=...)``.
    """
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    if len(a) != len(b):
        raise ValueError(f"cohen_kappa: {len(a)} ratings against {len(b)}")
    if not a:
        return None
    # Without a given scale the ratings must be orderable (numbers or labels): sorted() raises TypeError otherwise.
    pooled: set[Any] = set(a) | set(b)
    cats = list(categories) if categories is not None else sorted(pooled)
    k = len(cats)
    ca, cb = _codes(a, cats, "first rater"), _codes(b, cats, "second rater")
    conf = np.bincount(np.asarray(ca) * k + np.asarray(cb), minlength=k * k).reshape(k, k)
    value = float(kappa_of_confusion(conf, weights))
    return value if math.isfinite(value) else None


def _item_confusions(items: Sequence[Hashable], ca: Sequence[int], cb: Sequence[int], k: int
                     ) -> np.ndarray:
    """(n_items, K*K) counts: each item's pairs as a flattened confusion matrix, items in first-seen order."""
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    order: dict[Hashable, int] = {}
    item_idx = [order.setdefault(it, len(order)) for it in items]
    flat = np.asarray(item_idx, dtype=np.int64) * (k * k) + np.asarray(ca, dtype=np.int64) * k + np.asarray(cb, dtype=np.int64)
    return np.bincount(flat, minlength=len(order) * k * k).reshape(len(order), k * k).astype(np.float64)


def bootstrap_kappa(per_item: np.ndarray, k: int, weights: Weights, n_resamples: int, seed: int
                    ) -> np.ndarray:
    """Kappa of ``n_resamples`` resamples of the items (with replacement; NaN where undefined).

    The draws are those of evalkit.stats' bootstrap: ``default_rng(seed).integers(0, n, (B, n))``,
    made in row blocks so memory stays bounded on large label sets.
    """
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    n = per_item.shape[0]
    rng = np.random.default_rng(seed)
    block = max(1, min(n_resamples, 4_000_000 // max(n, 1)))
    out = []
    done = 0
    while done < n_resamples:
        rows = min(block, n_resamples - done)
        idx = rng.integers(0, n, size=(rows, n), dtype="int64", endpoint=False)
        counts = np.bincount((idx + (np.arange(rows, dtype=np.int64) * n)[:, None]).ravel(),
                             minlength=rows * n).reshape(rows, n).astype(np.float64)
        conf = (counts @ per_item).reshape(rows, k, k)
        out.append(kappa_of_confusion(conf, weights))
        done += rows
    return np.concatenate(out)


def agreement(field: str, scale: Scale, items: Sequence[Hashable], first: Sequence[Hashable],
              second: Sequence[Hashable], categories: Sequence[Hashable], n_resamples: int = 2000, seed: int = 0,
              confidence: float = 0.95) -> Agreement:
    """Agreement of ``first`` with ``second`` (the reference rater) on ``field``, one pair per entry.

    ``items[i]`` names the item pair i belongs to; pairs sharing an item are resampled together.
    Ordinal fields get the quadratic-weighted kappa over ``categories`` (the whole scale, in order),
    boolean fields the unweighted kappa. The interval is the percentile interval of the kappas of
    seeded bootstrap resamples of the items; resamples where kappa is undefined are left out and counted.
    """
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)

    if not (len(items) == len(first) == len(second)):
        raise ValueError(f"agreement({field}): {len(items)} items, {len(first)} and {len(second)} ratings")
    weights: Weights = "quadratic" if scale == "ordinal" else "none"
    statistic: Literal["quadratic-weighted kappa", "kappa"] = "quadratic-weighted kappa" if scale == "ordinal" else "kappa"
    cats = list(categories)
    k = len(cats)
    dist = Counter(second)
    distribution = {_label(c): dist[c] for c in cats if dist[c]}
    base = {"field": field, "scale": scale, "statistic": statistic, "n": len(first), "n_items": len(set(items)),
            "confidence": confidence, "distribution": distribution}
    if not first:
        return Agreement(**base, kappa=None, method="no pairs: no interval", undefined="no pairs to compare")
    if scale == "boolean":
        base_rate, base_label = dist[True] / len(second), "true"
    else:
        top = max(cats, key=lambda c: (dist[c], -cats.index(c)))
        base_rate, base_label = dist[top] / len(second), _label(top)
    base.update(base_rate=base_rate, base_label=base_label,
                observed_agreement=sum(1 for x, y in zip(first, second) if x == y) / len(first))
    ca, cb = _codes(first, cats, f"{field} first rater"), _codes(second, cats, f"{field} second rater")
    per_item = _item_confusions(items, ca, cb, k)
    value = float(kappa_of_confusion(per_item.sum(axis=0).reshape(k, k), weights))
    if not math.isfinite(value):
        used = sorted({_label(cats[c]) for c in ca + cb})
        return Agreement(**base, kappa=None, method="undefined: no interval",
                         undefined=f"every rating is {used[0]}, no disagreement to expect")
    if per_item.shape[0] < MIN_ITEMS_FOR_INTERVAL:
        return Agreement(**base, kappa=value, method=f"n<{MIN_ITEMS_FOR_INTERVAL} items: no interval")
    if operator.index(n_resamples) < 1:
        raise ValueError(f"agreement: n_resamples must be a positive integer, got {n_resamples!r}")
    dist_k = bootstrap_kappa(per_item, k, weights, n_resamples, seed)
    finite = dist_k[np.isfinite(dist_k)]
    undefined = int(dist_k.size - finite.size)
    if finite.size == 0:
        return Agreement(**base, kappa=value, method="percentile bootstrap over items: every resample undefined",
                         resamples_undefined=undefined)
    alpha = 1.0 - confidence
    low = float(np.percentile(finite, 100 * alpha / 2))
    high = float(np.percentile(finite, 100 * (1 - alpha / 2)))
    if low == high:  # e.g. perfect agreement on every item: no zero-width "interval"
        return Agreement(**base, kappa=value, method="percentile bootstrap over items: every resample gives the "
                         "same kappa, no interval", resamples_undefined=undefined)
    return Agreement(**base, kappa=value, low=low, high=high, method="percentile bootstrap over items",
                     resamples_undefined=undefined)
