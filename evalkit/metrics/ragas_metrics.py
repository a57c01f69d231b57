"""RAG hint metrics through ragas 0.4.3 and evalkit's model client (the non-LLM ones, ragas' string metrics, are
computed without importing ragas: evalkit.metrics.rag_offline).

- With a judge: ragas' collection metrics Faithfulness, ContextRelevance and AnswerRelevancy
  (``judge_rag``; the grade stage calls it through ``evalkit.kinds.rag.judge``), given an
  ``InstructorBaseRagasLLM`` whose calls go through ``evalkit.llm.client.ModelClient`` (cache,
  budget, retries and cost apply; one repair request on an unusable answer; no temperature/top_p)
  and a deterministic local embedding (hashed bag of words: an offline stand-in, coarser than a
  neural embedding, so answer relevancy is lexical here). Each metric gets its own status in the
  judge's vocabulary; one failing does not stop the others.

Every score is 0-1 (an answer relevancy below 0, possible with hashed vectors, is clipped to 0);
``to_five`` maps it to the design's 1-5 scale (1 + 4x).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # before ragas is imported anywhere below

import ragas  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from ragas.embeddings.base import BaseRagasEmbedding  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402

from evalkit.llm.calls import BudgetExceeded, LLMError, LLMRequest
from evalkit.llm.pricing import Usage
from evalkit.llm.structured import AnswerError, ask_structured, parse_model
from evalkit.metrics.rag_offline import METRIC_NAMES, to_five

if TYPE_CHECKING:
    from evalkit.llm.client import ModelClient
    from evalkit.llm.settings import JudgeSettings

T = TypeVar("T", bound=BaseModel)
EMBEDDING_DIM = 256
RAGAS_VERSION: str = ragas.__version__


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


# --- with a judge --------------------------------------------------------------------------------

ANSWER_SUFFIX = "\n\nEnd your answer with that JSON object (double quotes), and nothing after it."


class EvalkitRagasLLM(InstructorBaseRagasLLM):
    """ragas' structured-output LLM over evalkit's model client (or, in tests, a text function).

    With ``client`` (``from_client``), each prompt is one ``LLMRequest`` through
    ``evalkit.llm.client.ModelClient`` (response cache, budget, retries, prices), validated with
    ``evalkit.llm.structured.ask_structured`` (one repair request on a bad answer); no sampling
    knob (temperature, top_p) is ever sent. The n-th identical prompt of this object (ragas asks
    answer relevancy's question 3 times, and repeats context relevance on a bad rating) gets
    ``sample_index`` n, so repeats are distinct cached samples rather than one answer replayed.
    With ``complete(prompt) -> (text, usage)`` (tests), answers are parsed without repair.

    Tokens and cost of every response used are summed (cost the same whether served from the
    cache or not, like the judge); ``api_calls`` counts the uncached ones. Failures are kept in
    ``errors`` as (status, message) — ragas swallows some exceptions (context relevance retries
    and returns NaN), so the caller reads the outcome from here.
    """

    def __init__(self, complete: Callable[[str], tuple[str, dict[str, float]]] | None = None, *,
                 client: ModelClient | None = None, settings: JudgeSettings | None = None,
                 item_id: str = "ragas") -> None:
        if complete is None and client is None:
            raise ValueError("EvalkitRagasLLM needs a model client or a complete() function")

        self.complete = complete
        self.client = client
        self.settings = settings
        self.item_id = item_id
        self.usage = Usage()
        self.cost_usd = 0.0
        self.calls = 0
        """Responses used (cached or not, repairs included)."""
        self.api_calls = 0
        """Responses that were not served from the cache."""
        self.request_keys: list[str] = []
        self.errors: list[tuple[str, str]] = []
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_client(cls, client: ModelClient, settings: JudgeSettings, item_id: str = "ragas") -> "EvalkitRagasLLM":
        return cls(client=client, settings=settings.with_env(), item_id=item_id)

    @property
    def input_tokens(self) -> int:
        return self.usage.input_tokens

    @property
    def output_tokens(self) -> int:
        return self.usage.output_tokens

    def _charge(self, usage: Usage, cost: float, *, cached: bool = False, key: str | None = None) -> None:
        with self._lock:
            self.calls += 1
            self.api_calls += 0 if cached else 1
            self.usage = self.usage + usage
            self.cost_usd += float(cost)
            if key is not None:
                self.request_keys.append(key)

    def _fail(self, status: str, message: str) -> None:
        with self._lock:
            self.errors.append((status, message))

    def generate(self, prompt: str, response_model: type[T]) -> T:
        full = prompt + ANSWER_SUFFIX
        index = self.next_index(full)
        if self.client is None:
            assert self.complete is not None
            text, usage = self.complete(full)
            self._charge(Usage(input_tokens=int(usage.get("input_tokens", 0)),
                               output_tokens=int(usage.get("output_tokens", 0))), usage.get("cost_usd", 0.0))
            try:
                return parse_model(response_model, text)[0]
            except AnswerError as exc:
                self._fail("judge_error", f"{response_model.__name__}: {exc}")
                raise
        request = self.request_for(full, index, response_model)
        try:
            answer = ask_structured(self.client, request, lambda text: parse_model(response_model, text))
        except BudgetExceeded as exc:
            self._fail("not_judged_budget", str(exc))
            raise
        except LLMError as exc:
            self._fail("infra_error", str(exc))
            raise
        for response in answer.responses:
            self._charge(response.usage, response.cost_usd, cached=response.cached, key=response.request_key)
        if answer.value is None:
            raw = answer.raw[-1] if answer.raw else ""
            self._fail("judge_error", f"{response_model.__name__}: {answer.error} (answer: {raw[:300]!r})")
            raise AnswerError(answer.error or "unusable answer")
        return answer.value

    async def agenerate(self, prompt: str, response_model: type[T]) -> T:
        return await asyncio.to_thread(self.generate, prompt, response_model)

    def next_index(self, full: str) -> int:
        """The sample index of this object's next ask of prompt text ``full`` (0 the first time)."""
        with self._lock:
            index = self._seen.get(full, 0)
            self._seen[full] = index + 1
        return index

    def request_for(self, full: str, index: int, response_model: type[BaseModel]) -> LLMRequest:
        """The ``LLMRequest`` sent for prompt text ``full`` (with the JSON suffix) as sample ``index``."""

        if self.settings is None:
            raise ValueError("EvalkitRagasLLM needs the judge settings to build a request")
        return LLMRequest(model=self.settings.model, max_tokens=self.settings.max_tokens,
                          messages=[{"role": "user", "content": full}], sample_index=index,
                          item_id=f"{self.item_id}:{response_model.__name__}")


class HashedEmbedding(BaseRagasEmbedding):
    """Deterministic local embedding: hashed bag of lower-cased words, L2-normalised (offline)."""

    def __init__(self, dim: int = EMBEDDING_DIM) -> None:
        super().__init__()
        self.dim = dim

    def embed_text(self, text: str, **kwargs: object) -> list[float]:
        vec = [0.0] * self.dim
        for word in re.findall(r"[a-z0-9_.]+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            vec[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec))
        return [v / norm for v in vec] if norm else vec

    async def aembed_text(self, text: str, **kwargs: object) -> list[float]:
        return self.embed_text(text)


# Worst first: the status of a metric whose calls failed in several ways.
_FAILURES = ("not_judged_budget", "infra_error", "judge_error")


def judge_rag(llm: EvalkitRagasLLM, question: str, contexts: Sequence[str], answer: str,
              embeddings: BaseRagasEmbedding | None = None) -> dict[str, dict[str, Any]]:
    """Each LLM-path metric's outcome: {status, value (0-1 or None), value_5, error, note, calls
    (responses used, cached or not), usage, cost_usd, request_keys} — the same whether the answers
    came from the cache or the API. One metric failing (API error, budget, unusable answer) does not
    stop the others; status uses the judge's vocabulary (judged, judge_error, infra_error,
    not_judged_budget). An empty hint scores 0 on faithfulness and answer relevancy without a call,
    no retrieved context 0 on context relevance.
    """
    from ragas.metrics.collections import AnswerRelevancy, ContextRelevance, Faithfulness  # deferred: ragas (seconds: numpy, pandas, instructor), only for rag grading

    embeddings = embeddings or HashedEmbedding()
    contexts = [c for c in contexts if c.strip()]
    base_item = llm.item_id
    runs: dict[str, tuple[str | None, Callable[[], Any]]] = {
        "faithfulness": ("empty hint" if not answer.strip() else "no retrieved context" if not contexts else None,
                         lambda: Faithfulness(llm=llm).ascore(user_input=question, response=answer,
                                                              retrieved_contexts=contexts)),
        "context_relevance": ("no retrieved context" if not contexts else None,
                              lambda: ContextRelevance(llm=llm).ascore(user_input=question,
                                                                       retrieved_contexts=contexts)),
        "answer_relevancy": ("empty hint" if not answer.strip() else None,
                             lambda: AnswerRelevancy(llm=llm, embeddings=embeddings).ascore(
                                 user_input=question, response=answer)),
    }

    async def one(name: str, zero_reason: str | None, start: Callable[[], Any]) -> dict[str, Any]:
        if zero_reason is not None:
            return {"status": "judged", "value": 0.0, "value_5": to_five(0.0), "error": None,
                    "note": f"{zero_reason}: 0 without a call", "calls": 0,
                    "usage": {}, "cost_usd": 0.0, "request_keys": []}
        llm.item_id = f"{base_item}:{name}"
        calls, usage, cost = llm.calls, llm.usage, llm.cost_usd
        n_keys, n_errors = len(llm.request_keys), len(llm.errors)
        value, raised = None, None
        try:
            value = _finite(await start())
        except Exception as exc:  # noqa: BLE001 - ragas raises anything; recorded, the others go on
            raised = f"{type(exc).__name__}: {exc}"
        errors = llm.errors[n_errors:]
        kinds = {kind for kind, _ in errors}
        status = next((k for k in _FAILURES[:2] if k in kinds), None)
        if status is None:
            status = "judge_error" if raised is not None or (value is None and kinds) else "judged"
        note = None
        if status != "judged":
            value = None
        elif value is None:
            note = "ragas gave no score (NaN)"
        elif not 0.0 <= value <= 1.0:
            note = f"ragas gave {value:.4f}, clipped to 0-1"
            value = min(1.0, max(0.0, value))
        messages = [m for _, m in errors] or ([raised] if raised else [])
        return {"status": status, "value": value, "value_5": to_five(value),
                "error": "; ".join(dict.fromkeys(messages))[:2000] or None if status != "judged" else None,
                "note": note, "calls": llm.calls - calls,
                "usage": _usage_delta(llm.usage, usage), "cost_usd": llm.cost_usd - cost,
                "request_keys": llm.request_keys[n_keys:]}

    async def all_metrics() -> dict[str, dict[str, Any]]:
        return {name: await one(name, zero, start) for name, (zero, start) in runs.items()}

    try:
        return _run(all_metrics())
    finally:
        llm.item_id = base_item


def _usage_delta(after: Any, before: Any) -> dict[str, int]:
    return {k: getattr(after, k) - getattr(before, k) for k in type(after).model_fields}


def llm_metrics(llm: EvalkitRagasLLM, question: str, contexts: Sequence[str], answer: str,
                embeddings: BaseRagasEmbedding | None = None) -> dict[str, float | None]:
    """rag_faithfulness, rag_context_relevance, rag_answer_relevancy (0-1) and their _5 forms (1-5)."""
    outcome = judge_rag(llm, question, contexts, answer, embeddings)
    out: dict[str, float | None] = {}
    for name in METRIC_NAMES:
        out[f"rag_{name}"] = outcome[name]["value"]
    for name in METRIC_NAMES:
        out[f"rag_{name}_5"] = outcome[name]["value_5"]
    return out
