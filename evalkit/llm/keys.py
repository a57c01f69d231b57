"""API keys from the environment only, several in rotation.

A provider ``name`` reads ``<NAME>_API_KEYS`` (comma separated) and else ``<NAME>_API_KEY``
(``ANTHROPIC_API_KEYS``, ``OPENAI_API_KEY``, ...). Requests take the keys round-robin; a key the
API refuses (401/403) is dropped for the rest of the run with a notice that names it by position
only ("key 2 of 3"): a key never appears in a message, a log, an artifact or a cache key. The
last live key is never dropped: its 401 is the call's ``auth`` error, as with a single key.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading

from evalkit.fsutil import register_secrets

#: Names of environment variables that hold a key of some provider (any provider, known or not).
KEY_SUFFIXES = ("_API_KEY", "_API_KEYS")
PR_SET_DUMPABLE = 4
_sealed: dict[str, str] = {}


def env_names(provider: str) -> tuple[str, str]:
    """The environment variables of ``provider``'s keys: the list one, then the single one."""
    stem = provider.upper().replace("-", "_")
    return f"{stem}_API_KEYS", f"{stem}_API_KEY"


def key_names(environ: dict[str, str] | os._Environ[str]) -> list[str]:
    """The variables of ``environ`` that hold API keys (``<ANY>_API_KEY`` / ``<ANY>_API_KEYS``)."""
    return [name for name in environ if name.upper().endswith(KEY_SUFFIXES)]


def environ_value(name: str) -> str | None:
    """A variable of evalkit's environment, a sealed key's too (a command system's ``pass_env``)."""
    return os.environ.get(name, _sealed.get(name))


def sealed_env() -> dict[str, str]:
    """The keys sealed away, for an evalkit process this one starts (it seals them in turn)."""
    return dict(_sealed)


def _dumpable_off() -> bool:
    """prctl(PR_SET_DUMPABLE, 0): /proc/<pid>/environ and memory of this process become root's only."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _wipe_initial_environ(names: list[str]) -> None:
    """Overwrite the values of ``names`` in the C environment block (what /proc/<pid>/environ shows),
    before unsetenv drops them: the kernel keeps showing the block the process started with."""
    try:
        libc = ctypes.CDLL(None)
        environ = ctypes.POINTER(ctypes.c_void_p).in_dll(libc, "environ")
    except (OSError, ValueError, AttributeError):
        return
    prefixes = [name.encode() + b"=" for name in names]
    i = 0
    while (address := environ[i]) is not None:
        entry = ctypes.string_at(address)
        for prefix in prefixes:
            if entry.startswith(prefix) and len(entry) > len(prefix):
                ctypes.memset(address + len(prefix), ord("x"), len(entry) - len(prefix))
        i += 1


def seal() -> None:
    """Read every provider's keys once and take them out of reach of anything this process starts:
    removed from ``os.environ`` (and blanked in the C environment block), the process made
    non-dumpable (a process of the same user cannot read its environment or memory), every value
    registered with the redactor of evalkit's writes. ``env_keys`` still finds them. Idempotent."""
    names = key_names(os.environ)
    for name in names:
        _sealed[name] = os.environ[name]
    register_secrets(v.strip() for value in _sealed.values() for v in value.split(","))
    if names:
        _wipe_initial_environ(names)
        for name in names:
            os.environ.pop(name, None)
    _dumpable_off()


def env_keys(provider: str) -> list[str]:
    """``provider``'s keys from the environment (or sealed away by ``seal``), in order, without blanks or repeats."""
    many, one = env_names(provider)
    raw = (environ_value(many) or "").strip()
    values = raw.split(",") if raw else [environ_value(one) or ""]
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
        return many if len(self.all) > 1 or (environ_value(many) or "").strip() else one

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
