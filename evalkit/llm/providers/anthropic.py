"""Anthropic's Messages API through the anthropic SDK (the SDK's own retries off: the client retries)."""

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
    from anthropic import Anthropic
    from anthropic.types import Message

    from evalkit.llm.settings import JudgeSettings


def checked_message(message: object) -> Message:
    """``message`` when it is a Messages API message; else a ``bad_response`` error saying what came."""
    import anthropic  # deferred: the anthropic SDK (heavy), only when a model is called

    if not isinstance(message, anthropic.types.Message):
        raise bad_reply(f"a body that is not a message: {str(message)[:200]!r}")
    if not isinstance(message.content, list):
        raise bad_reply("a message without content")
    if message.usage is None or not isinstance(message.model, str):
        raise bad_reply("a message without usage or model")
    return message


def reply_of(message: Message) -> ProviderReply:
    """Text, model, stop reason and usage of a checked SDK ``Message``."""
    raw = message.usage
    usage = Usage(
        input_tokens=raw.input_tokens or 0,
        output_tokens=raw.output_tokens or 0,
        cache_read_tokens=raw.cache_read_input_tokens or 0,
        cache_write_tokens=raw.cache_creation_input_tokens or 0,
    )
    text = "".join(getattr(block, "text", "") or "" for block in message.content
                   if getattr(block, "type", None) == "text")
    return ProviderReply(text=text, model=message.model, stop_reason=message.stop_reason, usage=usage)


class AnthropicProvider:
    """Messages API calls, one SDK client per key (created on first use, shared by threads)."""

    name: ClassVar[str] = "anthropic"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    cache_scoped: ClassVar[bool] = False

    def __init__(self, settings: JudgeSettings) -> None:
        import anthropic  # deferred: the anthropic SDK (heavy), only when a model is called
        import httpx2  # deferred: the HTTP client, only when a provider is called

        self._anthropic = anthropic
        self.settings = settings
        self._sdks: dict[str, Anthropic] = {}
        self._lock = threading.Lock()
        self.endpoint = str(self.sdk_for("").base_url)
        self.faults = Faults(
            settings.timeout_s, _status_of, timeouts=(anthropic.APITimeoutError,),
            connections=(anthropic.APIConnectionError,), connection_detail=_connection_detail,
            malformed=(json.JSONDecodeError, UnicodeDecodeError, anthropic.APIResponseValidationError),
            other=(anthropic.AnthropicError, httpx2.HTTPError))

    def sdk_for(self, key: str) -> Anthropic:
        """The SDK client of ``key`` (one per key, so rotation never rebuilds connections)."""
        with self._lock:
            if key not in self._sdks:
                self._sdks[key] = self._anthropic.Anthropic(api_key=key or "unset", base_url=self.settings.base_url,
                                                            timeout=self.settings.timeout_s, max_retries=0)
            return self._sdks[key]

    def send(self, request: LLMRequest, key: str) -> ProviderReply:
        raw = self.sdk_for(key).messages.with_raw_response.create(**request.api_params())
        message = checked_message(raw.parse())
        reply = reply_of(message)
        reply.notices = deprecation.header_notices(message.model, raw.headers)
        return reply

    def count_tokens(self, request: LLMRequest, key: str) -> int | None:
        params: dict[str, Any] = {"model": request.model, "messages": request.messages}
        if request.system:
            params["system"] = request.system
        return self.sdk_for(key).messages.count_tokens(**params).input_tokens

    def classify(self, exc: BaseException) -> tuple[LLMError, float | None] | None:
        return self.faults.classify(exc)


def _status_of(exc: BaseException) -> tuple[int, str, Mapping[str, str]] | None:
    import anthropic  # deferred: the anthropic SDK (heavy), only when a model is called

    if isinstance(exc, anthropic.APIStatusError):
        return exc.status_code, exc.api_message or exc.message, exc.response.headers
    return None


def _connection_detail(exc: BaseException) -> str:
    cause = exc.__cause__
    why = f" ({type(cause).__name__}: {cause})" if cause is not None and str(cause) else ""
    return f"{getattr(exc, 'message', exc)}{why}"
