"""Cohen's kappa (evalkit.agreement) against scikit-learn's cohen_kappa_score, and its bootstrap."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from evalkit.agreement import agreement, bootstrap_kappa, cohen_kappa

SCALE = [1, 2, 3, 4, 5]


def _sk(a, b, weights, labels=None):
    from sklearn.metrics import cohen_kappa_score  # here, not at the top: every xdist worker collects this file

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(a, b, weights=weights, labels=labels)
    return None if math.isnan(value) else float(value)


def _generated(seed: int, n: int, categories, agree: float):
    """A label set: the second rater copies the first with probability `agree`, else draws at random
    (skewed towards the high end, as judges and people rate code)."""
    rng = np.random.default_rng(seed)
    p = np.linspace(1, 3, len(categories))
    p = p / p.sum()
    a = [categories[i] for i in rng.choice(len(categories), size=n, p=p)]
    b = [x if rng.random() < agree else categories[int(rng.choice(len(categories), p=p))] for x in a]
    return a, b


@pytest.mark.parametrize("seed", range(40))
def test_quadratic_kappa_equals_sklearn(seed):
    n = [2, 3, 5, 8, 13, 30, 100, 400][seed % 8]
    a, b = _generated(seed, n, SCALE, agree=[0.0, 0.3, 0.6, 0.9, 1.0][seed % 5])
    mine = cohen_kappa(a, b, "quadratic", SCALE)
    ref = _sk(a, b, "quadratic", SCALE)
    if ref is None:
        assert mine is None
    else:
        assert mine == pytest.approx(ref, abs=1e-9)
    # without a fixed scale both use the categories seen, in sorted order
    mine_seen = cohen_kappa(a, b, "quadratic")
    ref_seen = _sk(a, b, "quadratic")
    assert (mine_seen is None) == (ref_seen is None)
    if ref_seen is not None:
        assert mine_seen == pytest.approx(ref_seen, abs=1e-9)


@pytest.mark.parametrize("seed", range(40))
def test_unweighted_kappa_equals_sklearn(seed):
    n = [2, 4, 7, 10, 25, 60, 200, 1000][seed % 8]
    cats = [False, True] if seed % 2 else SCALE
    a, b = _generated(seed + 1000, n, cats, agree=[0.0, 0.4, 0.8, 1.0][seed % 4])
    mine = cohen_kappa(a, b, "none", cats)
    ref = _sk(a, b, None, cats)
    assert (mine is None) == (ref is None)
    if ref is not None:
        assert mine == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize("weights,sk_weights", [("quadratic", "quadratic"), ("none", None)])
def test_degenerate_label_sets(weights, sk_weights):
    # all one category on both sides: undefined in both implementations, None (never NaN) here
    assert _sk([3] * 6, [3] * 6, sk_weights, SCALE) is None
    assert cohen_kappa([3] * 6, [3] * 6, weights, SCALE) is None
    assert cohen_kappa([True] * 4, [True] * 4, weights) is None
    # one rater constant, the other not: defined, and 0 (agreement is exactly what chance gives)
    a, b = [4] * 5, [1, 2, 3, 4, 5]
    assert cohen_kappa(a, b, weights, SCALE) == pytest.approx(_sk(a, b, sk_weights, SCALE), abs=1e-9)
    assert cohen_kappa(a, b, weights, SCALE) == pytest.approx(0.0, abs=1e-12)
    # perfect agreement, total disagreement on a boolean
    assert cohen_kappa([True, False, True], [True, False, True], weights) == pytest.approx(1.0)
    assert cohen_kappa([True, False], [False, True], weights) == pytest.approx(_sk([True, False], [False, True], sk_weights))
    assert cohen_kappa([], [], weights) is None


def test_quadratic_weights_follow_the_whole_scale():
    # ratings 1 and 5 only: on the 1..5 scale they are 4 points apart, not 1
    a, b = [1, 1, 5, 5, 1], [1, 5, 5, 5, 1]
    on_scale = cohen_kappa(a, b, "quadratic", SCALE)
    assert on_scale == pytest.approx(_sk(a, b, "quadratic", SCALE), abs=1e-9)
    assert on_scale != pytest.approx(cohen_kappa([x * 10 for x in a], b, "quadratic", SCALE + [10, 50]))


def test_rating_off_the_scale_is_an_error():
    with pytest.raises(ValueError, match="not one of the categories"):
        cohen_kappa([1, 6], [1, 2], "quadratic", SCALE)


def test_agreement_interval_seeded_and_covers_the_kappa():
    a, b = _generated(7, 60, SCALE, agree=0.7)
    items = [f"o{i}" for i in range(60)]
    one = agreement("semantic_equivalence_score", "ordinal", items, a, b, SCALE, n_resamples=500, seed=3)
    again = agreement("semantic_equivalence_score", "ordinal", items, a, b, SCALE, n_resamples=500, seed=3)
    other = agreement("semantic_equivalence_score", "ordinal", items, a, b, SCALE, n_resamples=500, seed=4)
    assert one == again
    assert (one.low, one.high) != (other.low, other.high)
    assert one.kappa == pytest.approx(_sk(a, b, "quadratic", SCALE), abs=1e-9)
    assert one.low < one.kappa < one.high <= 1.0
    assert one.n == one.n_items == 60
    assert one.statistic == "quadratic-weighted kappa"
    assert sum(one.distribution.values()) == 60
    top = max(one.distribution.values())
    assert one.base_rate == pytest.approx(top / 60)


def test_bootstrap_resamples_items_with_all_their_pairs():
    # one resample of the items equals sklearn's kappa over the pairs of the drawn items
    a, b = _generated(11, 24, SCALE, agree=0.5)
    items = [i // 2 for i in range(24)]  # two pairs per item (a judge against two people)
    from evalkit.agreement import _codes, _item_confusions

    per_item = _item_confusions(items, _codes(a, SCALE, "a"), _codes(b, SCALE, "b"), 5)
    kappas = bootstrap_kappa(per_item, 5, "quadratic", 3, seed=5)
    rng = np.random.default_rng(5)
    draws = rng.integers(0, 12, size=(3, 12), dtype="int64", endpoint=False)
    for row, kappa in zip(draws, kappas):
        pa = [a[2 * i + j] for i in row for j in (0, 1)]
        pb = [b[2 * i + j] for i in row for j in (0, 1)]
        ref = _sk(pa, pb, "quadratic", SCALE)
        if ref is None:
            assert math.isnan(kappa)
        else:
            assert kappa == pytest.approx(ref, abs=1e-9)


def test_agreement_boolean_base_rate_and_undefined():
    items = ["a", "b", "c", "d"]
    got = agreement("is_compilable", "boolean", items, [True, True, False, True], [True, False, False, True],
                    [False, True], n_resamples=200, seed=0)
    assert got.statistic == "kappa"
    assert got.base_rate == pytest.approx(0.5) and got.base_label == "true"
    assert got.kappa == pytest.approx(_sk([True, True, False, True], [True, False, False, True], None))
    flat = agreement("is_compilable", "boolean", items, [True] * 4, [True] * 4, [False, True])
    assert flat.kappa is None and "every rating is true" in (flat.undefined or "")
    assert flat.low is None and flat.base_rate == 1.0
    few = agreement("x", "boolean", ["a", "b"], [True, False], [True, True], [False, True])
    assert few.kappa is not None and few.low is None and "no interval" in few.method
    none = agreement("x", "boolean", [], [], [], [False, True])
    assert none.n == 0 and none.kappa is None and none.undefined == "no pairs to compare"


def test_perfect_agreement_has_no_zero_width_interval() -> None:
    """Every resample of perfectly agreeing items has kappa 1: no [1.00, 1.00] "interval", the method says why."""
    from evalkit.agreement import agreement

    items = [f"o{i}" for i in range(8)]
    ratings = [True, False, True, False, True, True, False, False]
    a = agreement("f", "boolean", items, ratings, ratings, [False, True])
    assert a.kappa == 1.0 and a.low is None and a.high is None and "no interval" in a.method
