"""RAG-suite metrics (hints from retrieved contexts): ragas' non-LLM metrics, offline.

Case inputs: `question` (the incident), `contexts` (retrieved context strings); reference:
`answer` (optional reference hint), `contexts` (optional reference contexts). Systems answer
with `text`. The judge-backed metrics (evalkit.metrics.ragas_metrics.llm_metrics) are not wired
into a stage yet.
"""

from __future__ import annotations

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.models import Model
from evalkit.stages.score import Metrics, scorer


class RagInputs(Model):
    """Inputs of a rag case."""

    question: str
    """The incident or question the hint answers."""
    contexts: list[str] = []
    """Retrieved context strings, most relevant first."""


class RagReference(Model):
    """Reference of a rag case."""

    answer: str | None = None
    """A reference hint (optional)."""
    contexts: list[str] = []
    """Contexts a good retriever would return (optional; enables context recall)."""


@scorer("rag")
def rag_metrics(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                grades: GradesArtifact) -> Metrics:
    from evalkit.metrics.ragas_metrics import non_llm_metrics

    inputs = RagInputs.model_validate(case.inputs)
    ref = RagReference.model_validate(case.data.get("reference", {}))
    answer = output.first.text if output.status == "ok" else None
    return dict(non_llm_metrics(answer or "", ref.answer, inputs.contexts, ref.contexts or None))
