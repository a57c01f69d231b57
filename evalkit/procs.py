"""This machine's processes as /proc shows them, and how evalkit waits for and kills processes without ever
signalling one that got a number it did not mean: what it reads to find the processes a system or a killed run left
running (`evalkit.systems.command`, `evalkit.tempdirs`, `evalkit.sandbox.local_user`), `kill_listed` for those, and
`wait_exited` and `Group` for the children it starts in a session of their own (`evalkit.systems.command`,
`evalkit.sandbox.local_backend`)."""

from __future__ import annotations

import math
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import NamedTuple


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (the state first), None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def stat(pid: int) -> tuple[str, int, int] | None:
    """(state, process group, session) of a process, None when it is gone (`listed` without the start time)."""
    found = listed(pid)
    return None if found is None else (found.state, found.group, found.session)


def _running(state: str) -> bool:
    """Whether a process in this /proc state runs: a zombie (dead, its parent has not reaped it yet) does not."""
    return state not in ("Z", "X")


def alive(pid: int) -> bool:
    """Whether the process runs: it exists and is not a zombie."""
    st = stat(pid)
    return st is not None and _running(st[0])


def _start_field(fields: list[str] | None) -> int | None:
    try:
        return None if fields is None else int(fields[19])
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    """A process's start time in clock ticks since boot (/proc/<pid>/stat field 22); None when gone. With the
    pid it names one process: a pid reused later has another start time."""
    return _start_field(_stat_fields(pid))


def live_start_time(pid: int) -> int | None:
    """`start_time` of a process that runs; None when it is gone or a zombie (one read of /proc)."""
    fields = _stat_fields(pid)
    return _start_field(fields) if fields and _running(fields[0]) else None


class Listed(NamedTuple):
    """A process as one read of /proc/<pid>/stat saw it: with its start time, it names that process and no later
    one that gets the pid (`kill_listed`)."""

    pid: int
    state: str
    group: int
    session: int
    start: int


def listed(pid: int) -> Listed | None:
    """`Listed` for one pid, None when it is gone."""
    fields = _stat_fields(pid)
    start = _start_field(fields)
    if fields is None or start is None:
        return None
    return Listed(pid, fields[0], int(fields[2]), int(fields[3]), start)


def others() -> Iterator[Listed]:
    """Every live process but this one (a zombie is not live)."""
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        found = listed(int(entry.name))
        if found is not None and _running(found.state):
            yield found


def kill_listed(pid: int, start: int) -> bool:
    """SIGKILL the process ``pid`` only while it is still the one that started at ``start`` (`Listed.start`); False
    when it is gone, is another's now, or may not be signalled. A pidfd opened first pins the process the number
    names, the start time read after it says which one that is, and the signal goes to the pidfd: between a listing
    of /proc and its kill, a process that got the number of one that ended is never signalled. Without pidfds
    (Linux before 5.3) the check and `os.kill` leave a window of microseconds."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except OSError:
        pidfd = -1
    try:
        if start_time(pid) != start:
            return False
        if pidfd >= 0:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def read(pid: int, name: str) -> bytes:
    """/proc/<pid>/<name>, empty when it cannot be read (gone, or another user's)."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def environ(pid: int) -> list[bytes]:
    """The process's environment, ``NAME=value`` items (empty when it cannot be read)."""
    return [item for item in read(pid, "environ").split(b"\0") if item]


def command(pid: int) -> str:
    """The process's command line, its arguments joined by spaces."""
    return read(pid, "cmdline").replace(b"\0", b" ").decode("utf-8", "replace").strip()


def wait_exited(proc: subprocess.Popen[bytes], timeout: float | None = None) -> bool:
    """Wait until ``proc`` has exited, without reaping it; False when ``timeout`` seconds pass first.

    Its zombie keeps its pid, and with it its process group and session ids, from being given to a new process
    until `subprocess.Popen.wait` reaps it: only then may a group kill (`Group.kill`) or a search by session id
    (`evalkit.systems.command.leftover_processes`) reach an unrelated process that got the number next.
    The wait is a poll of a pidfd, woken at the exit; where the kernel has none (before 5.3), a sleep loop
    as `Popen.wait`'s with a timeout (up to 50 ms late)."""
    if proc.returncode is not None:  # reaped: the pid may be another process's now
        return True
    try:
        pidfd = os.pidfd_open(proc.pid)
    except ProcessLookupError:  # reaped already (a `poll` elsewhere)
        return True
    except OSError:
        return _wait_exited_polling(proc, timeout)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(None if timeout is None else max(0, math.ceil(timeout * 1000))))
    finally:
        os.close(pidfd)


def _wait_exited_polling(proc: subprocess.Popen[bytes], timeout: float | None) -> bool:
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.0005
    while True:
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:  # reaped already
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(delay if deadline is None else max(0.0, min(delay, deadline - time.monotonic())))
        delay = min(delay * 2, 0.05)


class Group:
    """The process group a child leads (started with ``start_new_session``), killed only while the child is not
    reaped: until then its group id is its own (`wait_exited`). `reap` reaps it; a kill after that is a no-op.
    Both take one lock, so a kill from another thread (a reader past its output cap) cannot slip in between."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self._lock = threading.Lock()
        self._reaped = False

    def kill(self) -> None:
        """SIGKILL the group, and the leader itself in case it left its group (else `reap` would wait on it)."""
        with self._lock:
            if self._reaped:
                return
            for send in (os.killpg, os.kill):
                try:
                    send(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def reap(self) -> int:
        """Reap the child (waiting for it if it still runs) and return its exit status; no kill is sent after."""
        with self._lock:
            self._reaped = True
            return self.proc.wait()
