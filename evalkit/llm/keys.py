"""API keys from the environment only, several in rotation.

A provider ``name`` reads ``<NAME>_API_KEYS`` (comma separated) and else ``<NAME>_API_KEY``
(``ANTHROPIC_API_KEYS``, ``OPENAI_API_KEY``, ...). Requests take the keys round-robin; a key the
API refuses (401/403) is dropped for the rest of the run with a notice that names it by position
only ("key 2 of 3"): a key never appears in a message, a log, an artifact or a cache key. The
last live key is never dropped: its 401 is the call's ``auth`` error, as with a single key.
"""

from __future__ import annotations

import os
import sys
import threading


def env_names(provider: str) -> tuple[str, str]:
    """The environment variables of ``provider``'s keys: the list one, then the single one."""
    stem = provider.upper().replace("-", "_")
    return f"{stem}_API_KEYS", f"{stem}_API_KEY"


def env_keys(provider: str) -> list[str]:
    """``provider``'s keys from the environment, in order, without blanks or repeats."""
    many, one = env_names(provider)
    raw = os.environ.get(many, "").strip()
    values = raw.split(",") if raw else [os.environ.get(one, "")]
    keys: list[str] = []
    for value in values:
        value = value.strip()
        if value and value not in keys:
            keys.append(value)
    return keys


class NoKeyLeft(Exception):
    """Every key of the ring was refused (or there never was one)."""


class KeyRing:
    """Keys of one provider taken round-robin, refused ones dropped (thread-safe)."""

    def __init__(self, provider: str, keys: list[str]) -> None:
        self.provider = provider
        self.all = list(keys)
        self.live = list(keys)
        self._next = 0
        self._lock = threading.Lock()

    @property
    def source(self) -> str:
        many, one = env_names(self.provider)
        return many if len(self.all) > 1 or os.environ.get(many, "").strip() else one

    def next(self) -> str:
        """The key for the next request; ``NoKeyLeft`` when every key was refused."""
        with self._lock:
            if not self.live:
                raise NoKeyLeft(f"every key of {self.source} was refused by the API (401/403) in this run"
                                if self.all else f"{self.source} is not set")
            at = self._next % len(self.live)
            self._next = at + 1
            return self.live[at]

    def drop(self, key: str, status: int | None) -> bool:
        """Drop ``key`` after a 401/403 (with a notice) unless it is the last live one; True when another
        key remains to try."""
        with self._lock:
            if key in self.live and len(self.live) > 1:
                if self.live.index(key) < self._next:
                    self._next -= 1  # the turn goes on to the key after it
                self.live.remove(key)
                position = self.all.index(key) + 1
                left = len(self.live)
                print(f"evalkit: {self.provider} API key {position} of {len(self.all)} (from {self.source}) was "
                      f"refused (HTTP {status}): dropped for the rest of this run; {left} left",
                      file=sys.stderr, flush=True)
            return bool(self.live) and self.live != [key]

    def scrub(self, text: str) -> str:
        """``text`` with every key of the ring blanked out."""
        for key in self.all:
            text = text.replace(key, "[redacted]")
        return text


_lock = threading.Lock()
_rings: dict[tuple[str, str, tuple[str, ...]], KeyRing] = {}


def ring_for(provider: str, endpoint: str = "") -> KeyRing:
    """The process-wide ring of ``provider``'s current keys at ``endpoint`` (every client of the endpoint
    shares the turns and the drops)."""
    keys = env_keys(provider)
    with _lock:
        return _rings.setdefault((provider, endpoint, tuple(keys)), KeyRing(provider, keys))


def reset() -> None:
    """Forget every ring (tests; a new run in the same process)."""
    with _lock:
        _rings.clear()
