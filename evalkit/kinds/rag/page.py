"""The rag part of a case page (``Kind.detail``), computed from the case JSON alone (evalkit.kinds.page_parts)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.kinds.rag.models import RagInputs
from evalkit.kinds.page_parts import first_sample, graded, typed_part

if TYPE_CHECKING:
    from evalkit.artifacts import SystemArtifacts
    from evalkit.case_detail import CaseDetail


def rag_detail(case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any]:
    """The question, the retrieved contexts, the system's hint and each ragas metric with its status."""
    ragas = graded(arts)[1].ragas
    inputs = typed_part(RagInputs, case.inputs)
    return {"question": inputs.question if inputs else "", "contexts": list(inputs.contexts) if inputs else [],
            "hint": first_sample(arts).text, "ragas_status": ragas.status if ragas is not None else None,
            "ragas_error": None,  # a ragas outcome has no error of its own: each metric has
            "ragas": [{"name": k, **m.model_dump(mode="json")} for k, m in (ragas.metrics if ragas is not None else {}).items()]}
