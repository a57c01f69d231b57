"""`aggregate_scores` reads each score's metrics once (stop 49): on random score sets it gives what reading every score
once per metric gives (the values in the scores' order, not-applicable counts, judge errors excluded)."""

from __future__ import annotations

import random
from collections import Counter
from types import SimpleNamespace

from evalkit.artifacts import ScoresArtifact
from evalkit.config import ReportSettings
from evalkit.graders.rubric_config import metric_infos, shipped
from evalkit.metrics.registry import METRICS
from evalkit.report.aggregates import JUDGE_ERROR, JUDGE_FAILED, aggregate, aggregate_scores

CFG = SimpleNamespace(report=ReportSettings(bootstrap_resamples=200))
NAMES = ["judge_mean", "codebleu", "wall_s", "resolved", "assertion_score"]


def per_metric(scores: list[ScoresArtifact], names: list[str]) -> dict[str, object]:
    """The reference: every kept score read once per metric."""
    excluded: Counter[str] = Counter(s.excluded for s in scores if s.excluded)
    kept = [s for s in scores if not s.excluded]
    out = {}
    for name in names:
        values, n_na, mine = [], 0, excluded
        for s in kept:
            v = s.metrics.get(name)
            if v is not None:
                values.append(float(v))
            elif METRICS[name].judge_field and s.judge_status in JUDGE_FAILED:
                mine = mine + Counter({JUDGE_ERROR: 1})
            else:
                n_na += 1
        out[name] = aggregate(METRICS[name], values, n_na, mine, CFG)  # type: ignore[arg-type]
    return out


def test_one_pass_equals_one_pass_per_metric_on_random_scores() -> None:
    metric_infos(shipped("codejudge"))  # registers the judge's metrics (judge_mean is a judge field)
    assert METRICS["judge_mean"].judge_field
    rng = random.Random(49)
    for _ in range(300):
        scores = []
        for i in range(rng.randint(0, 12)):
            metrics: dict[str, float | None] = {}
            for name in NAMES:
                r = rng.random()
                if r < 0.2:
                    continue  # absent
                metrics[name] = None if r < 0.35 else (
                    rng.choice([0.0, 1.0]) if name == "resolved" else rng.choice([0.0, 1.0, 3.0, rng.random()]))
            scores.append(ScoresArtifact(
                system="a", suite="s", case_id=f"c{i}", metrics=metrics,
                judge_status=rng.choice(["judged", "judge_error", "infra_error", "not_judged_budget", "not_configured"]),
                excluded=rng.choice([None, None, None, "broken", "infra", "not_judged"])))
        names = rng.sample(NAMES, rng.randint(0, len(NAMES)))
        got = aggregate_scores(scores, names, CFG)  # type: ignore[arg-type]
        assert {k: v.model_dump() for k, v in got.items()} == {
            k: v.model_dump() for k, v in per_metric(scores, names).items()}  # type: ignore[attr-defined]
