"""What a provider is: one request in, one reply out, its failures as ``LLMError`` kinds.

A provider speaks one API (Anthropic's Messages API, OpenAI's Chat Completions ...). Everything
else a model call needs (cache, budget, retries, circuit, rate limits, key rotation, prices,
fallback) is the client's (evalkit.llm.client), the same for every provider.
"""

from __future__ import annotations

import email.utils
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

from evalkit import contracts
from evalkit.llm.calls import ErrorKind, LLMError
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


Provider = contracts.Provider
"""What a provider is (evalkit.contracts.Provider)."""


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


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asks us to wait (retry-after-ms, else retry-after), or None."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        value = seconds(ms)
        if value is not None:
            return value / 1000.0
    after = headers.get("retry-after")
    return seconds(after) if after is not None else None


def bad_reply(problem: str) -> LLMError:
    """A 200 whose body is not what the API promises (``bad_response``), saying what came."""
    return LLMError("bad_response", f"the API answered HTTP 200 with {problem}")


def _named(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class Faults:
    """How one API client's exceptions become ``LLMError`` kinds (a provider's ``classify``), in this order:
    an error answer (kind by HTTP status, with the wait the server asked for), a timeout, no connection, a
    body that is not the API's JSON, any other error of the client."""

    timeout_s: float
    """The per-attempt timeout, said in a timeout's message."""
    status: Callable[[BaseException], tuple[int, str, Mapping[str, str]] | None]
    """(HTTP status, detail, response headers) of an error answer; None for any other exception."""
    timeouts: tuple[type[BaseException], ...] = ()
    connections: tuple[type[BaseException], ...] = ()
    connection_detail: Callable[[BaseException], str] = _named
    """What a connection failure's message says after "cannot reach the API: "."""
    malformed: tuple[type[BaseException], ...] = ()
    """A body that is not valid JSON: ``bad_response``."""
    other: tuple[type[BaseException], ...] = ()
    """Any other error of the client, as ``other_kind``."""
    other_kind: ErrorKind = "bad_request"

    def classify(self, exc: BaseException) -> tuple[LLMError, float | None] | None:
        """``exc`` as an ``LLMError`` and the seconds the server asked to wait; None when it is not the API's."""
        answer = self.status(exc)
        if answer is not None:
            code, detail, headers = answer
            return LLMError(kind_for_status(code), detail, status=code), retry_after(headers)
        if isinstance(exc, self.timeouts):
            return LLMError("timeout", f"no answer within {self.timeout_s:g} s"), None
        if isinstance(exc, self.connections):
            return LLMError("connection", f"cannot reach the API: {self.connection_detail(exc)}"), None
        if isinstance(exc, self.malformed):
            return LLMError("bad_response", f"the API's answer is not valid JSON: {exc}"), None
        if isinstance(exc, self.other):
            return LLMError(self.other_kind, _named(exc)), None
        return None
