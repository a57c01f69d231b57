"""Temporary work folders stamped with their owner, and the sweep of those a killed run left.

A folder's name carries the creating process's pid and start time (``evalkit-run-<pid>.<start>-...``):
the next run removes every such folder whose owner is gone (kill -9, a crash, a lost machine
state), and leaves those of live processes (another run, a parallel worker) alone.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

#: Prefixes of the temporary folders evalkit creates.
PREFIXES = ("evalkit-run-", "evalkit-sbx-", "evalkit-tree-", "evalkit-worktree-")
#: Folders with one of the prefixes but no owner stamp (made by older versions) are swept past this age.
UNSTAMPED_MAX_AGE_S = 24 * 3600
_STAMP = re.compile(r"^(?P<prefix>evalkit-[a-z]+-)(?P<pid>\d+)\.(?P<start>\d+)-")


def _start_time(pid: int) -> int | None:
    """A process's start time in clock ticks since boot (/proc/<pid>/stat field 22); None when gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


@functools.lru_cache(maxsize=1)
def _my_stamp(pid: int) -> str:
    return f"{pid}.{_start_time(pid) or 0}"


def prefix(kind: str) -> str:
    """``kind`` (one of ``PREFIXES``) stamped with this process: pass it to mkdtemp/TemporaryDirectory."""
    return f"{kind}{_my_stamp(os.getpid())}-"


def owner_alive(name: str) -> bool | None:
    """Whether the process that made the folder ``name`` still runs; None when the name has no stamp."""
    m = _STAMP.match(name)
    if m is None:
        return None
    pid, start = int(m["pid"]), int(m["start"])
    now = _start_time(pid)
    return now is not None and (start == 0 or now == start)


def sweep(tmp: str | os.PathLike[str] | None = None) -> list[str]:
    """Remove evalkit's temporary folders whose owner is dead; return their names."""
    base = Path(tmp or tempfile.gettempdir())
    removed: list[str] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(PREFIXES):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            alive = owner_alive(entry.name)
            if alive is None:
                alive = time.time() - entry.stat(follow_symlinks=False).st_mtime < UNSTAMPED_MAX_AGE_S
        except OSError:
            continue
        if not alive:
            shutil.rmtree(entry.path, ignore_errors=True)
            if not os.path.lexists(entry.path):
                removed.append(entry.name)
    return sorted(removed)
