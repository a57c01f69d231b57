"""The response cache: model answers addressed by the digest of the full request.

Beside the answers (namespace ``llm``) a small index (namespace ``llm-index``) remembers, per
logical item and sample, the part digests of the last request stored, so a miss can be explained
("system prompt changed") instead of silently paying again.

An answer that was paid for but could not be used (the judge's verdict stayed unparseable after the
repair request) is not replayed as an answer, but it is kept, with its raw text, under
``llm-unusable``: a rerun of the same grading (after a kill, a lost doit database) gets it back
instead of paying again and records the same ``judge_error``; only ``--retry-judge-errors`` drops
it (``drop_unusable``) so that the model is asked anew.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from pydantic import ValidationError

from evalkit.llm.calls import LLMRequest, LLMResponse
from evalkit.store import ContentStore

PART_NAMES = {
    "model": "model changed",
    "system": "system prompt changed",
    "messages": "messages changed",
    "params": "parameters changed",
    "sample_index": "sample index changed",
}


class ResponseCache:
    """Content-addressed model answers under ``<root>/llm`` plus the miss-explaining index."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.store = ContentStore(root, "llm")
        self.index = ContentStore(root, "llm-index")
        self.unusable_store = ContentStore(root, "llm-unusable")

    def key(self, request: LLMRequest, scope: dict[str, str] | None = None) -> str:
        """The digest of ``request`` and, when given, the ``scope`` its answer also depends on (the provider
        and base URL: evalkit.llm.providers.cache_scope). Keys never hold an API key."""
        inputs = request.key_inputs()
        return self.store.key(inputs if scope is None else {**inputs, "endpoint": scope})

    def get(self, key: str) -> LLMResponse | None:
        """The stored answer marked ``cached``, or None (a corrupt or foreign entry counts as absent)."""
        value = self.store.get(key)
        if value is None:
            return None
        try:
            response = LLMResponse.model_validate(value)
        except ValidationError:
            return None
        return response.model_copy(update={"cached": True})

    def __contains__(self, key: str) -> bool:
        return key in self.store

    def put(self, request: LLMRequest, response: LLMResponse) -> None:
        self.store.put(response.request_key, response.model_copy(update={"cached": False}))
        if request.item_id is not None:
            parts = request.part_digests()
            self.index.put(self._index_key(request), {"key": response.request_key, "parts": parts})

    def claim(self, key: str) -> AbstractContextManager[None]:
        """Held while the answer under ``key`` is asked for: identical requests of other clients, processes and
        cluster workers wait, then find it stored (evalkit.store.ContentStore.claim)."""
        return self.store.claim(key)

    def forget(self, key: str) -> None:
        """Drop the answer stored under ``key``."""
        self.store.delete(key)

    def set_aside(self, key: str) -> None:
        """Move the answer under ``key`` from the answers to the unusable ones: never replayed as an answer,
        still never paid for twice (`unusable`)."""
        value = self.store.get(key)
        if value is not None:
            self.unusable_store.put(key, value)
            self.store.delete(key)

    def unusable(self, key: str) -> LLMResponse | None:
        """The unusable answer kept under ``key`` (marked ``cached``), or None."""
        value = self.unusable_store.get(key)
        if value is None:
            return None
        try:
            return LLMResponse.model_validate(value).model_copy(update={"cached": True})
        except ValidationError:
            return None

    def drop_unusable(self, keys: list[str]) -> int:
        """Forget the unusable answers under ``keys`` (the model is to be asked again); how many there were."""
        dropped = 0
        for key in keys:
            if key in self.unusable_store:
                self.unusable_store.delete(key)
                dropped += 1
        return dropped

    def _index_key(self, request: LLMRequest) -> str:
        return self.index.key({"item_id": request.item_id, "sample_index": request.sample_index})

    def explain_miss(self, request: LLMRequest, scope: dict[str, str] | None = None) -> str:
        """Why ``request`` is not cached, compared with the last request stored for the same item."""
        if self.key(request, scope) in self.store:
            return "cached"
        if request.item_id is None:
            return "not cached; the request has no item id to compare with"
        previous = self.index.get(self._index_key(request))
        if previous is None:
            return f"not cached; no previous request for item {request.item_id!r}"
        old, new = previous.get("parts", {}), request.part_digests()
        changed = [text for name, text in PART_NAMES.items() if old.get(name) != new[name]]
        if not changed:
            return "not cached; same request as before but its answer is missing from the cache"
        return "; ".join(changed)
