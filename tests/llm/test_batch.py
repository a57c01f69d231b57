"""Batch mode: one Message Batch for the uncached requests, half price, resumable by persisted id."""

from __future__ import annotations

import json

import pytest

from evalkit.llm.batch import open_batches, run_batch
from evalkit.llm.calls import LLMError, LLMRequest, LLMResponse, system_blocks
from fake_server import FakeAnthropic, Reply, error, ok
from evalkit.llm.pricing import cost_usd, default_prices, price_for


def requests(n: int) -> list[LLMRequest]:
    return [
        LLMRequest(model="claude-haiku-4-5", system=system_blocks("Judge."), max_tokens=64, item_id=f"i{i}",
                   messages=[{"role": "user", "content": f"item number {i} " * 10}])
        for i in range(n)
    ]


class Interrupted(Exception):
    """Stands in for a run killed while the batch is processing."""


def test_batch_completes_after_two_polls_at_half_price(server: FakeAnthropic, make_client, sleeps) -> None:
    server.responder = lambda body: Reply(text="verdict")
    client = make_client(mode="batch", batch_poll_s=3)
    answers = run_batch(client, requests(3))
    assert server.counts["batch_create"] == 1
    assert server.counts["messages"] == 0
    assert server.counts["batch_results"] == 1
    assert sleeps == [3]  # polled once in progress, waited, polled again: ended
    assert all(isinstance(a, LLMResponse) and a.batch and a.text == "verdict" for a in answers)
    price = price_for("claude-haiku-4-5", default_prices())
    for answer in answers:
        assert answer.usage.input_tokens > 0
        assert answer.cost_usd == pytest.approx(cost_usd(answer.usage, price) / 2)
    assert open_batches(client) == []


def test_a_second_run_sends_no_batch(server: FakeAnthropic, make_client) -> None:
    run_batch(make_client(mode="batch"), requests(3))
    again = run_batch(make_client(mode="batch"), requests(3))
    assert server.counts["batch_create"] == 1
    assert all(isinstance(a, LLMResponse) and a.cached for a in again)


def test_only_uncached_requests_go_into_the_batch(server: FakeAnthropic, make_client) -> None:
    client = make_client(mode="batch")
    client.call(requests(3)[0])
    run_batch(client, requests(3))
    created = next(r for r in server.requests if r["endpoint"] == "batch_create")
    assert len(created["body"]["requests"]) == 2


def test_an_interrupted_batch_is_resumed_not_paid_again(server: FakeAnthropic, make_client, tmp_path) -> None:
    client = make_client(mode="batch")

    def killed(seconds: float) -> None:
        raise Interrupted

    client.sleep = killed
    with pytest.raises(Interrupted):
        run_batch(client, requests(2))
    assert server.counts["batch_create"] == 1
    state_files = list((tmp_path / "cache" / "llm-batches").glob("*.json"))
    assert len(state_files) == 1
    state = json.loads(state_files[0].read_text())
    assert state["status"] == "open" and len(state["custom_ids"]) == 2

    answers = run_batch(make_client(mode="batch"), requests(2))  # the next run
    assert server.counts["batch_create"] == 1
    assert all(isinstance(a, LLMResponse) for a in answers)
    assert json.loads(state_files[0].read_text())["status"] == "ended"


def test_a_failed_batch_item_is_an_infrastructure_error_in_its_place(server: FakeAnthropic, make_client) -> None:
    server.push(ok("fine"), error(529), ok("fine too"))
    answers = run_batch(make_client(mode="batch"), requests(3))
    kinds = [a.kind if isinstance(a, LLMError) else "ok" for a in answers]
    assert kinds == ["ok", "server_error", "ok"]
    assert "overloaded_error" in str(answers[1])
