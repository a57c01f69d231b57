"""The one model client of the project, over the Anthropic SDK.

- Retries are ours (the SDK's are off), honouring ``retry-after`` on 429/529/5xx with a capped
  backoff; ``sleep`` is injectable so tests check the waits without waiting.
- Answers are cached by the digest of the full request; a budget stops uncached calls.
- A semaphore per client bounds the requests in flight; the client is safe to share across threads.
- Consecutive transport failures of the endpoint open its circuit (evalkit.llm.circuit): the rest
  of the run's calls fail at once instead of each waiting out its timeouts and retries.
- A body that is not a message (invalid JSON, truncated, an HTML page, an envelope without content)
  is a ``bad_response`` API fault, retried like a server error: never an evalkit internal error.
- Deprecation notices (the SDK's table, the API's headers) are printed once and kept with answers.
- The API key is read from the environment only and scrubbed from every error message.
"""

from __future__ import annotations

import email.utils
import json
import math
import random
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import anthropic
import httpx2

from evalkit.llm import deprecation
from evalkit.llm.cache import ResponseCache
from evalkit.llm.calls import (
    BudgetExceeded,
    ErrorKind,
    LLMError,
    LLMRequest,
    LLMResponse,
    system_blocks,
)
from evalkit.llm.circuit import Circuit, circuit_for
from evalkit import progress
from evalkit.llm.pricing import Usage, cost_usd, price_for
from evalkit.llm.settings import API_KEY_ENV, JudgeSettings, api_key
from evalkit.models import Model

__all__ = [
    "Budget",
    "BudgetExceeded",
    "Estimate",
    "LLMError",
    "LLMRequest",
    "LLMResponse",
    "ModelClient",
    "TokenCount",
    "estimate_tokens",
    "make_client",
    "system_blocks",
]

MAX_BACKOFF_S = 60.0
"""No single wait between attempts is longer than this, whatever retry-after says."""
BASE_BACKOFF_S = 0.5
CHARS_PER_TOKEN_ESTIMATE = 3.5

T = TypeVar("T")


class Budget:
    """USD spend of one run, shared by every client call of that run (thread-safe).

    Checked before each uncached call: once spend reaches the limit, further uncached calls raise
    ``BudgetExceeded``. Calls already in flight still complete, so spend can pass the limit by at
    most ``concurrency`` calls.
    """

    def __init__(self, limit_usd: float | None) -> None:
        self.limit_usd = limit_usd
        self._spent = 0.0
        self._lock = threading.Lock()
        progress.COUNTERS.add_budget(limit_usd)  # the live display of `evalkit run`

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._spent

    def check(self) -> None:
        with self._lock:
            if self.limit_usd is not None and self._spent >= self.limit_usd:
                raise BudgetExceeded(
                    f"budget of ${self.limit_usd:.4f} reached (spent ${self._spent:.4f}); no further calls"
                )

    def charge(self, usd: float) -> None:
        with self._lock:
            self._spent += usd
        progress.COUNTERS.model_call(usd, budgeted=self.limit_usd is not None)


class TokenCount(Model):
    """Input tokens of one request."""

    input_tokens: int
    """Token count of system and messages."""
    estimated: bool
    """True when the count-tokens endpoint failed and this is characters / 3.5."""


class Estimate(Model):
    """What a set of requests would cost before sending them."""

    calls: int
    """Requests considered (duplicates counted once)."""
    cached_calls: int
    """Requests already answered in the cache (free)."""
    uncached_calls: int
    """Requests that would be sent."""
    input_tokens: int
    """Input tokens of the uncached requests."""
    output_tokens: int
    """Output tokens assumed for the uncached requests."""
    output_basis: str
    """How output tokens were assumed: 'max_tokens' (an upper bound) or 'average N per call'."""
    tokens_estimated: bool
    """True when some input count is a character-based estimate rather than the API's count."""
    batch: bool
    """Priced as a Message Batch (half price)."""
    cost_usd: float
    """Estimated USD cost of the uncached requests."""


def estimate_tokens(request: LLMRequest) -> int:
    """Character-based input token estimate (characters / 3.5, rounded up)."""
    return math.ceil(len(request.prompt_text()) / CHARS_PER_TOKEN_ESTIMATE)


def _seconds(value: str) -> float | None:
    """A header value as seconds (a number or an HTTP date), or None when it is neither."""
    try:
        return float(value)
    except ValueError:
        return _seconds_until(value)


def _seconds_until(http_date: str) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(http_date)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _retry_after(headers: httpx2.Headers | dict[str, str] | None) -> float | None:
    """Seconds the server asks us to wait (retry-after-ms, else retry-after), or None."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        seconds = _seconds(ms)
        if seconds is not None:
            return seconds / 1000.0
    value = headers.get("retry-after")
    return _seconds(value) if value is not None else None


def _kind_for_status(status: int) -> ErrorKind:
    if status == 429:
        return "rate_limited"
    if status in (401, 403):
        return "auth"
    if status == 408 or status >= 500:
        return "server_error"
    return "bad_request"


class ModelClient:
    """Cached, budgeted, retrying, concurrency-limited access to the Messages API."""

    def __init__(
        self,
        settings: JudgeSettings,
        cache_root: str | Path,
        *,
        budget: Budget | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        key = api_key()
        if key is None:
            raise LLMError("auth", f"{API_KEY_ENV} is not set")
        self.settings = settings.with_env()
        self.cache = ResponseCache(cache_root)
        self.budget = budget if budget is not None else Budget(self.settings.budget_usd)
        self.sleep = sleep
        self._semaphore = threading.BoundedSemaphore(self.settings.concurrency)
        self._secret = key
        self.sdk = anthropic.Anthropic(
            api_key=key,
            base_url=self.settings.base_url,
            timeout=self.settings.timeout_s,
            max_retries=0,
        )
        self._inflight: dict[str, threading.Lock] = {}
        self._inflight_lock = threading.Lock()
        self.circuit: Circuit = circuit_for(str(self.sdk.base_url), self.settings.circuit_after)

    def __repr__(self) -> str:
        return f"ModelClient(model={self.settings.model!r}, base_url={self.settings.base_url!r})"

    # -- errors and retries -----------------------------------------------------------------
    def scrub(self, text: str) -> str:
        """``text`` with the API key blanked out, shortened for messages."""
        text = text.replace(self._secret, "[redacted]")
        return text if len(text) <= 500 else text[:500] + "..."

    def _error(self, exc: Exception) -> tuple[LLMError, float | None]:
        if isinstance(exc, LLMError):
            return exc, None
        if isinstance(exc, anthropic.APIStatusError):
            detail = exc.api_message or exc.message
            kind = _kind_for_status(exc.status_code)
            return LLMError(kind, self.scrub(detail), status=exc.status_code), _retry_after(exc.response.headers)
        if isinstance(exc, anthropic.APITimeoutError):
            return LLMError("timeout", f"no answer within {self.settings.timeout_s:g} s"), None
        if isinstance(exc, anthropic.APIConnectionError):
            cause = exc.__cause__
            why = f" ({type(cause).__name__}: {cause})" if cause is not None and str(cause) else ""
            return LLMError("connection", self.scrub(f"cannot reach the API: {exc.message}{why}")), None
        if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError, anthropic.APIResponseValidationError)):
            return LLMError("bad_response", self.scrub(f"the API's answer is not valid JSON: {exc}")), None
        return LLMError("bad_request", self.scrub(f"{type(exc).__name__}: {exc}")), None

    def backoff_s(self, attempt: int, retry_after: float | None) -> float:
        """Wait before attempt ``attempt + 1``: the server's retry-after, else exponential with jitter; capped."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), MAX_BACKOFF_S)
        return min(BASE_BACKOFF_S * 2**attempt, MAX_BACKOFF_S) * random.uniform(0.5, 1.0)

    def retrying(self, call: Callable[[], T]) -> T:
        """Run one API call with our retry policy and the endpoint's circuit; raise ``LLMError``
        (no SDK exception escapes, a malformed body included)."""
        attempt = 0
        while True:
            self.circuit.check()
            try:
                with self._semaphore:
                    self.circuit.check()  # it may have opened while this call waited for a slot
                    result = call()
            except (anthropic.AnthropicError, httpx2.HTTPError, json.JSONDecodeError, UnicodeDecodeError) as exc:
                error, retry_after = self._error(exc)
            except LLMError as exc:
                if exc.kind == "circuit_open":
                    raise
                error, retry_after = exc, None
            else:
                self.circuit.success()
                return result
            opened = self.circuit.failure(error)
            if opened is not None:
                raise opened
            if not error.retryable or attempt >= self.settings.max_retries:
                raise error
            self.sleep(self.backoff_s(attempt, retry_after))
            attempt += 1

    # -- calls ------------------------------------------------------------------------------
    def key(self, request: LLMRequest) -> str:
        return self.cache.key(request)

    def cached(self, request: LLMRequest) -> LLMResponse | None:
        """The cached answer to ``request`` (None on a miss or when the cache is bypassed)."""
        if not self.settings.use_cache:
            return None
        return self.cache.get(self.key(request))

    def explain_miss(self, request: LLMRequest) -> str:
        return self.cache.explain_miss(request)

    def checked_message(self, message: Any) -> Any:
        """``message`` when it is a Messages API message; else a ``bad_response`` error saying what came."""
        problem = None
        if not isinstance(message, anthropic.types.Message):
            problem = f"a body that is not a message: {str(message)[:200]!r}"
        elif not isinstance(message.content, list):
            problem = "a message without content"
        elif message.usage is None or not isinstance(message.model, str):
            problem = "a message without usage or model"
        if problem is None:
            return message
        raise LLMError("bad_response", self.scrub(f"the API answered HTTP 200 with {problem}"))

    def _create(self, params: dict[str, Any]) -> tuple[Any, list[str]]:
        """One ``messages.create`` attempt: the checked message and the deprecation notices of its headers."""
        raw = self.sdk.messages.with_raw_response.create(**params)
        message = self.checked_message(raw.parse())
        notices = deprecation.header_notices(message.model, raw.headers)
        return message, [self.scrub(n) for n in notices]

    def notices_for(self, model: str, sent: list[str]) -> list[str]:
        """The notices to keep with an answer of ``model``: what the API sent, and the SDK's table."""
        table = deprecation.model_notice(model)
        notices = sent + ([table] if table and table not in sent else [])
        deprecation.announce(notices)
        return notices

    def response_from_message(self, message: Any, key: str, *, batch: bool = False) -> LLMResponse:
        """Our response model from an SDK ``Message`` (cost from the price table)."""
        message = self.checked_message(message)
        raw = message.usage
        usage = Usage(
            input_tokens=raw.input_tokens or 0,
            output_tokens=raw.output_tokens or 0,
            cache_read_input_tokens=raw.cache_read_input_tokens or 0,
            cache_creation_input_tokens=raw.cache_creation_input_tokens or 0,
        )
        text = "".join(getattr(block, "text", "") or "" for block in message.content
                       if getattr(block, "type", None) == "text")
        price = price_for(message.model, self.settings.prices)
        return LLMResponse(
            text=text,
            model=message.model,
            stop_reason=message.stop_reason,
            usage=usage,
            cost_usd=cost_usd(usage, price, batch=batch),
            request_key=key,
            batch=batch,
        )

    def _key_lock(self, key: str) -> threading.Lock:
        with self._inflight_lock:
            return self._inflight.setdefault(key, threading.Lock())

    def call(self, request: LLMRequest) -> LLMResponse:
        """The answer to ``request``: from the cache when present, else from the API (charged to the budget)."""
        key = self.key(request)
        hit = self.cached(request)
        if hit is not None:
            return self._with_notices(hit)
        with self._key_lock(key):  # identical requests in flight at once pay once
            hit = self.cached(request)
            if hit is not None:
                return self._with_notices(hit)
            self.budget.check()
            params = request.api_params()
            message, notices = self.retrying(lambda: self._create(params))
            response = self.response_from_message(message, key).model_copy(update={"notices": notices})
            self.budget.charge(response.cost_usd)
            self.cache.put(request, response)
            return self._with_notices(response)

    def _with_notices(self, response: LLMResponse) -> LLMResponse:
        notices = self.notices_for(response.model, response.notices)
        return response if notices == response.notices else response.model_copy(update={"notices": notices})

    def count_tokens(self, request: LLMRequest) -> TokenCount:
        """Input tokens via the count-tokens endpoint; a character estimate when it fails."""
        params: dict[str, Any] = {"model": request.model, "messages": request.messages}
        if request.system:
            params["system"] = request.system
        try:
            counted = self.retrying(lambda: self.sdk.messages.count_tokens(**params))
        except LLMError:
            return TokenCount(input_tokens=estimate_tokens(request), estimated=True)
        return TokenCount(input_tokens=counted.input_tokens, estimated=False)

    def estimate(self, requests: Iterable[LLMRequest], *, output_tokens: int | None = None) -> Estimate:
        """Cost of sending ``requests`` now: cached ones are free; output is ``output_tokens``
        per call when given (a stated average), else each request's ``max_tokens`` (an upper bound)."""
        unique: dict[str, LLMRequest] = {}
        for request in requests:
            unique.setdefault(self.key(request), request)
        batch = self.settings.mode == "batch"
        cached = uncached = tokens_in = tokens_out = 0
        estimated = False
        total = 0.0
        for request in unique.values():
            if self.cached(request) is not None:
                cached += 1
                continue
            uncached += 1
            count = self.count_tokens(request)
            estimated = estimated or count.estimated
            out = output_tokens if output_tokens is not None else request.max_tokens
            tokens_in += count.input_tokens
            tokens_out += out
            usage = Usage(input_tokens=count.input_tokens, output_tokens=out)
            total += cost_usd(usage, price_for(request.model, self.settings.prices), batch=batch)
        return Estimate(
            calls=len(unique),
            cached_calls=cached,
            uncached_calls=uncached,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            output_basis="max_tokens" if output_tokens is None else f"average {output_tokens} per call",
            tokens_estimated=estimated,
            batch=batch,
            cost_usd=total,
        )


def make_client(
    settings: JudgeSettings, cache_root: str | Path, *, budget: Budget | None = None
) -> ModelClient | None:
    """A client when ANTHROPIC_API_KEY is set, else None (graders then record ``not_configured``)."""
    if api_key() is None:
        return None
    return ModelClient(settings, cache_root, budget=budget)
