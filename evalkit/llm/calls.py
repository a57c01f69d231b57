"""What goes to the model and what comes back: request, response, and the errors of a call."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from evalkit.fsutil import digest
from evalkit.llm.pricing import Usage
from evalkit.models import Model

# Sampling knobs the SDK refuses (TypeError) or some models reject: never sent.
FORBIDDEN_PARAMS = frozenset({"temperature", "top_p", "top_k"})
# Set through the request's own fields, not through ``extra``.
RESERVED_PARAMS = frozenset({"model", "system", "messages", "max_tokens", "stream"})

ErrorKind = Literal["rate_limited", "server_error", "timeout", "connection", "bad_response", "bad_request", "auth",
                    "budget", "circuit_open"]
RETRYABLE_KINDS = frozenset({"rate_limited", "server_error", "timeout", "connection", "bad_response"})
"""Retried within the call (with backoff); ``circuit_open`` is not: the endpoint is given up for this run."""
TRANSPORT_KINDS = frozenset({"server_error", "timeout", "connection", "bad_response"})
"""Failures that say the endpoint is broken (not busy): they count towards opening its circuit."""


def system_blocks(instructions: str, *more: str) -> list[dict[str, Any]]:
    """System text blocks: the static ``instructions`` first, marked for prompt caching."""
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}}
    ]
    blocks.extend({"type": "text", "text": text} for text in more if text)
    return blocks


def prompt_text_of(system: str | list[dict[str, Any]] | None, messages: list[dict[str, Any]]) -> str:
    """All prompt text of a Messages request, in order: the system text (a string or text blocks), then each
    message's content (a string or blocks, whose ``text`` counts)."""
    parts = [system] if isinstance(system, str) else [block.get("text", "") for block in system or []]
    for message in messages:
        content = message.get("content", "")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(block.get("text", "") for block in content if isinstance(block, dict))
    return "".join(parts)


class LLMRequest(Model):
    """One Messages API call, as the cache sees it."""

    model: str
    """Model id."""
    system: list[dict[str, Any]] = Field(default_factory=list)
    """System text blocks; the static instructions come first with cache_control ephemeral."""
    messages: list[dict[str, Any]]
    """Conversation turns ({role, content})."""
    max_tokens: int = Field(ge=1)
    """Upper bound on generated tokens."""
    sample_index: int = Field(default=0, ge=0)
    """Which self-consistency sample this is: part of the cache key, never sent."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further Messages API parameters (stop_sequences, metadata, ...); temperature/top_p/top_k are refused."""
    item_id: str | None = None
    """The logical item this call is about (for explaining cache misses); neither sent nor in the key."""

    @field_validator("extra")
    @classmethod
    def _no_forbidden(cls, extra: dict[str, Any]) -> dict[str, Any]:
        bad = sorted(set(extra) & (FORBIDDEN_PARAMS | RESERVED_PARAMS))
        if bad:
            raise ValueError(
                f"parameters {bad} cannot go in extra: sampling knobs are not sent "
                "(the SDK raises TypeError for them) and the others are request fields"
            )
        return extra

    def api_params(self) -> dict[str, Any]:
        """Keyword arguments of ``messages.create`` (and a batch request's ``params``)."""
        params: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": self.messages}
        if self.system:
            params["system"] = self.system
        params.update(self.extra)
        return params

    def key_inputs(self) -> dict[str, Any]:
        """Everything the answer depends on: the cache key is the digest of this."""
        return {
            "model": self.model,
            "system": self.system,
            "messages": self.messages,
            "params": {"max_tokens": self.max_tokens, **self.extra},
            "sample_index": self.sample_index,
        }

    def part_digests(self) -> dict[str, str]:
        """One digest per part of the key, to say which part changed on a cache miss."""
        return {name: digest(value) for name, value in self.key_inputs().items()}

    def prompt_text(self) -> str:
        """All prompt text (system and messages), for a character-based token estimate."""
        return prompt_text_of(self.system, self.messages)


class LLMResponse(Model):
    """The answer to one request (from the API, a batch, or the cache)."""

    text: str
    """Concatenated text blocks of the answer."""
    model: str
    """Model id the API reports."""
    stop_reason: str | None = None
    """Why generation stopped (end_turn, max_tokens, ...)."""
    usage: Usage = Field(default_factory=Usage)
    """Token counts of the call that produced this answer."""
    cost_usd: float = 0.0
    """USD cost of the call that produced this answer (batch calls at half price)."""
    cached: bool = False
    """True when served from the response cache (no call made, nothing spent now)."""
    request_key: str
    """Cache key of the request (digest of model, system, messages, params, sample index)."""
    batch: bool = False
    """True when the answer came from a Message Batch."""
    notices: list[str] = Field(default_factory=list)
    """Deprecation notices the provider sent with this answer (response headers), kept with it."""
    fallback: bool = False
    """True when the primary kept failing and the fallback model (named in ``model``) gave this answer."""


class LLMError(Exception):
    """An infrastructure failure of a model call: never a verdict about the system under test."""

    def __init__(self, kind: ErrorKind, message: str, *, status: int | None = None) -> None:
        super().__init__(kind, message, status)
        self.kind: ErrorKind = kind
        self.message = message
        self.status = status

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS

    def __str__(self) -> str:
        status = f" (HTTP {self.status})" if self.status is not None else ""
        return f"{self.kind}{status}: {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_error, (type(self), self.kind, self.message, self.status))


def _rebuild_error(cls: type[LLMError], kind: ErrorKind, message: str, status: int | None) -> LLMError:
    if cls is BudgetExceeded:
        return BudgetExceeded(message)
    return cls(kind, message, status=status)


class BudgetExceeded(LLMError):
    """The run's budget is spent: no further uncached calls (cached answers are still served)."""

    def __init__(self, message: str) -> None:
        super().__init__("budget", message)
