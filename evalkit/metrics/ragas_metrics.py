"""RAG hint metrics through ragas 0.4.3: non-LLM ones offline, LLM ones through evalkit's model client.

- Without a judge: ``NonLLMContextRecall`` (retrieved vs reference contexts) and
  ``NonLLMStringSimilarity`` (hint vs reference hint, 1 - normalised Levenshtein); both need
  ``rapidfuzz``.
- With a judge: ragas' collection metrics Faithfulness, ContextRelevance and AnswerRelevancy,
  given an ``InstructorBaseRagasLLM`` whose calls go through ``evalkit.llm.client.ModelClient``
  (cache, budget and cost apply) and a deterministic local embedding (hashed bag of words: an
  offline stand-in, coarser than a neural embedding, so answer relevancy is lexical here).

Every score is 0-1; ``to_five`` maps it to the design's 1-5 scale (1 + 4x).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # before ragas is imported anywhere below

from pydantic import BaseModel  # noqa: E402
from ragas.embeddings.base import BaseRagasEmbedding  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402

T = TypeVar("T", bound=BaseModel)
EMBEDDING_DIM = 256


def to_five(x: float | None) -> float | None:
    """A 0-1 score on the design's 1-5 scale."""
    return None if x is None else 1.0 + 4.0 * x


def _finite(x: Any) -> float | None:
    try:
        v = float(x.value if hasattr(x, "value") else x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _run(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, also when a loop is already running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}
    t = threading.Thread(target=lambda: box.setdefault("v", asyncio.run(coro)))
    t.start()
    t.join()
    return box["v"]


# --- without a judge -----------------------------------------------------------------------------

def non_llm_metrics(answer: str | None, reference_answer: str | None, contexts: Sequence[str],
                    reference_contexts: Sequence[str] | None) -> dict[str, float | None]:
    """rag_answer_similarity (when a reference hint exists) and rag_context_recall (with reference contexts)."""
    from ragas.dataset_schema import SingleTurnSample
    from ragas.metrics import NonLLMContextRecall, NonLLMStringSimilarity

    out: dict[str, float | None] = {}
    if reference_answer:
        out["rag_answer_similarity"] = _finite(NonLLMStringSimilarity().single_turn_score(
            SingleTurnSample(response=answer or "", reference=reference_answer)))
    if reference_contexts:
        out["rag_context_recall"] = _finite(NonLLMContextRecall().single_turn_score(
            SingleTurnSample(retrieved_contexts=list(contexts) or [""], reference_contexts=list(reference_contexts))))
    return out


# --- with a judge --------------------------------------------------------------------------------

class EvalkitRagasLLM(InstructorBaseRagasLLM):
    """ragas' structured-output LLM over a text function ``complete(prompt) -> text``.

    ``from_client`` makes ``complete`` an ``evalkit.llm.client.ModelClient`` call (cached, budgeted,
    priced); tests pass a deterministic function. Cost and tokens of every call are summed.
    """

    def __init__(self, complete: Callable[[str], tuple[str, dict[str, float]]]) -> None:
        self.complete = complete
        self.cost_usd = 0.0
        self.input_tokens = 0
        self.output_tokens = 0
        self.calls = 0
        self._lock = threading.Lock()

    @classmethod
    def from_client(cls, client: Any, settings: Any) -> "EvalkitRagasLLM":
        from evalkit.llm.calls import LLMRequest

        def complete(prompt: str) -> tuple[str, dict[str, float]]:
            req = LLMRequest(model=settings.model, max_tokens=settings.max_tokens,
                             messages=[{"role": "user", "content": prompt}], item_id="ragas")
            resp = client.call(req)
            return resp.text, {"cost_usd": 0.0 if resp.cached else resp.cost_usd,
                               "input_tokens": resp.usage.input_tokens, "output_tokens": resp.usage.output_tokens}

        return cls(complete)

    def generate(self, prompt: str, response_model: type[T]) -> T:
        from evalkit.llm.structured import parse_model

        schema = response_model.model_json_schema()
        full = (f"{prompt}\n\nAnswer with one JSON object matching this JSON Schema, and nothing after it:\n"
                f"{schema}")
        text, usage = self.complete(full)
        with self._lock:
            self.calls += 1
            self.cost_usd += float(usage.get("cost_usd", 0.0))
            self.input_tokens += int(usage.get("input_tokens", 0))
            self.output_tokens += int(usage.get("output_tokens", 0))
        value, _ = parse_model(response_model, text)
        return value

    async def agenerate(self, prompt: str, response_model: type[T]) -> T:
        return await asyncio.to_thread(self.generate, prompt, response_model)


class HashedEmbedding(BaseRagasEmbedding):
    """Deterministic local embedding: hashed bag of lower-cased words, L2-normalised (offline)."""

    def __init__(self, dim: int = EMBEDDING_DIM) -> None:
        super().__init__()
        self.dim = dim

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        vec = [0.0] * self.dim
        for word in re.findall(r"[a-z0-9_.]+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            vec[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec))
        return [v / norm for v in vec] if norm else vec

    async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
        return self.embed_text(text)


def llm_metrics(llm: InstructorBaseRagasLLM, question: str, contexts: Sequence[str], answer: str,
                embeddings: BaseRagasEmbedding | None = None) -> dict[str, float | None]:
    """rag_faithfulness, rag_context_relevance, rag_answer_relevancy (0-1) and their _5 forms (1-5)."""
    from ragas.metrics.collections import AnswerRelevancy, ContextRelevance, Faithfulness

    embeddings = embeddings or HashedEmbedding()
    contexts = list(contexts)

    async def all_scores() -> tuple[Any, Any, Any]:
        f = await Faithfulness(llm=llm).ascore(user_input=question, response=answer, retrieved_contexts=contexts)
        c = await ContextRelevance(llm=llm).ascore(user_input=question, retrieved_contexts=contexts)
        a = await AnswerRelevancy(llm=llm, embeddings=embeddings).ascore(user_input=question, response=answer)
        return f, c, a

    f, c, a = _run(all_scores())
    out: dict[str, float | None] = {"rag_faithfulness": _finite(f), "rag_context_relevance": _finite(c),
                                    "rag_answer_relevancy": _finite(a)}
    for k in list(out):
        out[f"{k}_5"] = to_five(out[k])
    return out
