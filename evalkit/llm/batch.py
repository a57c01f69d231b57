"""``judge.mode: batch``: uncached requests go out as one Message Batch, at half price.

The batch id and its custom_id -> request key map are written to
``<cache_root>/llm-batches/<batch id>.json`` right after creation, so a run killed while the
batch is processing resumes polling the same batch instead of paying again. Results land in the
ordinary response cache; a finished batch's file stays as a record with ``status: ended``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import Field, ValidationError

from evalkit.fsutil import atomic_write_json
from evalkit.llm.calls import ErrorKind, LLMError, LLMRequest, LLMResponse
from evalkit.llm.client import ModelClient
from evalkit.models import Model

if TYPE_CHECKING:
    from anthropic.types.messages.batch_create_params import Request

BATCH_DIR = "llm-batches"


class BatchState(Model):
    """A submitted Message Batch, persisted so an interrupted run resumes it."""

    batch_id: str
    """Id the API gave the batch."""
    custom_ids: dict[str, str]
    """custom_id sent with each request -> cache key of that request."""
    status: Literal["open", "ended"] = "open"
    """open: results not yet stored; ended: every result read into the cache (or recorded as failed)."""
    errors: dict[str, str] = Field(default_factory=dict)
    """custom_id -> why the batch did not answer it (errored, expired, canceled)."""


def _custom_id(key: str) -> str:
    # The API wants ^[a-zA-Z0-9_-]{1,64}$; a sha256 hex key is exactly 64 such characters.
    return key[:64]


def _state_dir(client: ModelClient) -> Path:
    return client.cache.root / BATCH_DIR


def open_batches(client: ModelClient) -> list[BatchState]:
    """Batches submitted earlier whose results have not all been read."""
    states = []
    for path in sorted(_state_dir(client).glob("*.json")):
        try:
            state = BatchState.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise LLMError("bad_request", f"unreadable batch state {path}: {exc}") from None
        if state.status == "open":
            states.append(state)
    return states


def _save(client: ModelClient, state: BatchState) -> None:
    atomic_write_json(_state_dir(client) / f"{state.batch_id}.json", state)


_KINDS: dict[str, ErrorKind] = {
    "rate_limit_error": "rate_limited",
    "invalid_request_error": "bad_request",
    "not_found_error": "bad_request",
    "request_too_large": "bad_request",
    "authentication_error": "auth",
    "permission_error": "auth",
}


def _failure(result: Any) -> tuple[ErrorKind, str]:
    """Kind and text of a result line that did not succeed (errored, expired, canceled)."""
    inner = getattr(getattr(result, "error", None), "error", None)
    if inner is None:
        return "server_error", str(result.type)
    error_type = getattr(inner, "type", "api_error")
    return _KINDS.get(error_type, "server_error"), f"{result.type}: {error_type}: {getattr(inner, 'message', '')}"


def _finish(client: ModelClient, state: BatchState, requests: dict[str, LLMRequest]) -> dict[str, LLMError]:
    """Poll ``state``'s batch until it ends, store every succeeded result in the cache, and
    return the failures by request key."""
    while True:
        batch = client.retrying(lambda: client.sdk.messages.batches.retrieve(state.batch_id))
        if batch.processing_status == "ended":
            break
        client.sleep(client.settings.batch_poll_s)
    results = client.retrying(lambda: list(client.sdk.messages.batches.results(state.batch_id)))
    failures: dict[str, LLMError] = {}
    seen: set[str] = set()
    for line in results:
        key = state.custom_ids.get(line.custom_id)
        if key is None:
            continue  # not one of ours: the persisted map is the source of truth
        seen.add(line.custom_id)
        if line.result.type != "succeeded":
            kind, text = _failure(line.result)
            failures[key] = LLMError(kind, client.scrub(f"batch {state.batch_id}: {text}"))
            continue
        response = client.response_from_message(line.result.message, key, batch=True)
        client.budget.charge(response.cost_usd)
        request = requests.get(key)
        if request is not None:
            client.cache.put(request, response)
        else:  # answered for another run's request set: keep it, without the miss index
            client.cache.store.put(key, response.model_dump(mode="json"))
    for custom_id, key in state.custom_ids.items():
        if custom_id not in seen:
            failures[key] = LLMError("server_error", f"batch {state.batch_id}: no result line for {custom_id}")
    errors = {cid: failures[key].message for cid, key in state.custom_ids.items() if key in failures}
    _save(client, state.model_copy(update={"status": "ended", "errors": errors}))
    return failures


def run_batch(client: ModelClient, requests: Sequence[LLMRequest]) -> list[LLMResponse | LLMError]:
    """Answers to ``requests`` in order: cached ones free, the rest through one Message Batch.

    Open batches from an interrupted run that cover some of these requests are resumed first.
    A request the batch could not answer gets an ``LLMError`` in its place.
    """
    by_key: dict[str, LLMRequest] = {}
    for request in requests:
        by_key.setdefault(client.key(request), request)
    needed = {key for key, request in by_key.items() if client.cached(request) is None}

    failures: dict[str, LLMError] = {}
    for state in open_batches(client):
        covered = needed & set(state.custom_ids.values())
        if covered:
            # Whatever the old batch failed to answer is sent again below (failures are not billed).
            unanswered = _finish(client, state, by_key)
            needed -= covered - set(unanswered)

    if needed:
        client.budget.check()
        ordered = [key for key in by_key if key in needed]
        custom_ids = {_custom_id(key): key for key in ordered}
        payload = cast("list[Request]",  # each request's params: the Messages API's keyword arguments (api_params)
                       [{"custom_id": _custom_id(key), "params": by_key[key].api_params()} for key in ordered])
        batch = client.retrying(lambda: client.sdk.messages.batches.create(requests=payload))
        state = BatchState(batch_id=batch.id, custom_ids=custom_ids)
        _save(client, state)
        failures.update(_finish(client, state, by_key))

    answers: list[LLMResponse | LLMError] = []
    for request in requests:
        key = client.key(request)
        hit = client.cache.get(key)
        if hit is not None:
            answers.append(hit)
        else:
            answers.append(failures.get(key) or LLMError("server_error", "no batch answered this request"))
    return answers
