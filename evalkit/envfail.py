"""Failures of the machine a run is on, not of a case, a system or evalkit: a full disk, a read-only
file system, no memory, no file descriptors left. A task that meets one fails with one plain line (no
traceback, never an evalkit `bug` or a retried infrastructure error) and the run exits 6.
"""

from __future__ import annotations

import errno
import threading

ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.ENOMEM, errno.EMFILE, errno.ENFILE})

_lock = threading.Lock()
_failures: list[str] = []


def environment_cause(exc: BaseException | None) -> OSError | None:
    """The OSError of the machine's (`ENVIRONMENT_ERRNOS`) behind ``exc``, following its causes; else None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in ENVIRONMENT_ERRNOS:
            return exc
        if isinstance(exc, MemoryError):
            return OSError(errno.ENOMEM, "out of memory")
        exc = exc.__cause__ or exc.__context__
    return None


def describe(exc: OSError) -> str:
    """One line: what failed, where."""
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


def record(exc: OSError, task: str = "") -> str:
    """Remember an environment failure of this run; its line."""
    line = (f"{task}: " if task else "") + describe(exc)
    with _lock:
        _failures.append(line)
    return line


def recorded() -> list[str]:
    """The environment failures recorded in this process, in order."""
    with _lock:
        return list(_failures)


def clear() -> None:
    with _lock:
        _failures.clear()
