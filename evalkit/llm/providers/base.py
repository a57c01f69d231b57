"""What a provider is: one request in, one reply out, its failures as ``LLMError`` kinds.

A provider speaks one API (Anthropic's Messages API, OpenAI's Chat Completions ...). Everything
else a model call needs (cache, budget, retries, circuit, rate limits, key rotation, prices,
fallback) is the client's (evalkit.llm.client), the same for every provider.
"""

from __future__ import annotations

import email.utils
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, ClassVar, Protocol

from evalkit.llm.calls import ErrorKind, LLMError, LLMRequest
from evalkit.llm.pricing import Usage


@dataclass
class ProviderReply:
    """One answer as the provider gave it."""

    text: str
    """The answer's text."""
    model: str
    """Model id the API reports."""
    stop_reason: str | None
    """Why generation stopped, in the Messages API's words (end_turn, max_tokens, stop_sequence, ...)."""
    usage: Usage
    """Tokens of the call."""
    notices: list[str] = field(default_factory=list)
    """Deprecation notices the API sent with the answer (already scrubbed of keys)."""


class Provider(Protocol):
    """One model API: a class following this, registered as an ``evalkit.providers`` entry point and built
    with the judge's settings (``cls(settings)``)."""

    name: ClassVar[str]
    """Name used in settings (``judge.provider``) and in key variables (``<NAME>_API_KEY[S]``)."""
    default_base_url: ClassVar[str]
    """Base URL when the settings give none."""
    cache_scoped: ClassVar[bool]
    """True when cache keys include the provider and base URL (every provider but the original anthropic,
    whose keys stay as they were so existing caches keep answering)."""
    endpoint: str
    """The base URL in use: the circuit and the rate limiter are per endpoint."""

    def send(self, request: LLMRequest, key: str) -> ProviderReply:
        """One attempt; raise the API's own errors (``classify`` maps them) or ``LLMError``."""
        ...

    def classify(self, exc: BaseException) -> tuple[LLMError, float | None] | None:
        """``exc`` as an ``LLMError`` and the seconds the server asked to wait; None when it is not the API's."""
        ...

    def count_tokens(self, request: LLMRequest, key: str) -> int | None:
        """Input tokens by the API's count endpoint, or None when the API has none."""
        ...


def kind_for_status(status: int) -> ErrorKind:
    """The error kind of an HTTP status (429 rate limited, 401/403 auth, 408 and 5xx server error)."""
    if status == 429:
        return "rate_limited"
    if status in (401, 403):
        return "auth"
    if status == 408 or status >= 500:
        return "server_error"
    return "bad_request"


def seconds(value: str) -> float | None:
    """A header value as seconds (a number or an HTTP date), or None when it is neither."""
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def retry_after(headers: Any) -> float | None:
    """Seconds the server asks us to wait (retry-after-ms, else retry-after), or None."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        value = seconds(ms)
        if value is not None:
            return value / 1000.0
    value = headers.get("retry-after")
    return seconds(value) if value is not None else None
