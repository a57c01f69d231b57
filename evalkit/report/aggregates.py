"""Aggregates of per-case scores: one number with its interval per metric, and coverage."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping

from evalkit.artifacts import ScoresArtifact
from evalkit.config import Config
from evalkit.metrics.registry import METRICS, SCALE_BOUNDS, MetricInfo
from evalkit.report.models import Aggregate, Coverage
from evalkit.report.stats_cache import StatsCache, cached_call
from evalkit.stats import MeanEstimate, RateEstimate, mean_ci, rate

JUDGE_FAILED = frozenset({"judge_error", "infra_error", "not_judged_budget"})
"""Judge statuses of an output that has no verdict though the judge was asked (or was to be): its judge metrics are
excluded (JUDGE_ERROR), not inapplicable."""
JUDGE_ERROR = "judge_error"
"""The excluded-count key of an output whose judge gave no verdict."""


def aggregate(info: MetricInfo, values: list[float], n_na: int, excluded: Mapping[str, int], cfg: Config,
              cache: StatsCache | None = None) -> Aggregate:
    """Rate with a Wilson interval, mean with a bootstrap interval (evalkit.stats.mean_ci), or a total.

    A mean whose per-case values are all 0 or 1 is a rate: it gets the Wilson interval too (a bootstrap of
    22 ones is the zero-width [1, 1]; Wilson gives [0.851, 1])."""
    base = {"metric": info.name, "n": len(values), "not_applicable": n_na, "excluded": dict(sorted(excluded.items()))}
    if info.aggregate == "sum":
        return Aggregate(**base, value=round(sum(values), 6) if values else None, method="total")
    if info.aggregate == "rate" or (values and all(v in (0.0, 1.0) for v in values)):
        est = cached_call(cache, RateEstimate, rate, int(round(sum(values))), len(values), cfg.report.confidence)
        return Aggregate(**base, value=est.value, low=est.low, high=est.high,
                         method="wilson" if info.aggregate == "rate" else "wilson (0/1 values)")
    m = cached_call(cache, MeanEstimate, mean_ci, values, n_resamples=cfg.report.bootstrap_resamples,
                    seed=cfg.report.seed, confidence=cfg.report.confidence)
    low, high = m.low, m.high
    bounds = SCALE_BOUNDS.get(info.scale)
    if bounds is not None and low is not None and high is not None:
        # a t bound past the scale's end (0.667 [-0.161, 1.495] on a 0-1 score from 3 cases): the mean cannot be
        # there, so the interval stops at the end; it covers the mean exactly as often
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Aggregate(**base, value=m.value, low=low, high=high, method=m.method, approximate=m.approximate)


def aggregate_scores(scores: Iterable[ScoresArtifact], metric_names: list[str], cfg: Config,
                     cache: StatsCache | None = None) -> dict[str, Aggregate]:
    """One aggregate per metric name over the scores that are not excluded (None values: not applicable)."""
    scores = list(scores)
    excluded: Counter[str] = Counter(s.excluded for s in scores if s.excluded)  # the same for every metric
    kept = [s for s in scores if not s.excluded]
    # One pass over each score's own metrics (not one pass over every score per metric): the values of each metric in
    # the scores' order; a metric a score lacks or has as None is not applicable there, or excluded below
    values: dict[str, list[float]] = {name: [] for name in metric_names}
    for s in kept:
        for name, v in s.metrics.items():
            if v is not None and (found := values.get(name)) is not None:
                found.append(float(v))
    failed = [s for s in kept if s.judge_status in JUDGE_FAILED]
    out = {}
    for name in metric_names:
        mine = excluded
        # the judge gave no verdict: left out, not inapplicable
        errors = sum(1 for s in failed if s.metrics.get(name) is None) if METRICS[name].judge_field else 0
        if errors:
            mine = mine + Counter({JUDGE_ERROR: errors})
        n_na = len(kept) - len(values[name]) - errors
        out[name] = aggregate(METRICS[name], values[name], n_na, mine, cfg, cache)
    return out


def judge_subsets_note(per_system: dict[str, dict[str, Aggregate]], n_cases: int) -> list[str]:
    """A note per judge metric whose systems are compared over different subsets of the suite's cases because the
    judge gave no verdict on some outputs (judge errors are excluded, so the means stand on different cases)."""
    notes = []
    metrics = sorted({m for aggs in per_system.values() for m, a in aggs.items() if a.excluded.get(JUDGE_ERROR)})
    for m in metrics:
        counts = {n: aggs[m].n for n, aggs in per_system.items() if m in aggs}
        if len(set(counts.values())) > 1:
            each = ", ".join(f"{n} {k}" for n, k in counts.items())
            errors = sum(aggs[m].excluded.get(JUDGE_ERROR, 0) for aggs in per_system.values() if m in aggs)
            notes.append(f"{METRICS[m].display} compares systems over different subsets of the {n_cases} cases "
                         f"({each}): {errors} output(s) without a judge verdict (judge error, API failure or budget) "
                         "are excluded, so the means do not stand on the same cases; the paired comparisons use the "
                         "cases both systems have.")
    return notes


def metric_order(scores: Iterable[ScoresArtifact]) -> list[str]:
    """The metrics some score has a value for, in registry order."""
    present = {k for s in scores for k, v in s.metrics.items() if v is not None}
    return [name for name in METRICS if name in present]


def coverage(scores: list[ScoresArtifact]) -> Coverage:
    """Cases attempted (anything but not_attempted) out of the cases scored."""
    missing = sum(1 for s in scores if s.status == "not_attempted")
    return Coverage(attempted=len(scores) - missing, cases=len(scores))
