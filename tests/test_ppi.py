"""The prediction-powered mean (evalkit.ppi): the arithmetic by hand, and the interval's coverage by simulation."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from evalkit.ppi import APPROXIMATE_BELOW, ppi_mean


def test_hand_worked_example() -> None:
    judge = [4.0, 3.0, 5.0, 2.0, 4.0, 1.0]
    labels = [3.0, None, 5.0, None, 2.0, None]
    got = ppi_mean(judge, labels)
    # by hand: judge mean 19/6; corrections -1, 0, -2 -> mean -1; estimate 13/6
    assert got.judge_mean == pytest.approx(19 / 6)
    assert got.correction == pytest.approx(-1.0)
    assert got.value == pytest.approx(13 / 6)
    assert got.label_mean == pytest.approx(10 / 3)
    assert (got.n_outputs, got.n_labelled) == (6, 3)
    # variance: s2(judge) / 6 + s2(delta) / 3 + 2 cov(judge_lab, delta) / 6
    s2_judge = sum((x - 19 / 6) ** 2 for x in judge) / 5          # 12.8333.../5
    s2_delta = ((-1 + 1) ** 2 + (0 + 1) ** 2 + (-2 + 1) ** 2) / 2  # 1
    f_lab, d = [4.0, 5.0, 4.0], [-1.0, 0.0, -2.0]
    cov = sum((a - 13 / 3) * (b + 1) for a, b in zip(f_lab, d)) / 2  # (−1/3·0 + 2/3·1 + −1/3·−1)/2 = 0.5
    assert cov == pytest.approx(0.5)
    half = 1.959963984540054 * math.sqrt(s2_judge / 6 + s2_delta / 3 + 2 * cov / 6)
    assert (got.low, got.high) == pytest.approx((13 / 6 - half, 13 / 6 + half))
    assert got.approximate and APPROXIMATE_BELOW > 3
    clipped = ppi_mean(judge, labels, bounds=(1.0, 5.0))
    assert clipped.low == pytest.approx(max(1.0, 13 / 6 - half)) and clipped.high == pytest.approx(min(5.0, 13 / 6 + half))


def test_every_output_labelled_is_the_peoples_mean_with_its_normal_interval() -> None:
    rng = np.random.default_rng(3)
    judge = rng.integers(1, 6, 25).astype(float)
    people = np.clip(judge + rng.integers(-1, 2, 25), 1, 5)
    got = ppi_mean(judge.tolist(), people.tolist())
    assert got.value == pytest.approx(people.mean())
    half = 1.959963984540054 * people.std(ddof=1) / math.sqrt(25)
    assert (got.low, got.high) == pytest.approx((people.mean() - half, people.mean() + half))
    assert not got.approximate


def test_no_labels_no_spread_and_bad_input() -> None:
    none = ppi_mean([3.0, 4.0], [None, None])
    assert none.value is None and none.judge_mean == 3.5 and "nothing to correct" in none.method
    one = ppi_mean([3.0, 4.0], [2.0, None])
    assert one.value == pytest.approx(2.5) and one.low is None and "no interval" in one.method
    flat = ppi_mean([4.0, 4.0, 4.0], [4.0, 4.0, None])
    assert flat.value == 4.0 and flat.low is None and flat.high is None  # never a zero-width interval
    assert ppi_mean([], []).value is None
    with pytest.raises(ValueError, match="differ in length"):
        ppi_mean([1.0], [])
    with pytest.raises(ValueError, match="finite"):
        ppi_mean([math.nan], [1.0])


def test_interval_covers_at_nominal_over_2000_simulated_label_sets() -> None:
    """A judge biased by +0.6 on a 1-5 scale, noisy, scoring 300 outputs; people label a random 40. The PPI
    interval must cover the true mean of people's scores 93% of the time or more (nominal 95%), and the raw judge
    mean's own interval, blind to the bias, must not."""
    rng = np.random.default_rng(20231)
    sets, big_n, n = 2000, 300, 40
    truth_p = np.array([0.1, 0.15, 0.25, 0.3, 0.2])  # people's score distribution on 1..5
    true_mean = float((np.arange(1, 6) * truth_p).sum())
    people = rng.choice(np.arange(1, 6), size=(sets, big_n), p=truth_p).astype(float)
    judge = np.clip(np.rint(people + 0.6 + rng.normal(0, 0.8, (sets, big_n))), 1, 5)
    labelled = np.argsort(rng.random((sets, big_n)), axis=1)[:, :n]  # a random subset per set
    start = time.process_time()  # CPU seconds: the cost, not what else the machine runs meanwhile
    covered = raw_covered = 0
    for s in range(sets):
        labels: list[float | None] = [None] * big_n
        for i in labelled[s]:
            labels[i] = float(people[s, i])
        got = ppi_mean(judge[s].tolist(), labels)
        assert got.low is not None and got.high is not None
        covered += got.low <= true_mean <= got.high
        half = 1.959963984540054 * judge[s].std(ddof=1) / math.sqrt(big_n)
        raw_covered += abs(judge[s].mean() - true_mean) <= half
    assert time.process_time() - start < 5
    coverage = covered / sets
    print(f"PPI coverage {coverage:.4f}, raw judge interval {raw_covered / sets:.4f}")
    assert 0.93 <= coverage <= 0.97, coverage
    assert raw_covered / sets < 0.5, raw_covered / sets
