"""How many sandbox containers exist at once: the container budget (``sandbox.containers``), adaptive.

A process-wide budget, independent of how many doit tasks run in parallel: a Docker sandbox holds one slot
from before its container is created until it is removed. Its limit is ``sandbox.containers``, or by default
one from the machine (``default_containers``: twice the cores, at most half the memory in containers of
``sandbox.memory_mb``). It adapts: when a container's start is much slower than the fastest seen so far, or
fails, the budget backs off (one slot fewer; half on a failure), and after a run of quick starts it grows
back by one, never past its limit. What happened is kept (``record``) and the report says it in its notes.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from pydantic import Field

from evalkit.models import Model

#: A start slower than this many times the fastest start seen is "slow" (and never below SLOW_FLOOR_S).
SLOW_FACTOR = 4.0
SLOW_FLOOR_S = 2.0
#: Quick starts in a row (times the current limit) before a backed-off budget grows by one slot again.
RECOVER_AFTER = 2
#: At most this many back-off events are kept (the count keeps going).
KEEP_EVENTS = 20


class BackOff(Model):
    """One change of the container budget while the run went."""

    at_s: float
    """Seconds since the first container of the run."""
    limit: int
    """The budget after the change."""
    reason: str
    """Why: a slow start (its seconds against the fastest), a failed start, or recovery after quick starts."""


class BudgetRecord(Model):
    """What the container budget did in one run (the report's run notes say it)."""

    limit: int
    """Most containers at once (``sandbox.containers``, or the default from the machine)."""
    source: str
    """Where the limit came from: ``sandbox.containers`` or the machine (cores and memory)."""
    started: int = 0
    """Containers started."""
    failed_starts: int = 0
    """Container creates or starts that failed."""
    peak: int = 0
    """Most containers that existed at once."""
    lowest: int = 0
    """The lowest the adaptive budget went (equal to ``limit`` when it never backed off)."""
    back_offs: int = 0
    """How many times the budget shrank."""
    fastest_start_s: float | None = None
    """Quickest container start seen (create excluded)."""
    slowest_start_s: float | None = None
    """Slowest container start seen."""
    events: list[BackOff] = Field(default_factory=list)
    """The first changes of the budget (back-offs and recoveries), in order."""

    def note(self) -> str:
        """One line for the report's run notes."""
        line = f"Sandbox containers: at most {self.limit} at once ({self.source}); {self.started} started"
        if self.peak:
            line += f", at most {self.peak} at once"
        if self.back_offs:
            line += (f"; the budget backed off {self.back_offs} time(s), down to {self.lowest}, when container "
                     f"starts slowed down or failed ({self.failed_starts} failed; slowest start "
                     f"{self.slowest_start_s or 0:.1f} s against {self.fastest_start_s or 0:.1f} s)")
        else:
            line += "; no back-off (starts stayed quick)"
        return line + "."


def machine_memory_mb() -> int:
    """Physical memory of this machine in MiB (0 when it cannot tell)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1 << 20))
    except (ValueError, OSError, AttributeError):
        return 0


def cpu_count() -> int:
    """Cores this process may use (its CPU affinity where the platform tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def default_containers(memory_mb: int, cores: int | None = None, machine_mb: int | None = None) -> int:
    """The budget from the machine: twice the cores (a container mostly waits on its tests' start-up and on
    Docker), at most half the memory in containers of ``memory_mb``; at least one."""
    cores = cpu_count() if cores is None else cores
    machine_mb = machine_memory_mb() if machine_mb is None else machine_mb
    by_cpu = 2 * max(1, cores)
    by_memory = (machine_mb // 2) // max(1, memory_mb) if machine_mb else by_cpu
    return max(1, min(by_cpu, by_memory))


def describe_default() -> str:
    """Where the default budget comes from, for the report."""
    gb = machine_memory_mb() / 1024
    return f"default from {cpu_count()} cores and {gb:.0f} GB memory"


class ContainerBudget:
    """Slots for containers, shrinking when Docker slows down and growing back after quick starts (thread-safe)."""

    def __init__(self, limit: int, source: str) -> None:
        self._cond = threading.Condition()
        self.limit = max(1, limit)
        self.current = self.limit
        self.in_use = 0
        self._quick = 0
        self._t0: float | None = None
        self.rec = BudgetRecord(limit=self.limit, source=source, lowest=self.limit)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one container slot for the block (waits while the budget is full)."""
        with self._cond:
            while self.in_use >= self.current:
                self._cond.wait()
            self.in_use += 1
            if self._t0 is None:
                self._t0 = time.monotonic()
            self.rec.peak = max(self.rec.peak, self.in_use)
        try:
            yield
        finally:
            with self._cond:
                self.in_use -= 1
                self._cond.notify_all()

    def _event(self, reason: str) -> None:
        at = round(time.monotonic() - (self._t0 or time.monotonic()), 3)
        if len(self.rec.events) < KEEP_EVENTS:
            self.rec.events.append(BackOff(at_s=at, limit=self.current, reason=reason))

    def started(self, seconds: float) -> None:
        """A container started in ``seconds``: a slow start backs off, a run of quick ones recovers."""
        with self._cond:
            rec = self.rec
            rec.started += 1
            fastest = rec.fastest_start_s
            rec.fastest_start_s = round(seconds if fastest is None else min(fastest, seconds), 3)
            rec.slowest_start_s = round(max(rec.slowest_start_s or 0.0, seconds), 3)
            slow = fastest is not None and seconds > max(SLOW_FACTOR * fastest, SLOW_FLOOR_S)
            if slow:
                self._quick = 0
                if self.current > 1:
                    self.current -= 1
                    rec.back_offs += 1
                    rec.lowest = min(rec.lowest, self.current)
                    self._event(f"start took {seconds:.1f} s (fastest {fastest:.1f} s)")
                return
            self._quick += 1
            if self.current < self.limit and self._quick >= RECOVER_AFTER * self.current:
                self._quick = 0
                self.current += 1
                self._event(f"{RECOVER_AFTER * (self.current - 1)} quick starts in a row")
                self._cond.notify_all()

    def failed(self, reason: str) -> None:
        """A container could not be created or started: halve the budget (at least one slot stays)."""
        with self._cond:
            self.rec.failed_starts += 1
            self._quick = 0
            if self.current > 1:
                self.current = max(1, self.current // 2)
                self.rec.back_offs += 1
                self.rec.lowest = min(self.rec.lowest, self.current)
                self._event(f"start failed: {reason[:120]}")

    def record(self) -> BudgetRecord:
        """A copy of what happened so far."""
        with self._cond:
            return self.rec.model_copy(deep=True)


_lock = threading.Lock()
_budget: ContainerBudget | None = None


def configure(containers: int | None, memory_mb: int = 1024) -> ContainerBudget:
    """Set this process's budget for a run (``containers``: ``sandbox.containers``; None: the machine's
    default); a budget with the same limit and source is kept (and its record goes on)."""
    global _budget
    limit = default_containers(memory_mb) if containers is None else containers
    source = "sandbox.containers" if containers is not None else describe_default()
    with _lock:
        if _budget is None or _budget.limit != max(1, limit) or _budget.rec.source != source:
            _budget = ContainerBudget(limit, source)
        return _budget


def budget() -> ContainerBudget:
    """This process's budget (the machine's default when no run configured one, e.g. on a cluster worker)."""
    with _lock:
        found = _budget
    return found if found is not None else configure(None)


def ran() -> BudgetRecord | None:
    """What this process's budget did, when it started or tried to start any container; else None."""
    with _lock:
        found = _budget
    if found is None:
        return None
    rec = found.record()
    return rec if rec.started or rec.failed_starts else None
