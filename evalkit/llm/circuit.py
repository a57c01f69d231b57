"""A circuit breaker per API endpoint, shared by every client of one process (one run).

Consecutive transport failures of an endpoint (connection refused or reset, timeouts, 5xx other
than 529 overloaded, malformed bodies) are counted across every call and thread; after ``after``
of them the circuit opens and every later attempt of the run fails at once with
``circuit_open`` (recorded as an infrastructure error, retried next run) instead of waiting out
its own timeouts and retries. Any answer from the server (a message, or an HTTP error that is not
a transport failure such as 400, 429 or 529) closes it again.
"""

from __future__ import annotations

import sys
import threading

from evalkit.llm.calls import TRANSPORT_KINDS, LLMError

OVERLOADED = 529
"""The API is up but busy: like a rate limit, not a sign of a broken endpoint."""


class Circuit:
    """Consecutive transport failures of one endpoint (thread-safe)."""

    def __init__(self, endpoint: str, after: int) -> None:
        self.endpoint = endpoint
        self.after = after
        self.failures = 0
        self.last: LLMError | None = None
        self.opened: LLMError | None = None
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise the ``circuit_open`` error when the circuit is open."""
        with self._lock:
            if self.opened is not None:
                raise self.opened

    def success(self) -> None:
        """The endpoint answered: close the circuit and forget the failures."""
        with self._lock:
            self.failures, self.last, self.opened = 0, None, None

    def failure(self, error: LLMError) -> LLMError | None:
        """Count ``error`` when it is a transport failure (else the server answered: close); return
        the ``circuit_open`` error when the circuit is open now."""
        if error.kind not in TRANSPORT_KINDS or error.status == OVERLOADED:
            self.success()
            return None
        with self._lock:
            if self.opened is not None:
                return self.opened
            self.failures += 1
            self.last = error
            if self.after <= 0 or self.failures < self.after:
                return None
            self.opened = LLMError(
                "circuit_open", f"circuit open after {self.failures} consecutive failures: {error}", status=error.status
            )
            opened = self.opened
        print(f"evalkit: model API {self.endpoint}: {opened.message}; the remaining calls of this run are "
              "recorded as infrastructure errors at once and retried next run", file=sys.stderr, flush=True)
        return opened


_lock = threading.Lock()
_circuits: dict[tuple[str, int], Circuit] = {}


def circuit_for(endpoint: str, after: int) -> Circuit:
    """The process-wide circuit of ``endpoint`` (one per threshold)."""
    with _lock:
        return _circuits.setdefault((endpoint, after), Circuit(endpoint, after))


def reset() -> None:
    """Forget every circuit (tests; a new run in the same process)."""
    with _lock:
        _circuits.clear()
