"""This process's memory of a Docker daemon that did not answer in time.

A daemon can accept connections and never answer (hung on a full disk or a stuck storage driver). docker-py waits
120 s on every call, and a run makes many calls one after another (image lookups, the image task's check, each
execution's image), so such a daemon held a one-case run for over 15 minutes. Instead, a ping or API-version
handshake unanswered for ``ANSWER_S`` seconds, or an ordinary call that misses the client's own deadline (a daemon
that hangs mid-run; evalkit.sandbox.dockerclient.CallDeadline), marks the daemon silent for ``RECHECK_S`` seconds,
and in that time every new Docker call in this process fails at once (evalkit.sandbox.dockerclient.client: the
execution records an infrastructure error and the run exits for a retry). After that the next call asks again.

Only a timeout marks the daemon: a refused connection (no daemon) already fails at once. The memory is per
``DOCKER_HOST``. Kept without docker-py, so that the run's first ping (evalkit.sandbox.daemon) records here too.
"""

from __future__ import annotations

import os
import threading
import time

ANSWER_S = 10
"""Seconds a daemon has to answer a ping or docker-py's API-version handshake."""
RECHECK_S = 60.0
"""Seconds a daemon that did not answer in time is taken as silent before it is asked again."""

_lock = threading.Lock()
_silent_until: dict[str, float] = {}


def docker_host() -> str:
    """The daemon this process talks to (``$DOCKER_HOST``, else the local socket)."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def note_silent() -> None:
    """The daemon did not answer within ``ANSWER_S``: take it as silent for ``RECHECK_S`` seconds."""
    with _lock:
        _silent_until[docker_host()] = time.monotonic() + RECHECK_S


def note_answered() -> None:
    """The daemon answered: forget that it was silent."""
    with _lock:
        _silent_until.pop(docker_host(), None)


def silent_for() -> float:
    """Seconds left before a daemon that did not answer is asked again (0: ask it now)."""
    with _lock:
        return max(0.0, _silent_until.get(docker_host(), 0.0) - time.monotonic())


def why_silent() -> str:
    """The message of a call refused because the daemon is taken as silent."""
    return (f"the Docker daemon at {docker_host()} did not answer within {ANSWER_S:.0f} s; it is not asked again "
            f"for {silent_for():.0f} s (a daemon that accepts connections but does not answer is hung)")


def is_timeout(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception it was raised from or wraps, is a timeout: the socket's ``TimeoutError``,
    urllib3's ``ReadTimeoutError``, requests' ``ReadTimeout`` and ``ConnectTimeout`` (docker-py re-raises them as a
    ``DockerException`` from its API-version handshake)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, TimeoutError) or "timeout" in type(link).__name__.lower():
            return True
        reason = getattr(link, "reason", None)  # urllib3's MaxRetryError holds the timeout as its reason
        nested = [arg for arg in (reason, *link.args) if isinstance(arg, BaseException)]  # requests wraps in args
        link = link.__cause__ or link.__context__ or (nested[0] if nested else None)
    return False
