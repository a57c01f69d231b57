"""One run of a project at a time: an advisory lock on ``<work>/lock`` (``fcntl.flock``).

The lock file holds the owner's pid, its start time (clock ticks since boot, as /proc gives it) and
when it started, so a refused run can say who holds it. The kernel drops a flock when its owner dies,
so a run killed with -9 leaves no stale lock: the next run takes it and rewrites the file (the
contents of a dead owner are only reported as "stale, taken over"). The file descriptor is not
inherited by the programs a run starts (Python opens files non-inheritable; subprocess closes the
rest), so a system under test left running cannot keep the project locked.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

from evalkit import procs, tempdirs

LOCK_NAME = "lock"
#: `evalkit run` refused because another run of the same project holds the lock (without --wait).
LOCKED_EXIT = 7


class ProjectLocked(Exception):
    """Another run holds the project's lock; the message names it and what to do."""


def describe_holder(path: Path) -> str:
    """Who the lock file says holds it: 'pid N, started T' (or what is known)."""
    try:
        info: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "another process"
    if not isinstance(info, dict):
        return "another process"
    pid = info.get("pid")
    started = info.get("started", "")
    alive = isinstance(pid, int) and tempdirs.owner_alive(f"evalkit-run-{pid}.{info.get('start_ticks', 0)}-")
    where = f"pid {pid}" + (f", started {started}" if started else "")
    if isinstance(pid, int) and not alive:  # its children still hold the descriptor (should not happen)
        where += ", no longer running"
    return where


def _write_owner(fd: int) -> None:
    pid = os.getpid()
    info = {"pid": pid, "start_ticks": procs.start_time(pid) or 0,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "argv": sys.argv[1:]}
    data = (json.dumps(info, sort_keys=True) + "\n").encode("utf-8")
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


@contextmanager
def project_lock(work: Path, wait: bool = False, notify: Callable[[str], object] | None = None) -> Iterator[Path]:
    """Hold ``<work>/lock`` for the block.

    Without ``wait``, raise `ProjectLocked` at once when another run holds it; with ``wait``, block
    until it is free (``notify(message)`` is called once, before waiting). Stale contents left by a
    killed run are overwritten. A work folder this call made and the run left empty (input refused
    before anything was written) is removed again with its lock file: a refused run writes nothing."""
    created = not work.exists()
    work.mkdir(parents=True, exist_ok=True)
    path = work / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = describe_holder(path)
            if not wait:
                raise ProjectLocked(f"another evalkit run of this project is going ({holder}; lock {path}); "
                                    f"wait for it to end, or pass --wait to start when it does") from None
            if notify is not None:
                notify(f"another evalkit run of this project is going ({holder}); waiting for it to end")
            fcntl.flock(fd, fcntl.LOCK_EX)
        _write_owner(fd)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)  # released: nobody holds it (the file stays; removing it would race)
            if created and [e.name for e in os.scandir(work)] == [LOCK_NAME]:
                path.unlink(missing_ok=True)
                work.rmdir()
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
