"""This machine's processes as /proc shows them: what evalkit reads to find the processes a system or a killed
run left running (`evalkit.systems.command`, `evalkit.tempdirs`)."""

from __future__ import annotations

import os
from collections.abc import Iterator


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (the state first), None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def stat(pid: int) -> tuple[str, int, int] | None:
    """(state, process group, session) of a process, None when it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else (fields[0], int(fields[2]), int(fields[3]))


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


def others() -> Iterator[tuple[int, tuple[str, int, int]]]:
    """Every live process but this one (a zombie is not live), with its ``stat``."""
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        st = stat(int(entry.name))
        if st is not None and _running(st[0]):
            yield int(entry.name), st


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
