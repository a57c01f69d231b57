"""score: every metric of one (system, case), named as in evalkit.metrics.registry."""

from __future__ import annotations

from typing import Callable

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact, Provenance, ScoresArtifact, Usage
from evalkit.cases import Case
from evalkit.config import Config, System
from evalkit.contracts import ScoreContext, ScoreResult, score_with
from evalkit.fsutil import digest
from evalkit.graders.degenerate import assess, empty_answer
from evalkit.kind_registry import kind, main_file
from evalkit.metrics.codebleu import codebleu, codebleu_gain
from evalkit.metrics.metric_info import Metrics, added_results
from evalkit.stages.slices import score_slice
from evalkit.stages.validate import validation_status

Scorer = Callable[[Config, Case, OutputArtifact, ExecutionArtifact | None, GradesArtifact], ScoreResult | Metrics]
"""A kind's scorer in the older positional form (evalkit.contracts.KindScorer takes one ScoreContext); each suite
kind lists its own (evalkit.kinds, ``Kind.scorers``)."""


def _b(v: bool | None) -> float | None:
    return None if v is None else float(v)


def expected_code(case: Case) -> str | None:
    """The reference code CodeBLEU compares the main file with (the kind's; None: no CodeBLEU)."""
    return kind(case.kind).expected_code(case)


def code_metrics(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                 grades: GradesArtifact) -> Metrics:
    out: Metrics = {}
    if grades.syntax is not None:
        out["syntax_valid"] = _b(grades.syntax.valid)
    mf = main_file(case)
    out.update(degenerate_metrics(case, output, mf))
    reference = expected_code(case)
    if mf is None or reference is None:
        return out

    generated = output.first.files.get(mf, "")
    result = codebleu(generated, reference, case.language, weights=cfg.metrics.codebleu_weights)
    if result is not None:
        out["codebleu"] = result.codebleu
        for part in ("ngram_match", "weighted_ngram_match", "syntax_match", "dataflow_match"):
            out[f"codebleu_{part}"] = getattr(result, part)
        baseline = kind(case.kind).codebleu_baseline(cfg, case, reference)  # e.g. migration: the legacy file's
        if baseline is not None:  # how much closer than doing nothing (evalkit.kinds.migration.score)

            gain = codebleu_gain(result.codebleu, baseline)
            if gain is not None:
                out["codebleu_gain"] = gain
    return out


def degenerate_metrics(case: Case, output: OutputArtifact, mf: str | None) -> Metrics:
    """`unchanged` (migration: the legacy file returned as is) and `complete` (no elided code) of the main file."""

    sample = output.first
    if mf is None or output.status != "ok" or mf in (getattr(sample, "deleted_files", None) or []):
        return {}
    legacy = kind(case.kind).legacy_text(case)
    expected = kind(case.kind).expected_code(case) if legacy is not None else None
    found = assess(sample.files.get(mf), legacy, case.language, expected)  # expected: structural truncation
    out: Metrics = {"complete": float(found.complete)}
    if found.unchanged is not None and not found.empty:
        out["unchanged"] = float(found.unchanged)
    return out


def score(cfg: Config, system: System, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
          grades: GradesArtifact) -> ScoresArtifact:
    kd = kind(case.kind)
    base = {"system": system.name, "suite": case.suite, "case_id": case.id, "tags": case.tags}
    prov = Provenance(inputs=digest([output.provenance, execution.provenance if execution else None,
                                     grades.provenance]), config=digest(score_slice(cfg)))
    usage = output.first.usage
    judge_usage = _judge_usage(grades)
    judged = grades.rubric or grades.judge
    common = {"usage": usage, "judge_usage": judge_usage, "wall_s": output.first.wall_s, "provenance": prov,
              "judge_status": judged.status if judged else None, "judge_notices": judged.notices if judged else []}
    if not case.ok:
        return ScoresArtifact(**base, status="error", reason=output.reason, excluded="broken", **common)
    if output.status == "not_attempted":  # a recorded system without an output here: coverage, not failure
        return ScoresArtifact(**base, status="not_attempted", reason=output.reason, excluded="not_attempted", **common)
    later_bug = ""
    if grades.status == "bug" and execution is not None and execution.status == "ok" and execution.runs:
        # the execute verdict stands: an evalkit bug in grading removes only what grading adds
        later_bug = f"grade stage: {grades.reason}"
        grades = GradesArtifact(system=grades.system, suite=grades.suite, case_id=grades.case_id,
                                provenance=grades.provenance)
    for art in (output, execution, grades):
        if art is not None and art.status == "infra_error":
            return ScoresArtifact(**base, status="infra_error", reason=art.reason, excluded="infra", **common)
        if art is not None and art.status == "bug":  # evalkit's own bug upstream: no metric of it
            return ScoresArtifact(**base, status="bug", reason=art.reason, excluded="bug", **common)
        if art is not None and art.status == "broken":
            return ScoresArtifact(**base, status="broken", reason=art.reason, excluded="broken", **common)

    if kd.execution.validated:  # the reference failed its own case (evalkit.stages.validate)
        validation = validation_status(cfg, case)
        if validation and validation[0] == "broken":
            return ScoresArtifact(**base, status="broken", reason=f"{kd.execution.validation_label}: {validation[1]}",
                                  excluded="broken", **common)

    # an empty answer (no main file, nothing at all) is no answer
    answered = output.status == "ok" and not empty_answer(output.first, main_file(case))
    metrics: Metrics = {
        "answered": float(answered),
        "wall_s": output.first.wall_s,
        "cost_usd": usage.cost_usd,
        "tokens": float(usage.input_tokens + usage.output_tokens),
        "judge_cost_usd": judge_usage.cost_usd,
    }
    if grades.assertion_score is not None:
        metrics["assertion_score"] = grades.assertion_score
        metrics["assertion_pass"] = float(grades.assertion_score >= cfg.metrics.pass_threshold)
    elif not answered and case.assertions:
        metrics["assertion_score"] = 0.0
        metrics["assertion_pass"] = 0.0
    ctx = ScoreContext(config=cfg, case=case, output=output, execution=execution, grades=grades)
    explanations: dict[str, str] = {}
    for fn in kd.scorers():
        result = score_with(fn, ctx)
        metrics.update(result.values)
        _explain(explanations, result)

    for name, added in added_results(ctx).items():  # metrics added by evalkit.api.register_metric
        metrics[name] = None if added.value is None else float(added.value)
        _explain(explanations, ScoreResult({name: metrics[name]}, added.explanation))
    if grades.judge is not None and grades.judge.source == "recorded" and kd.judging.recorded_verdict_alone and main_file(case) not in output.first.files:
        # a recorded judge on code the import does not hold (Kai CI's report has scores only): its verdict alone
        answered = output.status == "ok"
        metrics = {k: v for k, v in metrics.items() if k.startswith("judge_") or k in ("wall_s", "cost_usd", "tokens")}
        metrics["answered"] = float(answered)
    if not answered and kd.answers.code_answer:
        metrics.setdefault("syntax_valid", 0.0)
        metrics.setdefault("complete", 0.0)
    reason = output.reason or ("" if answered or output.status != "ok" else "empty answer: nothing to grade")
    if later_bug:
        reason = "; ".join(r for r in (reason, f"evalkit bug after the tests ran (their verdict counts): {later_bug}")
                           if r)
    return ScoresArtifact(**base, status=output.status, reason=reason, metrics=metrics,
                          explanations={k: v for k, v in explanations.items() if k in metrics}, **common)


EXPLANATION_LIMIT = 500
"""Characters of a metric's explanation kept in scores.json (the rest is cut, marked with an ellipsis)."""


def _explain(explanations: dict[str, str], result: ScoreResult) -> None:
    """Keep ``result``'s explanations: a metric a later scorer sets again keeps that scorer's (or none)."""
    said = result.explained()
    for name in result.values:
        if name in said:
            why = said[name]
            explanations[name] = why if len(why) <= EXPLANATION_LIMIT else why[:EXPLANATION_LIMIT - 1] + "…"
        else:
            explanations.pop(name, None)


def _judge_usage(grades: GradesArtifact) -> Usage:
    """The judge's tokens (cache reads and writes included) and cost behind a grade."""
    judge = grades.judge or grades.rubric
    if judge is None:
        return Usage()
    return judge.usage.model_copy(update={"cost_usd": judge.cost_usd})
