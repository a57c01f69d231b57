"""rag: an incident and retrieved contexts; the answer is a hint, scored with ragas (offline metrics
always, the LLM-path ones through the judge's client)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.artifacts import Sample, SystemArtifacts
from evalkit.kinds.rag.models import RagInputs, RagReference
from evalkit.contracts import AnyKindScorer, JudgeContext, JudgeResult
from evalkit.kinds.base import Execution, Judging, Kind, put_extra
from evalkit.lazy_modules import later
import evalkit.kinds.rag.metrics  # noqa: F401  (the kind's metrics: registered whenever the kind is)

if TYPE_CHECKING:
    from evalkit.artifacts import ExecutionArtifact
    from evalkit.cases import Case
    from evalkit.config import Config
    from evalkit.llm.cache import ResponseCache
    from evalkit.llm.calls import LLMRequest
    from evalkit.llm.settings import JudgeSettings
    from evalkit.outcomes import GradesExtra
    from evalkit.case_detail import CaseDetail

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.graders import judge_dispatch as judge_dispatch_code
    from evalkit.kinds.rag import judge as rag_judge
    from evalkit.kinds.rag import page as rag_page
    from evalkit.kinds.rag import score as rag_score
    from evalkit.stages import score_entropy as score_entropy_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    judge_dispatch_code = later("evalkit.graders.judge_dispatch")
    rag_judge = later("evalkit.kinds.rag.judge")
    rag_page = later("evalkit.kinds.rag.page")
    rag_score = later("evalkit.kinds.rag.score")
    score_entropy_code = later("evalkit.stages.score_entropy")


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

        judge, ragas = rag_judge.grade_rag(cfg, case, sample)
        put_extra(extra, "ragas", ragas)
        return judge

    def judge(self, ctx: JudgeContext) -> JudgeResult:
        return judge_dispatch_code.unconfigured(ctx.config)

    def grade_requests(self, cfg: Config, case: Case, sample: Sample, cache: ResponseCache, exact: bool,
                       settings: JudgeSettings) -> list[tuple[str, LLMRequest, bool]]:

        return [("ragas", r, exact and ok) for r, ok in rag_judge.ragas_plan(cache, settings, case, sample.text or "")]

    def scorers(self) -> list[AnyKindScorer]:
        return [rag_score.rag_metrics, score_entropy_code.entropy_metrics]

    def detail(self, case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any] | None:
        return rag_page.rag_detail(case, arts)


KIND = Rag()
