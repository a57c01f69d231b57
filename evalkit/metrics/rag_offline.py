"""RAG hint metrics without a model: ragas 0.4.3's two non-LLM metrics, computed with rapidfuzz as ragas does.

- ``rag_answer_similarity``: ragas' ``NonLLMStringSimilarity`` (its default, Levenshtein): 1 - rapidfuzz's
  normalised Levenshtein distance between the reference hint and the answer.
- ``rag_context_recall``: ragas' ``NonLLMContextRecall``: the share of reference contexts whose best similarity
  (as above) to a retrieved context is above 0.5.

ragas itself is not imported here. Its package imports instructor, the Anthropic and OpenAI SDKs, langchain and
datasets (6 to 7 s of CPU on a 2-core machine), which every process scoring a rag case paid, judge or not, for
these two string comparisons, which rapidfuzz computes in ragas too. tests/metrics/test_ragas.py holds them
equal to ragas' own metrics on random inputs. The LLM-path metrics (faithfulness, context and answer relevancy)
need ragas and stay in evalkit.metrics.ragas_metrics.
"""

from __future__ import annotations

from collections.abc import Sequence

from rapidfuzz.distance import Levenshtein

METRIC_NAMES = ("faithfulness", "context_relevance", "answer_relevancy")
"""The LLM-path ragas metrics, as evalkit records them (scores.json: ``rag_<name>`` and ``rag_<name>_5``)."""

CONTEXT_RECALL_THRESHOLD = 0.5
"""ragas' ``NonLLMContextRecall.threshold``: a reference context counts as retrieved above this similarity."""


def to_five(x: float | None) -> float | None:
    """A 0-1 score on the design's 1-5 scale."""
    return None if x is None else 1.0 + 4.0 * x


def string_similarity(reference: str, response: str) -> float:
    """ragas' ``NonLLMStringSimilarity``: 1 - the normalised Levenshtein distance (0 to 1; 1 when equal)."""
    return 1.0 - Levenshtein.normalized_distance(reference, response)


def context_recall(retrieved: Sequence[str], reference: Sequence[str]) -> float:
    """ragas' ``NonLLMContextRecall``: the share of ``reference`` contexts whose best similarity to one of
    ``retrieved`` is above `CONTEXT_RECALL_THRESHOLD`. Both non-empty (ragas' score is NaN without a reference)."""
    if not retrieved or not reference:
        raise ValueError("context_recall needs retrieved and reference contexts")
    found = [max(string_similarity(r, ref) for r in retrieved) > CONTEXT_RECALL_THRESHOLD for ref in reference]
    return sum(found) / len(found)


def non_llm_metrics(answer: str | None, reference_answer: str | None, contexts: Sequence[str],
                    reference_contexts: Sequence[str] | None) -> dict[str, float | None]:
    """rag_answer_similarity (when a reference hint exists) and rag_context_recall (with reference contexts); no
    retrieved context counts as one empty one, as evalkit passed ragas before."""
    out: dict[str, float | None] = {}
    if reference_answer:
        out["rag_answer_similarity"] = string_similarity(reference_answer, answer or "")
    if reference_contexts:
        out["rag_context_recall"] = context_recall(list(contexts) or [""], list(reference_contexts))
    return out
