"""The container budget (issue 32, item 1): a cap on containers at once, independent of jobs, adaptive.

Unit tests of the budget's arithmetic and adaptation, then real Docker: concurrent runs under a budget of
one never overlap, and what the budget did reaches the record the report's run notes read.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from evalkit.sandbox import budget as sb_budget
from evalkit.sandbox.budget import ContainerBudget, default_containers


def test_default_is_twice_the_cores_capped_by_half_the_memory() -> None:
    assert default_containers(1024, cores=2, machine_mb=23 * 1024) == 4
    assert default_containers(4096, cores=8, machine_mb=16 * 1024) == 2  # memory: 8 GB / 4 GB
    assert default_containers(8192, cores=4, machine_mb=4 * 1024) == 1  # never below one
    assert default_containers(1024, cores=3, machine_mb=0) == 6  # memory unknown: the cores decide


def test_slots_cap_concurrency_whatever_the_thread_count() -> None:
    b = ContainerBudget(2, "test")
    now = 0
    peak = 0
    lock = threading.Lock()

    def hold(_: int) -> None:
        nonlocal now, peak
        with b.slot():
            with lock:
                now += 1
                peak = max(peak, now)
            time.sleep(0.05)
            with lock:
                now -= 1

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(hold, range(12)))
    assert peak == 2 and b.record().peak == 2 and b.in_use == 0


def test_a_slow_start_backs_off_and_quick_starts_recover() -> None:
    b = ContainerBudget(4, "test")
    b.started(0.3)
    b.started(0.4)
    assert b.current == 4 and b.record().back_offs == 0
    b.started(5.0)  # > max(4 x 0.3 s, 2 s)
    assert b.current == 3
    rec = b.record()
    assert rec.back_offs == 1 and rec.lowest == 3 and "5.0 s" in rec.events[0].reason
    assert "backed off 1 time(s), down to 3" in rec.note()
    for _ in range(2 * 3):  # RECOVER_AFTER x the current limit quick starts: one slot back
        b.started(0.3)
    assert b.current == 4 and b.record().events[-1].limit == 4
    for _ in range(20):
        b.started(0.3)
    assert b.current == 4  # never past the limit


def test_a_failed_start_halves_the_budget_and_one_slot_always_stays() -> None:
    b = ContainerBudget(8, "test")
    b.failed("start: 500 Server Error")
    assert b.current == 4
    for _ in range(5):
        b.failed("start: 500 Server Error")
    assert b.current == 1 and b.record().failed_starts == 6 and b.record().lowest == 1


def test_a_backed_off_budget_makes_threads_wait() -> None:
    b = ContainerBudget(2, "test")
    b.started(0.2)
    b.started(9.0)  # backs off to 1
    assert b.current == 1
    entered = threading.Event()
    with b.slot():
        t = threading.Thread(target=lambda: (b.slot().__enter__(), entered.set()))
        t.start()
        time.sleep(0.1)
        assert not entered.is_set()  # the second slot waits: the budget is 1 now
    t.join(5)
    assert entered.is_set()


def test_no_back_off_note() -> None:
    b = ContainerBudget(3, "default from 2 cores and 23 GB memory")
    b.started(0.5)
    assert b.record().note() == ("Sandbox containers: at most 3 at once (default from 2 cores and 23 GB memory); "
                                 "1 started; no back-off (starts stayed quick).")


def test_configure_keeps_the_budget_of_the_same_limit(monkeypatch) -> None:
    monkeypatch.setattr(sb_budget, "_budget", None)
    first = sb_budget.configure(3)
    assert sb_budget.configure(3) is first and sb_budget.budget() is first
    assert sb_budget.configure(2) is not first and sb_budget.budget().limit == 2
    assert sb_budget.ran() is None  # nothing started yet


def test_the_execute_slice_leaves_the_budget_out(tmp_path) -> None:
    from evalkit.config import Config
    from evalkit.stages.slices import execute_slice

    def cfg(extra: dict) -> Config:
        return Config.model_validate({"release": "r", "systems": [{"name": "gold", "adapter": "gold"}],
                                      "sandbox": {"backend": "local", **extra}})

    assert execute_slice(cfg({})) == execute_slice(cfg({"containers": 7}))
    with pytest.raises(ValueError, match="containers"):
        cfg({"containers": 0})


@pytest.mark.docker
def test_a_budget_of_one_never_runs_two_containers_at_once(docker_engine, spec_for, monkeypatch) -> None:
    from evalkit.sandbox import run_tests

    monkeypatch.setattr(sb_budget, "_budget", None)
    sb_budget.configure(1)
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda _: run_tests(spec_for(), "docker"), range(3)))
    assert all(r.resolved for r in results), [r.reason for r in results]
    rec = sb_budget.ran()
    assert rec is not None and rec.started == 3 and rec.peak == 1 and rec.limit == 1
    assert rec.source == "sandbox.containers"
