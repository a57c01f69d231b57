"""RAG-suite metrics (hints from retrieved contexts): ragas' non-LLM metrics offline, and the
LLM-path ones the grade stage computed through the judge's client.

Case inputs: `question` (the incident), `contexts` (retrieved context strings); reference:
`answer` (optional reference hint), `contexts` (optional reference contexts). Systems answer
with `text`. Offline: rag_answer_similarity, rag_context_recall. With a judge (grades.extra
["ragas"], evalkit.kinds.rag.judge): rag_faithfulness, rag_context_relevance, rag_answer_relevancy
(0-1) and their `_5` forms (1-5), for metrics whose status is `judged`; a system that gave no
answer scores 0 on faithfulness and answer relevancy when a judge is configured.
"""

from __future__ import annotations

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.contracts import ScoreResult
from evalkit.kinds.rag.models import RagInputs, RagReference
from evalkit.metrics.metric_info import Metrics
from evalkit.llm.settings import configured
from evalkit.metrics.rag_offline import METRIC_NAMES, non_llm_metrics, to_five


def rag_metrics(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                grades: GradesArtifact) -> ScoreResult:

    inputs, ref = case.inputs_as(RagInputs), case.reference_as(RagReference)
    answer = output.first.text if output.status == "ok" else None
    out: Metrics = dict(non_llm_metrics(answer or "", ref.answer, inputs.contexts, ref.contexts or None))
    judged = judged_metrics(output, grades)
    out.update(judged)
    # a judged metric's reasons are the judge's (on the case page with its verdict); a zero for no answer is ours
    why = f"no answer ({output.status.replace('_', ' ')}): nothing faithful, nothing relevant" if output.status != "ok" else ""
    return ScoreResult(out, explanations={name: why for name in judged} if why else {})


def judged_metrics(output: OutputArtifact, grades: GradesArtifact) -> Metrics:
    """rag_<metric> (0-1) and rag_<metric>_5 (1-5) of the ragas metrics the grade stage judged."""

    out: Metrics = {}
    if output.status != "ok":
        if configured():  # no hint: nothing faithful, nothing relevant (like a judge's zeros)
            for name in ("faithfulness", "answer_relevancy"):
                out[f"rag_{name}"], out[f"rag_{name}_5"] = 0.0, to_five(0.0)
        return out
    metrics = grades.extra.ragas.metrics if grades.extra.ragas is not None else {}
    for name in METRIC_NAMES:
        m = metrics.get(name)
        if m is not None and m.status == "judged" and m.value is not None:
            out[f"rag_{name}"] = float(m.value)
            out[f"rag_{name}_5"] = to_five(float(m.value))
    return out
