"""The response cache: model answers addressed by the digest of the full request.

Beside the answers (namespace ``llm``) a small index (namespace ``llm-index``) remembers, per
logical item and sample, the part digests of the last request stored, so a miss can be explained
("system prompt changed") instead of silently paying again.
"""

from __future__ import annotations

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

    def forget(self, key: str) -> None:
        """Drop the answer stored under ``key`` (an unusable answer is never kept as one to replay)."""
        self.store.delete(key)

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
