"""Judge metrics: the migration judge's four scores, compilability, their mean and stability."""

from __future__ import annotations

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.stages.score import Metrics, scorer

SCORES = {"semantic_equivalence_score": "judge_semantic_equivalence", "rule_adherence_score": "judge_rule_adherence",
          "faithfulness_score": "judge_faithfulness", "code_quality_score": "judge_code_quality"}


@scorer("migration")
def judge_metrics(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                  grades: GradesArtifact) -> Metrics:
    judge = grades.judge or {}
    if output.status != "ok":
        # no answer at all scores like a file that does not parse (all zeros), when a judge is set up
        if judge.get("status") in (None, "not_configured"):
            return {}
        zeros: Metrics = {name: 0.0 for name in SCORES.values()}
        return {**zeros, "judge_mean": 0.0, "judge_compilable": 0.0}
    if judge.get("status") not in ("judged", "parser") or not judge.get("scores"):
        return {}
    out: Metrics = {SCORES[k]: float(v) for k, v in judge["scores"].items() if k in SCORES}
    out["judge_mean"] = sum(out.values()) / len(out) if out else None
    out["judge_compilable"] = float(bool(judge.get("is_compilable")))
    if judge.get("status") == "judged" and (judge.get("samples") or 1) > 1:
        out["judge_unstable"] = float(bool(judge.get("unstable")))
    return out
