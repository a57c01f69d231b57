"""The model client against the loopback server: retries, errors, cache, budget, estimate, key hygiene."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalkit.llm.calls import BudgetExceeded, LLMError, LLMRequest, system_blocks
from evalkit.llm.client import MAX_BACKOFF_S, Budget, ModelClient, estimate_tokens
from fake_server import FakeAnthropic, Reply, error, hang, ok, output_tokens_of
from evalkit.llm.pricing import ModelPrice, Usage, cost_usd, default_prices, price_for
from evalkit.llm.settings import DEFAULT_MODEL, JudgeSettings, configured


def request(text: str = "judge this", *, item_id: str | None = "item-1", system: str = "You are a judge.",
            model: str = "claude-sonnet-4-5", sample_index: int = 0) -> LLMRequest:
    return LLMRequest(
        model=model,
        system=system_blocks(system),
        messages=[{"role": "user", "content": text}],
        max_tokens=256,
        sample_index=sample_index,
        item_id=item_id,
    )


def test_good_call_returns_text_usage_and_cost(server: FakeAnthropic, make_client) -> None:
    server.push(ok("looks fine"))
    response = make_client().call(request("x" * 400))
    assert response.text == "looks fine"
    assert response.cached is False
    system_chars = len("You are a judge.")
    assert response.usage.input_tokens == (400 + system_chars) // 4
    assert response.usage.output_tokens == output_tokens_of("looks fine")
    expected = cost_usd(response.usage, default_prices()["claude-sonnet-4-5"])
    assert response.cost_usd == pytest.approx(expected)
    assert response.cost_usd > 0


def test_static_instructions_are_cache_marked_and_no_sampling_knobs_are_sent(server: FakeAnthropic,
                                                                             make_client) -> None:
    make_client().call(request())
    body = server.requests[-1]["body"]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert not {"temperature", "top_p", "top_k", "sample_index", "item_id"} & set(body)


def test_sampling_knobs_in_extra_are_refused() -> None:
    with pytest.raises(ValidationError, match="temperature"):
        LLMRequest(model="m", messages=[], max_tokens=1, extra={"temperature": 0})


def test_429_waits_what_retry_after_says_then_succeeds(server: FakeAnthropic, make_client, sleeps) -> None:
    server.push(error(429, retry_after=7), ok("second time lucky"))
    response = make_client().call(request())
    assert response.text == "second time lucky"
    assert server.counts["messages"] == 2
    assert sleeps == [7.0]


def test_retry_after_is_capped(server: FakeAnthropic, make_client, sleeps) -> None:
    server.push(error(529, retry_after=3600), ok("ok"))
    make_client().call(request())
    assert sleeps == [MAX_BACKOFF_S]


def test_server_error_is_retried_then_reported_as_server_error(server: FakeAnthropic, make_client,
                                                               sleeps) -> None:
    server.push(error(500), error(500), error(500))
    with pytest.raises(LLMError) as caught:
        make_client(max_retries=2, circuit_after=0).call(request())
    assert caught.value.kind == "server_error"
    assert caught.value.status == 500
    assert server.counts["messages"] == 3
    assert len(sleeps) == 2


def test_bad_request_is_not_retried(server: FakeAnthropic, make_client) -> None:
    server.push(error(400, message="messages: field required"))
    with pytest.raises(LLMError) as caught:
        make_client().call(request())
    assert caught.value.kind == "bad_request"
    assert "field required" in str(caught.value)
    assert server.counts["messages"] == 1


def test_a_request_that_never_answers_is_a_timeout(server: FakeAnthropic, make_client) -> None:
    server.push(hang())
    with pytest.raises(LLMError) as caught:
        make_client(timeout_s=0.2, max_retries=0).call(request())
    assert caught.value.kind == "timeout"


def test_the_key_never_reaches_an_exception_or_the_cache(server: FakeAnthropic, make_client, api_key: str,
                                                         tmp_path: Path) -> None:
    # A hostile or careless server echoes the key back in its error message.
    server.push(error(401, message=f"invalid x-api-key: {api_key}"))
    client = make_client()
    with pytest.raises(LLMError) as caught:
        client.call(request("first"))
    assert caught.value.kind == "auth"
    for text in (str(caught.value), repr(caught.value), repr(caught.value.args), repr(client)):
        assert api_key not in text
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    # It was sent (this SDK sends it as a bearer token), so the checks above mean something.
    assert any(api_key in value for value in server.requests[0]["headers"].values())

    client.call(request("second"))
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert len([p for p in files if p.suffix == ".json"]) == 2  # the answer and its miss-index entry
    assert {p.suffix for p in files} <= {".json", ".lock"}  # beside them, the claims' (empty) lock files
    assert all(api_key not in p.read_text() for p in files)


def test_a_second_run_of_the_same_requests_makes_no_calls(server: FakeAnthropic, make_client) -> None:
    make_client().call(request("a"))
    make_client().call(request("b"))
    assert server.counts["messages"] == 2
    again = make_client()  # a fresh client on the same cache: a new run
    answers = [again.call(request("a")), again.call(request("b"))]
    assert server.counts["messages"] == 2
    assert all(answer.cached for answer in answers)


def test_cache_can_be_bypassed(server: FakeAnthropic, make_client) -> None:
    make_client().call(request())
    response = make_client(use_cache=False).call(request())
    assert server.counts["messages"] == 2
    assert response.cached is False


def test_sample_index_makes_distinct_cache_keys(server: FakeAnthropic, make_client) -> None:
    client = make_client()
    keys = {client.call(request(sample_index=i)).request_key for i in range(3)}
    assert len(keys) == 3
    assert server.counts["messages"] == 3


def test_explain_miss_names_the_part_that_changed(server: FakeAnthropic, make_client) -> None:
    client = make_client()
    assert "no previous request" in client.explain_miss(request())
    client.call(request())
    assert client.explain_miss(request()) == "cached"
    assert client.explain_miss(request(system="You are a stricter judge.")) == "system prompt changed"
    assert client.explain_miss(request("another text")) == "messages changed"
    assert client.explain_miss(request(model="claude-haiku-4-5")) == "model changed"
    assert client.explain_miss(request("x", system="y")) == "system prompt changed; messages changed"


def test_identical_requests_in_flight_at_once_pay_once(server: FakeAnthropic, make_client) -> None:
    server.latency_s = 0.05
    client = make_client(concurrency=8)
    threads = [threading.Thread(target=client.call, args=(request(),)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert server.counts["messages"] == 1


def test_concurrency_limit_bounds_requests_in_flight(server: FakeAnthropic, make_client) -> None:
    lock, state = threading.Lock(), {"now": 0, "max": 0}
    release = threading.Event()

    def responder(body: dict) -> Reply:
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        release.wait(0.05)
        with lock:
            state["now"] -= 1
        return Reply(text="ok")

    server.responder = responder
    client = make_client(concurrency=2)
    threads = [threading.Thread(target=client.call, args=(request(f"r{i}"),)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert server.counts["messages"] == 6
    assert 1 <= state["max"] <= 2


def test_budget_stops_uncached_calls_but_serves_cached_ones(server: FakeAnthropic, make_client) -> None:
    client = make_client()
    first = client.call(request("a"))
    budget = Budget(limit_usd=first.cost_usd * 2)  # a new run: the first answer is cached and free
    run = make_client(budget=budget)
    assert run.call(request("a")).cached
    run.call(request("b"))
    run.call(request("c"))
    assert budget.spent_usd >= budget.limit_usd
    with pytest.raises(BudgetExceeded) as caught:
        run.call(request("d"))
    assert caught.value.kind == "budget"
    assert run.call(request("b")).cached  # still served after the budget is spent
    assert server.counts["messages"] == 3


def test_estimate_agrees_with_the_cost_actually_recorded(server: FakeAnthropic, make_client) -> None:
    answer = "a fixed answer of some length"
    server.responder = lambda body: Reply(text=answer)
    client = make_client()
    requests = [request("q" * (100 * i), item_id=f"i{i}") for i in range(1, 6)]
    client.call(requests[0])  # already paid: free in the estimate
    estimate = client.estimate(requests, output_tokens=output_tokens_of(answer))
    assert (estimate.calls, estimate.cached_calls, estimate.uncached_calls) == (5, 1, 4)
    assert not estimate.tokens_estimated
    actual = [client.call(r) for r in requests[1:]]
    assert estimate.input_tokens == sum(r.usage.input_tokens for r in actual)
    assert estimate.output_tokens == sum(r.usage.output_tokens for r in actual)
    assert estimate.cost_usd == pytest.approx(sum(r.cost_usd for r in actual))


def test_estimate_without_an_average_assumes_max_tokens(make_client) -> None:
    estimate = make_client().estimate([request()])
    assert estimate.output_tokens == 256
    assert estimate.output_basis == "max_tokens"


def test_count_tokens_falls_back_to_a_stated_estimate(api_key: str, tmp_path: Path) -> None:
    closed = FakeAnthropic()
    url = closed.base_url
    closed.close()  # nothing listens there any more
    client = ModelClient(JudgeSettings(base_url=url, max_retries=0, timeout_s=2), tmp_path, sleep=lambda s: None)
    r = request("z" * 70)
    count = client.count_tokens(r)
    assert count.estimated
    assert count.input_tokens == estimate_tokens(r)


def test_count_tokens_uses_the_endpoint(server: FakeAnthropic, make_client) -> None:
    count = make_client().count_tokens(request("w" * 40))
    assert not count.estimated
    assert count.input_tokens == (40 + len("You are a judge.")) // 4
    assert server.counts["count_tokens"] == 1


def test_client_needs_the_key_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert not configured()
    with pytest.raises(LLMError) as caught:
        ModelClient(JudgeSettings(base_url="http://127.0.0.1:9"), tmp_path)
    assert caught.value.kind == "auth"


def test_llm_errors_survive_pickling() -> None:
    error_ = pickle.loads(pickle.dumps(LLMError("rate_limited", "slow down", status=429)))
    assert (error_.kind, error_.message, error_.status) == ("rate_limited", "slow down", 429)
    budget = pickle.loads(pickle.dumps(BudgetExceeded("spent")))
    assert isinstance(budget, BudgetExceeded) and budget.kind == "budget"


def test_prices_match_dated_ids_by_prefix_and_price_cache_reads_and_batches() -> None:
    prices = default_prices()
    assert price_for("claude-haiku-4-5-20251001", prices) == prices["claude-haiku-4-5"]
    assert price_for("some-other-model", prices) == prices["default"]
    price = ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75)
    usage = Usage(input_tokens=1_000_000, cache_read_tokens=1_000_000)
    assert cost_usd(usage, price) == pytest.approx(3.3)
    assert cost_usd(usage, price, batch=True) == pytest.approx(1.65)


def test_model_override_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALKIT_JUDGE_MODEL", "claude-haiku-4-5")
    assert JudgeSettings().with_env().model == "claude-haiku-4-5"
    monkeypatch.delenv("EVALKIT_JUDGE_MODEL")
    assert JudgeSettings().with_env().model == DEFAULT_MODEL
