"""Requests and tokens per minute of one provider endpoint, honoured across every thread of a run.

One limiter per (provider, endpoint) in the process, shared by every client of it (judge and
systems under test alike). It keeps a log of the window's requests rather than a refilling
bucket, so the promise is exact: no window of ``window_s`` seconds holds more than ``rpm``
requests or more than ``tpm`` tokens. A request holds its slot from the moment it may be sent
until its answer arrives (the slot's time is then moved to the answer's time), so however long
the network takes, the server never sees more than ``rpm`` requests in any window either.
Tokens are reserved before sending (estimated input plus ``max_tokens``) and corrected to the
usage the API reports when the answer arrives.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from evalkit.llm.settings import RateLimit


@dataclass
class Slot:
    """One request in the log: when it counts from and how many tokens it counts for."""

    at: float
    tokens: int
    done: bool = False


class RateLimiter:
    """The sliding-window log of one endpoint (thread-safe)."""

    def __init__(self, limit: RateLimit, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        self.slots: list[Slot] = []
        self.waited_s = 0.0
        """Total time callers spent waiting for a slot (a figure for the report, not a promise)."""
        self._cond = threading.Condition()

    def _prune(self, now: float) -> None:
        window = self.limit.window_s
        self.slots = [s for s in self.slots if not s.done or now - s.at < window]

    def _wait_s(self, now: float, tokens: int) -> float | None:
        """Seconds until a request of ``tokens`` may go (0: now), or None when only an answer can free room."""
        limit, window = self.limit, self.limit.window_s
        waits: list[float] = []
        if limit.rpm is not None and len(self.slots) >= limit.rpm:
            done = sorted(s.at for s in self.slots if s.done)
            excess = len(self.slots) - limit.rpm  # this many must leave the window first
            if len(done) <= excess:
                return None
            waits.append(done[excess] + window - now)
        if limit.tpm is not None and self.slots:
            used = sum(s.tokens for s in self.slots)
            if used + min(tokens, limit.tpm) > limit.tpm:
                need = used + min(tokens, limit.tpm) - limit.tpm
                freed = 0
                for slot in sorted((s for s in self.slots if s.done), key=lambda s: s.at):
                    freed += slot.tokens
                    if freed >= need:
                        waits.append(slot.at + window - now)
                        break
                else:
                    return None
        return max([0.0, *waits])

    def acquire(self, tokens: int = 0) -> Slot:
        """Wait until a request of ``tokens`` fits in the window, then take its slot."""
        started = self.clock()
        with self._cond:
            while True:
                now = self.clock()
                self._prune(now)
                wait = self._wait_s(now, tokens)
                if wait == 0.0:
                    slot = Slot(at=now, tokens=tokens)
                    self.slots.append(slot)
                    self.waited_s += now - started
                    return slot
                self._cond.wait(timeout=wait)  # an answer (release) may free room sooner

    def release(self, slot: Slot, tokens: int | None = None) -> None:
        """The request of ``slot`` is answered (or failed): it counts from now, for ``tokens`` when known."""
        with self._cond:
            slot.at = max(slot.at, self.clock())
            if tokens is not None:
                slot.tokens = tokens
            slot.done = True
            self._cond.notify_all()


_lock = threading.Lock()
_limiters: dict[tuple[str, str], RateLimiter] = {}


def limiter_for(provider: str, endpoint: str, limit: RateLimit | None) -> RateLimiter | None:
    """The process-wide limiter of (``provider``, ``endpoint``), or None when ``limit`` sets nothing.

    The first client of an endpoint fixes its limits; later ones share them."""
    if limit is None or (limit.rpm is None and limit.tpm is None):
        return None
    with _lock:
        return _limiters.setdefault((provider, endpoint), RateLimiter(limit))


def reset() -> None:
    """Forget every limiter (tests; a new run in the same process)."""
    with _lock:
        _limiters.clear()
