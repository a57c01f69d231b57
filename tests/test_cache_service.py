"""The coordinator's cache service as cluster workers use it: claims, so identical work is done once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from evalkit.executors.blobs import BlobStore
from evalkit.executors.cache_service import CacheService
from evalkit.llm.calls import LLMRequest, system_blocks
from evalkit.llm.client import ModelClient
from evalkit.llm.settings import JudgeSettings
from evalkit.store import ContentStore, remote
from fake_server import FakeAnthropic


def service_for(work: Path) -> CacheService:
    return CacheService(work, BlobStore(work / "cache" / "blobs"))


def test_workers_claiming_the_same_key_take_turns_and_other_keys_do_not_wait(tmp_path: Path) -> None:
    work = tmp_path / "work"
    service = service_for(work)
    store = ContentStore(work / "cache", "sandbox")
    lock, state, order = threading.Lock(), {"now": 0, "max": 0}, []

    def hold(key: str, seconds: float) -> None:
        with store.claim(key):
            with lock:
                state["now"] += 1 if key == "k1" else 0
                state["max"] = max(state["max"], state["now"])
                order.append((key, time.monotonic()))
            time.sleep(seconds)
            with lock:
                state["now"] -= 1 if key == "k1" else 0

    try:
        with remote(service.ref, work):
            started = time.monotonic()
            threads = [threading.Thread(target=hold, args=("k1", 0.4)) for _ in range(3)]
            other = threading.Thread(target=hold, args=("k2", 0.0))
            for thread in threads:
                thread.start()
            time.sleep(0.1)
            other.start()
            for thread in [*threads, other]:
                thread.join()
    finally:
        service.close()
    assert state["max"] == 1  # never two holders of k1 at once
    assert time.monotonic() - started >= 1.2  # three turns of 0.4 s
    k2_at = next(at for key, at in order if key == "k2")
    k1_turns = sorted(at for key, at in order if key == "k1")
    assert k2_at < k1_turns[-1]  # k2 did not queue behind k1's holders (its turn came before k1's last one)
    assert (work / "cache" / "sandbox" / "k1"[:2] / "k1.lock").exists()  # the coordinator's own lock file


def test_a_dead_workers_claim_is_released_with_its_connection(tmp_path: Path) -> None:
    work = tmp_path / "work"
    service = service_for(work)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "from evalkit.executors.cache_service import ServiceRef\n"
         f"with ServiceRef({service.ref.url!r}, {service.ref.token!r}).claim('cache/llm/ab/abc.lock'):\n"
         "    print('held', flush=True)\n"
         "    time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        got: list[float] = []
        waiter = threading.Thread(target=lambda: (service.ref.claim("cache/llm/ab/abc.lock").__enter__(),
                                                  got.append(time.monotonic())), daemon=True)
        waiter.start()
        time.sleep(0.5)
        assert not got  # held by the other process
        killed = time.monotonic()
        os.kill(holder.pid, signal.SIGKILL)
        waiter.join(20)
        assert got and got[0] - killed < 10  # let go when the socket closed, not at some lease's end
    finally:
        holder.kill()
        holder.wait()
        service.close()


def test_a_claim_outside_the_cache_or_without_the_token_is_refused(tmp_path: Path) -> None:
    from evalkit.executors.cache_service import ServiceRef, ServiceUnreachable

    work = tmp_path / "work"
    service = service_for(work)
    try:
        for ref, rel in [(service.ref, "../outside.lock"), (service.ref, "cache/llm/ab/abc.json"),
                         (ServiceRef(service.ref.url, "wrong"), "cache/llm/ab/abc.lock")]:
            try:
                with ref.claim(rel):
                    raise AssertionError(f"claim of {rel} was granted")
            except ServiceUnreachable as exc:
                assert "40" in str(exc)
    finally:
        service.close()
    assert not (tmp_path / "outside.lock").exists()


def test_two_workers_sending_the_same_judge_request_at_once_pay_once(tmp_path: Path, monkeypatch) -> None:
    """Two clients (two workers: each its own in-process lock) reach the store through the cache service."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-claim")
    work = tmp_path / "work"
    service = service_for(work)
    request = LLMRequest(model="claude-sonnet-4-5", system=system_blocks("You are a judge."),
                         messages=[{"role": "user", "content": "judge this"}], max_tokens=64, item_id="i")
    answers: list[str] = []
    try:
        with FakeAnthropic(latency_s=0.3) as server, remote(service.ref, work):
            clients = [ModelClient(JudgeSettings(base_url=server.base_url, timeout_s=10), work / "cache")
                       for _ in range(2)]
            threads = [threading.Thread(target=lambda c=c: answers.append(c.call(request).text)) for c in clients]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            paid = server.counts["messages"]
    finally:
        service.close()
    assert len(answers) == 2 and answers[0] == answers[1]
    assert paid == 1
