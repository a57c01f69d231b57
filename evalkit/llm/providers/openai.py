"""OpenAI-compatible Chat Completions over plain HTTP (httpx2, which the anthropic SDK already brings).

``POST {base_url}/chat/completions`` is what OpenAI, vLLM, Ollama and most gateways speak. The
request's system blocks become one system message, its text blocks plain strings;
``stop_sequences`` becomes ``stop``. ``usage.prompt_tokens`` (less the cached tokens, when the API
reports ``prompt_tokens_details.cached_tokens``) and ``completion_tokens`` become the ``Usage``;
``finish_reason`` is put in the Messages API's words (stop -> end_turn, length -> max_tokens).
A 200 whose body is not a chat completion is a ``bad_response`` fault.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from evalkit.llm import deprecation
from evalkit.llm.calls import LLMError, LLMRequest
from evalkit.llm.pricing import Usage
from evalkit.llm.providers.base import Faults, ProviderReply, bad_reply

if TYPE_CHECKING:
    from evalkit.llm.settings import JudgeSettings

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal", "tool_calls": "tool_use"}
DROPPED_PARAMS = frozenset({"metadata"})
"""Messages API parameters with no Chat Completions counterpart: not sent."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [] if isinstance(block, dict))


def chat_body(request: LLMRequest) -> dict[str, Any]:
    """The Chat Completions body of ``request``."""
    messages: list[dict[str, Any]] = []
    system = "\n\n".join(block.get("text", "") for block in request.system if block.get("text"))
    if system:
        messages.append({"role": "system", "content": system})
    messages.extend({"role": m.get("role", "user"), "content": _text(m.get("content", ""))} for m in request.messages)
    body: dict[str, Any] = {"model": request.model, "messages": messages, "max_tokens": request.max_tokens}
    for name, value in request.extra.items():
        if name == "stop_sequences":
            body["stop"] = value
        elif name not in DROPPED_PARAMS:
            body[name] = value
    return body


def reply_of(body: object) -> ProviderReply:
    """The reply in a chat completion body; ``LLMError('bad_response')`` saying what is wrong otherwise."""
    bad = bad_reply
    if not isinstance(body, dict):
        raise bad(f"a body that is not a chat completion: {str(body)[:200]!r}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise bad("a chat completion without choices")
    message = choices[0].get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content", ""), (str, type(None))):
        raise bad("a choice without a message")
    usage = body.get("usage")
    model = body.get("model")
    if not isinstance(usage, dict) or not isinstance(model, str):
        raise bad("a chat completion without usage or model")
    try:
        prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        details = usage.get("prompt_tokens_details") or {}
        cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    except (TypeError, ValueError):
        raise bad(f"usage that is not token counts: {str(usage)[:200]!r}") from None
    finish = choices[0].get("finish_reason")
    return ProviderReply(
        text=message.get("content") or "",
        model=model,
        stop_reason=STOP_REASONS.get(finish, finish) if isinstance(finish, str) else None,
        usage=Usage(input_tokens=max(0, prompt - cached), output_tokens=completion, cache_read_tokens=cached),
    )


class StatusError(Exception):
    """A non-200 answer of the API."""

    def __init__(self, status: int, detail: str, headers: Mapping[str, str]) -> None:
        super().__init__(status, detail)
        self.status, self.detail, self.headers = status, detail, headers


def _detail(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return json.dumps(body)[:300]


class OpenAIProvider:
    """Chat Completions calls over one pooled HTTP client (thread-safe)."""

    name: ClassVar[str] = "openai"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    cache_scoped: ClassVar[bool] = True

    def __init__(self, settings: JudgeSettings) -> None:
        import httpx2  # deferred: the HTTP client, only when a provider is called

        self.settings = settings
        self.endpoint = (settings.base_url or self.default_base_url).rstrip("/")
        self.http = httpx2.Client(timeout=settings.timeout_s, limits=httpx2.Limits(max_connections=settings.concurrency))
        self.faults = Faults(settings.timeout_s, _status_of, timeouts=(httpx2.TimeoutException,),
                             connections=(httpx2.TransportError,), other=(httpx2.HTTPError,), other_kind="bad_response")
        self._lock = threading.Lock()

    def send(self, request: LLMRequest, key: str) -> ProviderReply:
        response = self.http.post(f"{self.endpoint}/chat/completions", json=chat_body(request),
                                  headers={"authorization": f"Bearer {key}"} if key else {})
        if response.status_code != 200:
            raise StatusError(response.status_code, _detail(response), response.headers)
        try:
            body = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise LLMError("bad_response", f"the API's answer is not valid JSON: {exc}; it begins "
                                           f"{response.text[:120]!r}") from None
        reply = reply_of(body)
        reply.notices = deprecation.header_notices(reply.model, response.headers)
        return reply

    def count_tokens(self, request: LLMRequest, key: str) -> int | None:
        return None  # Chat Completions has no count endpoint: the client estimates from characters

    def classify(self, exc: BaseException) -> tuple[LLMError, float | None] | None:
        return self.faults.classify(exc)


def _status_of(exc: BaseException) -> tuple[int, str, Mapping[str, str]] | None:
    return (exc.status, exc.detail, exc.headers) if isinstance(exc, StatusError) else None
