"""rag: an incident and retrieved contexts; the answer is a hint, scored with ragas (offline metrics
always, the LLM-path ones through the judge's client)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.artifacts import Sample, SystemArtifacts
from evalkit.casemodels import RagInputs, RagReference
from evalkit.contracts import AnyKindScorer, JudgeContext, JudgeResult
from evalkit.kinds.base import Execution, Judging, Kind, put_extra

if TYPE_CHECKING:
    from evalkit.artifacts import ExecutionArtifact
    from evalkit.cases import Case
    from evalkit.config import Config
    from evalkit.llm.cache import ResponseCache
    from evalkit.llm.calls import LLMRequest
    from evalkit.llm.settings import JudgeSettings
    from evalkit.outcomes import GradesExtra


class Rag(Kind):
    name = "rag"
    description = "A question and retrieved contexts; the hint is scored with ragas."
    inputs = RagInputs
    reference = RagReference
    execution = Execution(validated=True)
    judging = Judging(graded_by_model=True)
    metrics = ("rag_answer_similarity", "rag_context_recall", "rag_faithfulness", "rag_faithfulness_5",
               "rag_context_relevance", "rag_context_relevance_5", "rag_answer_relevancy", "rag_answer_relevancy_5")
    leaderboard = ("rag_faithfulness", "rag_answer_similarity", "rag_context_recall")

    def canary(self, case: Case, variant: str) -> Sample | None:
        if variant == "empty":
            return Sample()
        if variant == "unchanged" and isinstance(case.inputs, RagInputs):  # the incident returned as the hint
            return Sample(text=case.inputs.question)
        if variant == "placeholder":
            return Sample(text="TODO: write the hint")
        return None

    def grade_model(self, cfg: Config, case: Case, sample: Sample, main_file: str | None, execution: ExecutionArtifact | None,
                    extra: GradesExtra) -> JudgeResult:
        from evalkit.graders.rag import grade_rag  # deferred: stage code; planning tasks needs only the declarations

        judge, ragas = grade_rag(cfg, case, sample)
        put_extra(extra, "ragas", ragas)
        return judge

    def judge(self, ctx: JudgeContext) -> JudgeResult:
        from evalkit.graders.judge_dispatch import unconfigured  # deferred: stage code; planning tasks needs only the declarations

        return unconfigured(ctx.config)

    def grade_requests(self, cfg: Config, case: Case, sample: Sample, cache: ResponseCache, exact: bool,
                       settings: JudgeSettings) -> list[tuple[str, LLMRequest, bool]]:
        from evalkit.llm.plan import ragas_plan  # deferred: stage code; planning tasks needs only the declarations

        return [("ragas", r, exact and ok) for r, ok in ragas_plan(cache, settings, case, sample.text or "")]

    def scorers(self) -> list[AnyKindScorer]:
        from evalkit.stages.score_entropy import entropy_metrics  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.stages.score_rag import rag_metrics  # deferred: stage code; planning tasks needs only the declarations

        return [rag_metrics, entropy_metrics]

    def detail(self, case: Any, arts: SystemArtifacts) -> dict[str, Any] | None:
        from evalkit.kinds.pages import rag_detail  # deferred: stage code; planning tasks needs only the declarations

        return rag_detail(case, arts)


KIND = Rag()
