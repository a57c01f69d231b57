"""A child's process group is killed only while the child is not reaped (`evalkit.procs.wait_exited`, `Group`).

Once reaped, a pid is free: on a busy host (pid_max 32768 in CI's container) the next process may get it, and a
`killpg` by that number, or a search by that session id, would kill an unrelated process that leads its own
session. This flaked a sweep test in CI: another test's finished runner's group number went to its session leader.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from evalkit import procs


def _child(code: str, **kw) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True, **kw)


def _without_pidfds(monkeypatch) -> None:
    """This process from now on as on a kernel before 5.3: no pidfd_open."""
    def no_pidfd(pid: int) -> int:
        raise OSError(38, "Function not implemented")
    monkeypatch.setattr(os, "pidfd_open", no_pidfd)


def test_an_exited_child_stays_a_zombie_holding_its_pid_until_reaped() -> None:
    proc = _child("raise SystemExit(3)")
    assert procs.wait_exited(proc, 30)
    st = procs.stat(proc.pid)
    assert st is not None and st[0] == "Z" and st[1] == proc.pid, st  # its group id is still its own
    group = procs.Group(proc)
    assert group.reap() == 3
    assert procs.stat(proc.pid) is None or procs.start_time(proc.pid) is not None  # gone, or another's now


def test_waiting_ends_at_the_timeout_with_the_child_still_running() -> None:
    proc = _child("import time; time.sleep(300)")
    try:
        t0 = time.monotonic()
        assert not procs.wait_exited(proc, 0.3)
        assert 0.3 <= time.monotonic() - t0 < 60  # the timeout, not the sleeping child's 300 s (a loaded machine may be late)
        assert procs.alive(proc.pid)
    finally:
        group = procs.Group(proc)
        group.kill()
        assert group.reap() == -9


def test_a_group_kill_after_the_reap_sends_nothing(monkeypatch) -> None:
    proc = _child("pass")
    group = procs.Group(proc)
    assert procs.wait_exited(proc)
    group.kill()  # harmless: the zombie still holds the group id
    assert group.reap() in (0, -9)
    sent: list[int] = []
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: sent.append(pgid))
    group.kill()
    assert sent == []


def test_the_wait_wakes_at_the_exit_and_without_a_pidfd_polls(monkeypatch) -> None:
    """The pidfd's poll returns as the child exits; a kernel without pidfd_open gets the sleep loop, same answers."""
    for pidfd in (True, False):
        if not pidfd:
            _without_pidfds(monkeypatch)
        proc = _child("import time; time.sleep(0.4)")
        t0 = time.monotonic()
        assert not procs.wait_exited(proc, 0.05)
        assert procs.wait_exited(proc, 240)
        took = time.monotonic() - t0
        assert 0.4 <= took < 120, took  # at the exit, not at the 240 s timeout
        assert procs.stat(proc.pid)[0] == "Z"  # type: ignore[index]
        assert procs.Group(proc).reap() == 0
        assert procs.wait_exited(proc, 1)  # reaped: nothing left to wait for


def test_a_child_that_leads_no_group_is_killed_too() -> None:
    """No group has the child's number (it never led one, as one that left its group): the child itself is killed,
    so the reap that follows cannot hang."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    assert os.getpgid(proc.pid) != proc.pid
    group = procs.Group(proc)
    group.kill()
    assert procs.wait_exited(proc, 10)
    assert group.reap() == -9


def test_a_listed_process_is_killed_only_while_its_pid_names_it(monkeypatch) -> None:
    """`kill_listed` signals the process a /proc listing saw, never one that got its number later: a start time
    other than the listed one (what a process that reused the pid has) is left alone; with pidfds or without."""
    for pidfd in (True, False):
        if not pidfd:
            _without_pidfds(monkeypatch)
        proc = _child("import time; time.sleep(300)")
        seen = procs.listed(proc.pid)
        assert seen is not None and seen.start == procs.start_time(proc.pid) and seen.session == proc.pid
        assert any(p.pid == proc.pid for p in procs.others())
        assert not procs.kill_listed(proc.pid, seen.start + 1)  # as if the pid were another's now
        time.sleep(0.1)
        assert procs.alive(proc.pid)
        assert procs.kill_listed(proc.pid, seen.start)
        assert procs.wait_exited(proc, 10)
        assert procs.Group(proc).reap() == -9
        assert not procs.kill_listed(proc.pid, seen.start)  # gone (or another's, with another start)
