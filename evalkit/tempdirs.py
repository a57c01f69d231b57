"""Temporary work folders stamped with their owner, and the sweep of those a killed run left.

A folder's name carries the creating process's pid and start time (``evalkit-run-<pid>.<start>-...``):
the next run removes every such folder whose owner is gone (kill -9, a crash, a lost machine
state), and leaves those of live processes (another run, a parallel worker) alone.

Before it removes a dead owner's folder, the sweep kills the processes still working for it: a command system
starts in a session of its own (so that a timeout can kill its group), which also means that a kill -9 of the
run, or of the run's whole process group, leaves it running, paying for its model calls, while the next run asks
the same case again. A process is the folder's when its working directory is in the folder or an environment
variable of its names a path in it (a command system's EVALKIT_CASE, which what it starts inherits), or when it is
in the session of such a process whose environment names the folder (a command system leads a session of its own:
what it starts stays in it after a `chdir` and with an environment of its own).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalkit import procs
from evalkit.termtext import terminal_safe

#: Prefixes of the temporary folders evalkit creates.
PREFIXES = ("evalkit-run-", "evalkit-sbx-", "evalkit-tree-", "evalkit-worktree-")
#: Folders with one of the prefixes but no owner stamp (made by older versions) are swept past this age.
UNSTAMPED_MAX_AGE_S = 24 * 3600
_STAMP = re.compile(r"^(?P<prefix>evalkit-[a-z]+-)(?P<pid>\d+)\.(?P<start>\d+)-")


@functools.lru_cache(maxsize=1)
def _my_stamp(pid: int) -> str:
    return f"{pid}.{procs.start_time(pid) or 0}"


def prefix(kind: str) -> str:
    """``kind`` (one of ``PREFIXES``) stamped with this process: pass it to mkdtemp/TemporaryDirectory."""
    return f"{kind}{_my_stamp(os.getpid())}-"


def owner_alive(name: str) -> bool | None:
    """Whether the process that made the folder ``name`` still runs; None when the name has no stamp."""
    m = _STAMP.match(name)
    if m is None:
        return None
    pid, start = int(m["pid"]), int(m["start"])
    now = procs.live_start_time(pid)  # None: gone, or killed and not reaped yet (a zombie still has its start time)
    return now is not None and (start == 0 or now == start)


@dataclass(frozen=True)
class Stray:
    """A process still working for a dead owner's folder, killed by the sweep."""

    pid: int
    command: str
    folder: str
    start: int
    """Its start time (`evalkit.procs.Listed.start`): the sweep kills it only while the pid still names it."""


def killed_line(stray: Stray, left_by: str) -> str:
    """The line a sweep prints for a process it killed; ``left_by`` says whose kill left it running."""
    return (f"evalkit: killed pid {stray.pid} (`{terminal_safe(stray.command[:120])}`): {left_by} left it running "
            f"in {stray.folder}")


def _in(path: str, roots: dict[str, str]) -> str | None:
    """The folder (of ``roots``: a spelling of it -> the folder) that ``path`` is or is in."""
    return next((folder for r, folder in roots.items() if path == r or path.startswith(r + "/")), None)


def strays(folders: Sequence[str]) -> list[Stray]:
    """The live processes working for one of ``folders``: their working directory is in it, or an environment
    variable of theirs names it or a path in it, or they are in the session of a process whose environment names it
    (a command system leads a session of its own: what it starts stays there after a `chdir` and without the
    environment)."""
    roots = {spelt: f for f in folders for spelt in {os.path.abspath(f), os.path.realpath(f)}}  # /tmp a symlink
    if not roots:
        return []
    found: dict[int, Stray] = {}
    sessions: dict[int, str] = {}  # session id -> the folder its leader's environment names
    live = list(procs.others())
    for proc in live:
        pid, session = proc.pid, proc.session
        try:
            folder = _in(os.readlink(f"/proc/{pid}/cwd"), roots)
        except OSError:
            folder = None
        if folder is None or session == pid:  # the environment: whether it names a folder, or a leader's session
            values = (item.partition(b"=")[2] for item in procs.environ(pid))
            named = next((f for v in values if (f := _in(os.fsdecode(v), roots))), None)
            if named is not None and session == pid:
                sessions[pid] = named
            folder = folder or named
        if folder is not None:
            found[pid] = Stray(pid, procs.command(pid), folder, proc.start)
    for proc in live:
        if proc.pid not in found and proc.session in sessions:
            found[proc.pid] = Stray(proc.pid, procs.command(proc.pid), sessions[proc.session], proc.start)
    return [found[pid] for pid in sorted(found)]


def sweep(tmp: str | os.PathLike[str] | None = None, killed: Callable[[Stray], None] | None = None) -> list[str]:
    """Remove evalkit's temporary folders whose owner is dead; return their names. The processes still working
    for a folder whose stamp names a dead owner are killed first (SIGKILL), each passed to ``killed``."""
    base = Path(tmp or tempfile.gettempdir())
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    dead: list[str] = []
    stamped: list[str] = []
    for entry in entries:
        if not entry.name.startswith(PREFIXES):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            alive = owner_alive(entry.name)
            if alive is False:
                stamped.append(entry.path)
            if alive is None:
                alive = time.time() - entry.stat(follow_symlinks=False).st_mtime < UNSTAMPED_MAX_AGE_S
        except OSError:
            continue
        if not alive:
            dead.append(entry.path)
    for stray in strays(stamped):
        if not procs.kill_listed(stray.pid, stray.start):
            continue
        if killed is not None:
            killed(stray)
    removed: list[str] = []
    for path in dead:
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            removed.append(os.path.basename(path))
    return sorted(removed)
