"""The one model client of the project, over any provider (evalkit.llm.providers; Anthropic by default).

- Providers speak an API (Anthropic's Messages API through its SDK, OpenAI-compatible Chat
  Completions over HTTP); everything else is here, the same for all of them.
- Retries are ours (the SDK's are off), honouring ``retry-after`` on 429/529/5xx with a capped
  backoff; ``sleep`` is injectable so tests check the waits without waiting.
- Answers are cached by the digest of the full request (plus provider and base URL for every
  provider but anthropic, whose keys are as they always were); a budget stops uncached calls.
- A semaphore per client bounds the requests in flight; the client is safe to share across threads.
- Per-provider rate limits (``judge.rate_limits``: requests and tokens per minute) are honoured by
  one limiter per endpoint shared by every client of the process (evalkit.llm.ratelimit).
- Consecutive transport failures of the endpoint open its circuit (evalkit.llm.circuit): the rest
  of the run's calls fail at once instead of each waiting out its timeouts and retries.
- A body that is not an answer (invalid JSON, truncated, an HTML page, an envelope without content)
  is a ``bad_response`` API fault, retried like a server error: never an evalkit internal error.
- Deprecation notices (the SDK's table, the API's headers) are printed once and kept with answers.
- API keys come from the environment only (``<PROVIDER>_API_KEYS`` comma separated, else
  ``<PROVIDER>_API_KEY``), taken round-robin; a key refused with 401/403 is dropped for the run
  (evalkit.llm.keys). Keys are scrubbed from every error message and never part of a cache key.
- ``judge.fallback`` names a second provider/model asked when the primary keeps failing (circuit
  open, retries spent, every key refused); its answers are marked ``fallback`` and name its model.
"""

from __future__ import annotations

import math
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from evalkit.counters import COUNTERS
from evalkit.llm import deprecation
from evalkit.llm.cache import ResponseCache
from evalkit.llm.calls import (
    BudgetExceeded,
    LLMError,
    LLMRequest,
    LLMResponse,
    system_blocks,
)
from evalkit.llm.circuit import Circuit, circuit_for
from evalkit.llm.keys import KeyRing, NoKeyLeft, ring_for
from evalkit.llm.pricing import Usage, cost_usd, price_for
from evalkit.llm.providers import cache_scope, make_provider
from evalkit.llm.providers.anthropic import checked_message, reply_of
from evalkit.llm.providers.base import ProviderReply
from evalkit.llm.ratelimit import limiter_for
from evalkit.llm.settings import JudgeSettings, configured
from evalkit.models import Model
from evalkit.store import remote_service

if TYPE_CHECKING:
    from anthropic import Anthropic
    from anthropic.types import Message

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
FALLBACK_KINDS = frozenset({"circuit_open", "auth", "rate_limited", "server_error", "timeout", "connection",
                            "bad_response"})
"""Failures after which the fallback is asked: the primary keeps failing (never budget or a bad request)."""

RUN_ID_ENV = "EVALKIT_RUN_ID"
"""Set by `evalkit run` for the length of one run: a request that failed in it is not sent again in it."""

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
        COUNTERS.add_budget(limit_usd)  # the live display of `evalkit run`

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._spent

    def check(self) -> None:
        service = remote_service()  # on a cluster worker: the run's budget is the coordinator's, across workers
        if service is not None and self.limit_usd is not None:
            with self._lock:
                self._spent = max(self._spent, float(service.budget(self.limit_usd)["spent"]))
        with self._lock:
            if self.limit_usd is not None and self._spent >= self.limit_usd:
                raise BudgetExceeded(
                    f"budget of ${self.limit_usd:.4f} reached (spent ${self._spent:.4f}); no further calls"
                )

    def charge(self, usd: float) -> None:
        service = remote_service()
        spent = float(service.budget(self.limit_usd, usd)["spent"]) if service is not None else None
        with self._lock:
            self._spent = self._spent + usd if spent is None else max(self._spent + usd, spent)
        COUNTERS.model_call(usd, budgeted=self.limit_usd is not None)


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


class ModelClient:
    """Cached, budgeted, retrying, rate-limited, concurrency-limited access to one provider's model API."""

    def __init__(
        self,
        settings: JudgeSettings,
        cache_root: str | Path,
        *,
        budget: Budget | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings.with_env()
        self.provider = make_provider(self.settings)
        self.keys = (KeyRing(self.settings.provider, [""]) if self.settings.api_key == "none"  # sends no key
                     else ring_for(self.settings.provider, self.provider.endpoint))
        if not self.keys.all:
            raise LLMError("auth", f"{self.keys.source} is not set")
        self.cache = ResponseCache(cache_root)
        self.budget = budget if budget is not None else Budget(self.settings.budget_usd)
        self.sleep = sleep
        self._semaphore = threading.BoundedSemaphore(self.settings.concurrency)
        self.scope = cache_scope(self.settings)
        self._inflight: dict[str, threading.Lock] = {}
        self._inflight_lock = threading.Lock()
        self._failed: dict[tuple[str, str], LLMError] = {}  # (run id, request key) -> how it failed in that run
        self.circuit: Circuit = circuit_for(self.provider.endpoint, self.settings.circuit_after)
        self.limiter = limiter_for(self.settings.provider, self.provider.endpoint,
                                   self.settings.rate_limits.get(self.settings.provider))
        self._fallback: ModelClient | None = None
        self._fallback_lock = threading.Lock()
        self.fallback_calls = 0
        """Calls this client answered through its fallback."""

    def __repr__(self) -> str:
        return (f"ModelClient(provider={self.settings.provider!r}, model={self.settings.model!r}, "
                f"base_url={self.settings.base_url!r})")

    @property
    def sdk(self) -> Anthropic:
        """The Anthropic SDK client of the first live key (Message Batches); anthropic provider only."""
        sdk_for = getattr(self.provider, "sdk_for", None)
        if sdk_for is None:
            raise LLMError("bad_request", f"provider {self.settings.provider} has no Message Batches")
        return sdk_for(self.keys.live[0] if self.keys.live else self.keys.all[0])

    # -- errors and retries -----------------------------------------------------------------
    def scrub(self, text: str) -> str:
        """``text`` with every API key blanked out, shortened for messages."""
        text = self.keys.scrub(text)
        return text if len(text) <= 500 else text[:500] + "..."

    def _error(self, exc: BaseException) -> tuple[LLMError, float | None]:
        if isinstance(exc, LLMError):
            return LLMError(exc.kind, self.scrub(exc.message), status=exc.status), None
        found = self.provider.classify(exc)
        if found is None:  # not the API's failure: evalkit's own bug, never disguised as infrastructure
            raise exc
        error, wait = found
        return LLMError(error.kind, self.scrub(error.message), status=error.status), wait

    def backoff_s(self, attempt: int, retry_after: float | None) -> float:
        """Wait before attempt ``attempt + 1``: the server's retry-after, else exponential with jitter; capped."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), MAX_BACKOFF_S)
        return min(BASE_BACKOFF_S * 2**attempt, MAX_BACKOFF_S) * random.uniform(0.5, 1.0)

    def retrying(self, call: Callable[[], T]) -> T:
        """Run one API call with our retry policy and the endpoint's circuit; raise ``LLMError``
        (no SDK exception escapes, a malformed body included)."""
        return self._attempts(lambda _key: call(), keyed=False)

    def _next_key(self) -> str:
        try:
            return self.keys.next()
        except NoKeyLeft as exc:
            raise LLMError("auth", str(exc)) from None

    def _attempts(self, call: Callable[[str], T], *, keyed: bool = True, tokens: int = 0,
                  gate: Callable[[], None] | None = None) -> T:
        """``call(key)`` under the retry policy, the circuit, the rate limiter and key rotation; ``gate`` (the
        budget's check) is asked again once the call holds a concurrency slot."""
        attempt = 0
        while True:
            self.circuit.check()
            key = self._next_key() if keyed else ""
            slot = self.limiter.acquire(tokens) if self.limiter is not None else None
            used: int | None = None
            try:
                with self._semaphore:
                    self.circuit.check()  # it may have opened while this call waited for a slot
                    if gate is not None:  # the budget may have been spent by the calls this one waited for
                        gate()
                    result = call(key)
                if isinstance(result, ProviderReply):
                    u = result.usage
                    used = u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens
            except LLMError as exc:
                if exc.kind in ("circuit_open", "budget"):
                    raise
                error, retry_after = self._error(exc)
            except Exception as exc:  # noqa: BLE001 - the provider classifies; anything else is re-raised
                error, retry_after = self._error(exc)
            else:
                self.circuit.success()
                return result
            finally:
                if slot is not None:
                    self.limiter.release(slot, used)  # type: ignore[union-attr]
            if keyed and error.kind == "auth":
                if self.keys.drop(key, error.status):
                    continue  # the next key answers this attempt; a refused key is not a retry
                raise error
            opened = self.circuit.failure(error)
            if opened is not None:
                raise opened
            if not error.retryable or attempt >= self.settings.max_retries:
                raise error
            self.sleep(self.backoff_s(attempt, retry_after))
            attempt += 1

    # -- calls ------------------------------------------------------------------------------
    def key(self, request: LLMRequest) -> str:
        return self.cache.key(request, self.scope)

    def cached(self, request: LLMRequest) -> LLMResponse | None:
        """The cached answer to ``request`` (None on a miss or when the cache is bypassed)."""
        if not self.settings.use_cache:
            return None
        return self.cache.get(self.key(request))

    def explain_miss(self, request: LLMRequest) -> str:
        return self.cache.explain_miss(request, self.scope)

    def checked_message(self, message: object) -> Message:
        """``message`` when it is a Messages API message; else a ``bad_response`` error saying what came."""

        try:
            return checked_message(message)
        except LLMError as exc:
            raise LLMError(exc.kind, self.scrub(exc.message)) from None

    def notices_for(self, model: str, sent: list[str]) -> list[str]:
        """The notices to keep with an answer of ``model``: what the API sent, and the SDK's table (anthropic)."""
        table = deprecation.model_notice(model) if self.settings.provider == "anthropic" else None
        notices = sent + ([table] if table and table not in sent else [])
        deprecation.announce(notices)
        return notices

    def response_of(self, reply: ProviderReply, key: str, *, batch: bool = False) -> LLMResponse:
        """Our response model from a provider's reply (cost from the price table)."""
        price = price_for(reply.model, self.settings.prices)
        return LLMResponse(
            text=reply.text,
            model=reply.model,
            stop_reason=reply.stop_reason,
            usage=reply.usage,
            cost_usd=cost_usd(reply.usage, price, batch=batch),
            request_key=key,
            batch=batch,
            notices=[self.scrub(n) for n in reply.notices],
        )

    def response_from_message(self, message: object, key: str, *, batch: bool = False) -> LLMResponse:
        """Our response model from an SDK ``Message`` (cost from the price table)."""

        return self.response_of(reply_of(self.checked_message(message)), key, batch=batch)

    def _key_lock(self, key: str) -> threading.Lock:
        with self._inflight_lock:
            return self._inflight.setdefault(key, threading.Lock())

    def reserve_tokens(self, request: LLMRequest) -> int:
        """Tokens a request holds in the rate limiter until its usage is known: estimated input plus max_tokens."""
        return estimate_tokens(request) + request.max_tokens

    def call(self, request: LLMRequest) -> LLMResponse:
        """The answer to ``request``: from the cache when present, else from the API (charged to the budget);
        from the fallback (marked ``fallback``) when the primary keeps failing and a fallback is set."""
        try:
            return self._call(request)
        except LLMError as exc:
            if exc.kind not in FALLBACK_KINDS or isinstance(exc, BudgetExceeded):
                raise
            fallback = self.fallback_client()
            if fallback is None:
                raise
            self._note_fallback(exc, fallback)
            spec = self.settings.fallback
            assert spec is not None
            try:
                response = fallback._call(request.model_copy(update={"model": spec.model}))
            except LLMError as second:
                raise LLMError(second.kind, f"{second.message} (fallback {spec.provider}/{spec.model}, after the "
                                            f"primary failed: {exc})", status=second.status) from None
            return response.model_copy(update={"fallback": True})

    def _call(self, request: LLMRequest) -> LLMResponse:
        key = self.key(request)
        hit = self.cached(request)
        if hit is not None:
            return self._with_notices(hit)
        # identical requests in flight at once pay once: in this process, and across processes and cluster workers
        with self._key_lock(key), self.cache.claim(key):
            hit = self.cached(request)
            if hit is not None:
                return self._with_notices(hit)
            kept = self.cache.unusable(key) if self.settings.use_cache else None
            if kept is not None:  # paid before, unusable: the same answer again, not a second payment
                return self._with_notices(kept)
            run = os.environ.get(RUN_ID_ENV, "")
            failed = self._failed.get((run, key)) if run else None
            if failed is not None:  # the same request failed in this run: not sent again (its next run retries)
                raise LLMError(failed.kind, f"{failed.message} (the identical request failed earlier in this run)",
                               status=failed.status)
            self.budget.check()

            def send(api_key: str) -> ProviderReply:  # charged while it holds its concurrency slot: the next
                reply = self.provider.send(request, api_key)  # call, let in by its release, sees what it cost
                self.budget.charge(self.response_of(reply, key).cost_usd)
                return reply

            try:
                reply = self._attempts(send, tokens=self.reserve_tokens(request), gate=self.budget.check)
            except LLMError as exc:
                if run and not isinstance(exc, BudgetExceeded):
                    self._failed[(run, key)] = exc
                raise
            response = self.response_of(reply, key)
            self.cache.put(request, response)
            return self._with_notices(response)

    def _with_notices(self, response: LLMResponse) -> LLMResponse:
        notices = self.notices_for(response.model, response.notices)
        return response if notices == response.notices else response.model_copy(update={"notices": notices})

    # -- fallback ---------------------------------------------------------------------------
    def fallback_client(self) -> ModelClient | None:
        """The client of ``settings.fallback`` (same cache and budget), or None when unset or without a key."""
        spec = self.settings.fallback
        if spec is None:
            return None
        with self._fallback_lock:
            if self._fallback is None:
                settings = self.settings.model_copy(update={"provider": spec.provider, "model": spec.model,
                                                            "base_url": spec.base_url, "fallback": None,
                                                            "mode": "sync"})
                if not configured(settings):
                    return None
                self._fallback = ModelClient(settings, self.cache.root, budget=self.budget, sleep=self.sleep)
            return self._fallback

    def _note_fallback(self, error: LLMError, fallback: ModelClient) -> None:
        with self._fallback_lock:
            self.fallback_calls += 1
            first = self.fallback_calls == 1
        if first:
            spec = fallback.settings
            print(f"evalkit: {self.settings.provider} model {self.settings.model} keeps failing ({error.kind}): "
                  f"asking the fallback {spec.provider} model {spec.model}; its answers name that model and are "
                  "counted apart", file=sys.stderr, flush=True)

    # -- estimates --------------------------------------------------------------------------
    def count_tokens(self, request: LLMRequest) -> TokenCount:
        """Input tokens via the count-tokens endpoint; a character estimate when it fails or there is none."""
        try:
            counted = self._attempts(lambda api_key: self.provider.count_tokens(request, api_key))
        except LLMError:
            counted = None
        if counted is None:
            return TokenCount(input_tokens=estimate_tokens(request), estimated=True)
        return TokenCount(input_tokens=counted, estimated=False)

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
    """A client when a key of the settings' provider is set (ANTHROPIC_API_KEY by default), else None
    (graders then record ``not_configured``)."""
    if not configured(settings):
        return None
    return ModelClient(settings, cache_root, budget=budget)
