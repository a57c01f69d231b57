"""Paired comparisons of each system against the baseline, Holm-adjusted per system, each with its verdict."""

from __future__ import annotations

from evalkit.artifacts import ScoresArtifact
from evalkit.config import Config
from evalkit.metrics.registry import METRICS
from evalkit.report.stats_cache import StatsCache, cached_call
from evalkit.report.verdict import settle
from evalkit.stats import PairedComparison, compare_binary, compare_scores


def compare_suite(cfg: Config, names: list[str], scores: dict[tuple[str, str], ScoresArtifact], systems: list[str],
                  case_ids: list[str], cache: StatsCache | None = None) -> list:
    """Each system against the baseline on the cases both have a value for; Holm per system.

    When the configured baseline does not run on this suite, the suite's first system is its baseline.
    """
    if not systems:
        return []
    baseline = cfg.baseline_name if cfg.baseline_name in systems else systems[0]

    def scored(system: str) -> dict[str, dict[str, float | None]]:
        """case id -> metrics of the system's scores that are not excluded."""
        return {cid: s.metrics for cid in case_ids if (s := scores.get((system, cid))) is not None and not s.excluded}

    base_scored = scored(baseline)
    comparable = [n for n in names if METRICS[n].aggregate != "sum" and METRICS[n].higher_is_better is not None]
    groups = []
    for system in systems:
        if system == baseline:
            continue
        # cases both have a (not excluded) score for, in case order
        other_scored = scored(system)
        both = [(a, b) for cid in case_ids
                if (b := other_scored.get(cid)) is not None and (a := base_scored.get(cid)) is not None]
        group = []
        for name in comparable:
            info = METRICS[name]
            base_vals, other_vals = [], []
            for a, b in both:
                va, vb = a.get(name), b.get(name)
                if va is None or vb is None:
                    continue
                base_vals.append(va)
                other_vals.append(vb)
            if len(base_vals) < 1:
                continue
            if info.binary:
                group.append(cached_call(cache, PairedComparison, compare_binary, name, baseline, system,
                                         [v >= 0.5 for v in base_vals], [v >= 0.5 for v in other_vals],
                                         seed=cfg.report.seed))
            else:
                group.append(cached_call(cache, PairedComparison, compare_scores, name, baseline, system, base_vals,
                                         other_vals, seed=cfg.report.seed))
        groups.append(group)
    # one Holm family per system, of the same size for every system of the suite: each metric some system was
    # tested on (has a p-value), whether or not this system has pairs on it (counted as p = 1), so the
    # correction does not shrink with the values a system happened to have (e.g. files decided without the judge)
    family = len({c.metric for g in groups for c in g if c.p_value is not None})
    out = []
    for group in groups:
        out.extend(settle(group, lambda *a, **k: cached_call(cache, *a, **k), family=family))
    return out
