"""The `regex` suite kind: the answer's text is a regular expression, scored on the reference's strings."""

from pathlib import Path

from typing import Any

from evalkit.artifacts import Sample, SystemArtifacts
from evalkit.cases import Case
from evalkit.contracts import AnyKindScorer, ScoreContext, ScoreResult
from evalkit.kinds.base import Kind
from evalkit.metrics.registry import metric
from evalkit.report.models import CaseDetail

from rx_evalkit.judge import compile_or_reason, misclassified
from rx_evalkit.models import RegexInputs, RegexReference

metric(name="rx_accuracy", display="Regex accuracy", aggregate="mean", headline=True, primary=3,
       kinds=("regex",), description="Share of the reference's strings the answered expression classifies right.")
metric(name="rx_exact", display="Regex exact", aggregate="rate", binary=True, headline=True,
       kinds=("regex",), description="Share of cases whose expression classifies every reference string right.")


def rx_scores(ctx: ScoreContext) -> ScoreResult:
    ref = ctx.case.reference_as(RegexReference)
    total = len(ref.positives) + len(ref.negatives)
    answer = ctx.sample.text if ctx.output.status == "ok" else None
    rx, why = compile_or_reason((answer or "").strip())
    if rx is None:
        return ScoreResult({"rx_accuracy": 0.0, "rx_exact": 0.0}, why)
    wrong = misclassified(rx, ref.positives, ref.negatives)
    right = total - len(wrong)
    return ScoreResult({"rx_accuracy": right / total if total else None, "rx_exact": float(not wrong)},
                       f"{right} of {total} strings classified right")


class Regex(Kind):
    name = "regex"
    description = "Write a regular expression matching the strings described."
    inputs = RegexInputs
    reference = RegexReference
    metrics = ("rx_accuracy", "rx_exact")
    leaderboard = ("rx_accuracy", "rx_exact")
    templates = Path(__file__).parent / "templates"

    def gold(self, case: Case) -> Sample:
        return Sample(text=case.reference_as(RegexReference).pattern)

    def detail(self, case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any] | None:
        # case: the page's CaseDetail (reference a dict); arts: this system's artifacts (the older JSON form by stage)
        ref = case.reference or {}
        samples = (arts.get("output") or {}).get("samples") or [{}]
        answer = (samples[0].get("text") or "").strip()
        rx, why = compile_or_reason(answer)
        wrong = misclassified(rx, ref.get("positives", []), ref.get("negatives", [])) if rx else []
        return {"answer": answer, "problem": why or (f"wrong on {wrong!r}" if wrong else "all right")}

    def scorers(self) -> list[AnyKindScorer]:
        return [rx_scores, *super().scorers()]


KIND = Regex()
