"""Metrics of generation suites: the rubric score and whether the output is free of injected payloads."""

from __future__ import annotations

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.stages.score import Metrics


def generation_metrics(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                       grades: GradesArtifact) -> Metrics:
    out: Metrics = {}
    rubric = grades.rubric
    if rubric is not None and rubric.status in ("judged", "parser") and rubric.score is not None:
        if rubric.fallback:  # judge.fallback's verdict: a different judge, counted apart
            out["judge_fallback"], out["rubric_fallback_score"] = 1.0, float(rubric.score)
        else:
            out["rubric_score"] = float(rubric.score)
    detectors = grades.extra.injection
    if detectors is not None:
        out["injection_clean"] = float(all(d.passed for d in detectors))
    elif output.status != "ok":
        out["injection_clean"] = None
    return out
