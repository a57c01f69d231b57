"""The model-graded part of a rag case: ragas' faithfulness, context relevance and answer relevancy.

The three metrics run through the run's shared model client (``judging.client_for``: response
cache, budget, retries, prices) via ``evalkit.metrics.ragas_metrics.EvalkitRagasLLM``. The grade
stage records two things:

- ``grades.judge``: a summary in the judge's vocabulary, so the report's notes and the judge
  usage count it like any judge: ``status`` (judged when every metric is; otherwise the worst of
  not_judged_budget, infra_error, judge_error), ``scores`` (0-1, judged metrics only), ``usage``
  and ``cost_usd`` (every response, cached or not), ``error``.
- ``grades.extra["ragas"]``: per metric its status, value (0-1), value_5 (1-5), error, calls,
  usage, cost and cache keys; without a judge every metric is ``not_configured``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from evalkit.artifacts import Sample
from evalkit.kinds.rag.models import RagInputs
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.graders.judge_dispatch import NOT_CONFIGURED, client_for
from evalkit.llm.cache import ResponseCache
from evalkit.llm.calls import LLMRequest
from evalkit.llm.plan import planning_ragas_llm
from evalkit.llm.pricing import Usage
from evalkit.llm.settings import JudgeSettings
from evalkit.outcomes import JudgeOutcome, JudgeStatus, RagasMetric, RagasOutcome
from evalkit.lazy_modules import later
from evalkit.metrics.rag_offline import METRIC_NAMES

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.metrics import ragas_metrics as ragas_metrics_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    ragas_metrics_code = later("evalkit.metrics.ragas_metrics")

SOURCE: Literal["ragas"] = "ragas"
_WORST_FIRST: tuple[JudgeStatus, ...] = ("not_judged_budget", "infra_error", "judge_error")


def not_configured() -> tuple[JudgeOutcome, RagasOutcome]:
    """(judge summary, extra["ragas"]) when no judge is configured: no call, nothing scored."""

    metrics = {name: RagasMetric(status="not_configured", value=None, value_5=None) for name in METRIC_NAMES}
    return NOT_CONFIGURED.model_copy(), RagasOutcome(status="not_configured", metrics=metrics)


def grade_rag(cfg: Config, case: Case, sample: Sample) -> tuple[JudgeOutcome, RagasOutcome]:
    """(judge summary, extra["ragas"]) for one rag answer."""

    client = client_for(cfg)
    if client is None:
        return not_configured()

    settings = cfg.judge.with_env()
    inputs = case.inputs_as(RagInputs)
    llm = ragas_metrics_code.EvalkitRagasLLM.from_client(client, settings, item_id=f"ragas:{case.key}")
    raw = ragas_metrics_code.judge_rag(llm, inputs.question, list(inputs.contexts), sample.text or "")
    metrics = {name: RagasMetric.model_validate(m) for name, m in raw.items()}
    failed = [m.status for m in metrics.values() if m.status != "judged"]
    status: JudgeStatus = "judged"
    for worst in reversed(_WORST_FIRST):  # the first of _WORST_FIRST that happened
        status = worst if worst in failed else status
    usage = sum((m.usage for m in metrics.values()), Usage())
    errors = [f"{name}: {m.error}" for name, m in metrics.items() if m.error]
    summary = JudgeOutcome(
        status=status, source=SOURCE, model=settings.model,
        scores={name: m.value for name, m in metrics.items() if m.value is not None},
        usage=usage, cost_usd=sum(m.cost_usd for m in metrics.values()),
        error="; ".join(errors) or None,
        request_keys=[k for m in metrics.values() for k in m.request_keys],
    )
    extra = RagasOutcome(status=status, ragas_version=ragas_metrics_code.RAGAS_VERSION, model=settings.model,
                         embedding=f"hashed bag of words, {ragas_metrics_code.EMBEDDING_DIM} dims (offline)", metrics=metrics)
    return summary, extra


def ragas_plan(cache: ResponseCache, settings: JudgeSettings, case: Case, answer: str) -> list[tuple[LLMRequest, bool]]:
    """The requests ragas would send to grade ``answer`` (evalkit.llm.plan's planning LLM), each with whether it is exact."""
    inputs = case.inputs_as(RagInputs)
    planned: list[tuple[LLMRequest, bool]] = []
    llm = planning_ragas_llm(cache, settings, f"ragas:{case.key}", planned)
    ragas_metrics_code.judge_rag(llm, inputs.question, list(inputs.contexts), answer)
    return planned
