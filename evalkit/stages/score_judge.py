"""Judge metrics: one per field of the case's judge rubric, the rubric's overall score, and stability.

The rubric (evalkit.graders.rubric_config; CodeJudge's by default) says each field's metric name and
scale: numeric fields give their mean over the judge's samples, boolean ones their majority as 0/1.
"""

from __future__ import annotations

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.graders.rubric_config import rubric_for, shipped, shipped_names
from evalkit.metrics.metric_info import Metrics


def judge_metrics(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                  grades: GradesArtifact) -> Metrics:
    judge = grades.judge
    if judge is None:  # no judge outcome: a patch or e2e suite without `judge:`, a file deleted as the target does
        return {}
    if judge.status == "not_configured" and output.status != "ok":
        return {}
    rubric = rubric_for(cfg, case)
    recorded = judge.rubric
    if recorded and recorded != rubric.name and recorded in shipped_names():
        rubric = shipped(recorded)  # a recorded judge (an imported report) scored under a shipped rubric
    if output.status != "ok":
        # no answer at all scores like a file decided without a model (CodeJudge: all zeros), when a judge is set up
        values = {f.name: float(f.decided_value()) for f in rubric.fields}
    elif judge.status not in ("judged", "parser") or not judge.scores:
        return {}
    else:
        flags = judge.flags
        if "is_compilable" not in flags and judge.is_compilable is not None:
            flags = {**flags, "is_compilable": judge.is_compilable}  # records from before rubrics
        values = {f.name: float(v) for f in rubric.numeric if (v := judge.scores.get(f.name)) is not None}
        values |= {f.name: float(bool(flags[f.name])) for f in rubric.booleans if f.name in flags}
    out: Metrics = {f.metric_name: values[f.name] for f in rubric.numeric if f.name in values}
    out[rubric.overall_metric] = rubric.overall(values)
    out |= {f.metric_name: values[f.name] for f in rubric.booleans if f.name in values}
    if output.status == "ok" and judge.status == "judged" and (judge.samples or 1) > 1:
        out["judge_unstable"] = float(judge.unstable)
    if judge.fallback:  # judge.fallback's verdict: a different judge, counted apart from the primary's
        return {"judge_fallback": 1.0, "judge_fallback_score": out[rubric.overall_metric]}
    return out
