"""Transport faults at the client: the endpoint's circuit, malformed bodies, deprecation notices.

Real HTTP against 127.0.0.1: the loopback Messages server, or a port with nothing listening.
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import pytest

from evalkit.llm import circuit, deprecation
from evalkit.llm.calls import LLMError, LLMRequest, system_blocks
from evalkit.llm.client import ModelClient
from fake_server import FakeAnthropic, Reply, error, hang, ok
from helpers import refused_port
from evalkit.llm.settings import DEFAULT_MODEL, JudgeSettings


def request(text: str = "judge this") -> LLMRequest:
    return LLMRequest(model="claude-test-judge", system=system_blocks("You are a judge."),
                      messages=[{"role": "user", "content": text}], max_tokens=64, item_id=text)


def dead_url() -> str:
    return f"http://127.0.0.1:{refused_port()}"


def test_consecutive_connection_failures_open_the_circuit_and_later_calls_fail_at_once(
        api_key: str, tmp_path: Path, sleeps: list[float], capsys: pytest.CaptureFixture[str]) -> None:
    settings = JudgeSettings(base_url=dead_url(), timeout_s=2, max_retries=4, circuit_after=3)
    client = ModelClient(settings, tmp_path / "cache", sleep=sleeps.append)
    with pytest.raises(LLMError) as first:
        client.call(request("a"))
    assert first.value.kind == "circuit_open"
    assert str(first.value).startswith("circuit_open: circuit open after 3 consecutive failures: connection")
    assert len(sleeps) == 2  # three attempts, not the five that max_retries allows
    for text in ("b", "c", "d"):
        with pytest.raises(LLMError) as later:
            client.call(request(text))
        assert later.value.kind == "circuit_open" and not later.value.retryable
    assert len(sleeps) == 2  # no attempt, no wait
    # another client of the same endpoint in the same run shares the circuit
    other = ModelClient(settings, tmp_path / "cache2", sleep=sleeps.append)
    with pytest.raises(LLMError, match="circuit open"):
        other.call(request("e"))
    err = capsys.readouterr().err
    assert err.count("circuit open after 3 consecutive failures") == 1 and "Traceback" not in err


def test_an_answer_closes_the_circuit_and_rate_limits_do_not_count(server: FakeAnthropic, make_client,
                                                                    sleeps: list[float]) -> None:
    client = make_client(max_retries=2, circuit_after=3)
    server.push(error(500), error(502), ok("a"))  # two failures, then an answer ...
    assert client.call(request("a")).text == "a"
    server.push(error(503), error(500), ok("b"))  # ... closed it: two more do not open it
    assert client.call(request("b")).text == "b"
    server.push(error(500), error(500), error(429))  # busy, not broken: a rate limit is an answer
    with pytest.raises(LLMError) as limited:
        client.call(request("c"))
    assert limited.value.kind == "rate_limited"
    server.push(error(529), error(500), ok("d"))  # overloaded neither counts
    assert client.call(request("d")).text == "d"
    server.push(error(500), error(500), error(500), ok("never asked"))
    with pytest.raises(LLMError) as opened:
        client.call(request("e"))
    assert opened.value.kind == "circuit_open"
    assert "after 3 consecutive failures: server_error (HTTP 500)" in opened.value.message
    with pytest.raises(LLMError, match="circuit open"):
        client.call(request("f"))
    assert server.counts["messages"] == 5 * 3


def test_circuit_after_zero_never_gives_up(server: FakeAnthropic, make_client) -> None:
    client = make_client(max_retries=0, circuit_after=0)
    for n in range(5):
        server.push(error(500))
        with pytest.raises(LLMError) as caught:
            client.call(request(str(n)))
        assert caught.value.kind == "server_error"
    server.push(ok("back"))
    assert client.call(request("ok")).text == "back"


def test_hanging_endpoint_with_threads_makes_a_bounded_number_of_attempts(server: FakeAnthropic,
                                                                          make_client) -> None:
    server.responder = lambda body: hang()
    after, threads, retries = 3, 6, 4
    client = make_client(timeout_s=0.5, max_retries=retries, circuit_after=after, concurrency=threads)
    kinds: list[str] = []
    lock = threading.Lock()

    def one(n: int) -> None:
        try:
            client.call(request(f"item {n}"))
        except LLMError as exc:
            with lock:
                kinds.append(exc.kind)

    workers = [threading.Thread(target=one, args=(n,)) for n in range(threads * 3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert len(kinds) == threads * 3 and set(kinds) <= {"circuit_open", "timeout"}
    assert kinds.count("circuit_open") >= threads * 3 - threads
    # at most `after` failures open it, plus the attempts already in flight at that moment
    assert server.counts["messages"] <= after + threads - 1 < threads * 3 * (retries + 1)


@pytest.mark.parametrize("reply, says", [
    (Reply(raw=b'{"id": "msg_1", "type": "mess'), "not valid JSON"),
    (Reply(raw=b"", content_type="application/json"), "not valid JSON"),
    (Reply(raw=b"<html><body>Bad gateway</body></html>", content_type="text/html"), "HTTP 200 with a body that is not a message"),
    (Reply(raw=b'{"id": "msg_1", "type": "message", "role": "assistant"}'), "a message without content"),
    (Reply(truncate=True), "cannot reach the API"),
])
def test_a_malformed_body_is_a_retried_api_fault_with_its_reason(server: FakeAnthropic, make_client, sleeps,
                                                                 reply: Reply, says: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    client = make_client(max_retries=1, circuit_after=0)
    server.push(reply, reply)
    with pytest.raises(LLMError) as caught:
        client.call(request())
    assert caught.value.kind in ("bad_response", "connection") and caught.value.retryable
    assert says in caught.value.message
    assert server.counts["messages"] == 2  # retried once, like a server error
    assert "Traceback" not in capsys.readouterr().err
    server.push(ok("healthy again"))
    assert client.call(request()).text == "healthy again"  # nothing malformed was cached


def test_deprecation_header_is_kept_with_the_answer_and_printed_once(server: FakeAnthropic, make_client,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    sunset = {"deprecation": "@1798675200", "sunset": "Wed, 30 Dec 2026 00:00:00 GMT"}
    server.push(Reply(text="a", headers=sunset), Reply(text="b", headers=sunset))
    client = make_client()
    first = client.call(request("one"))
    client.call(request("two"))
    assert any("deprecation: @1798675200" in n for n in first.notices)
    assert any("sunset: Wed, 30 Dec 2026" in n for n in first.notices)
    again = make_client().call(request("one"))  # from the cache: the notice stays with the answer
    assert again.cached and again.notices == first.notices
    err = capsys.readouterr().err
    assert err.count("deprecation notice: model claude-test-judge: the API says sunset") == 1


def test_a_model_the_sdk_lists_as_deprecated_gets_a_notice(server: FakeAnthropic, make_client) -> None:
    table = deprecation.sdk_table()
    assert table, "the anthropic SDK no longer ships its table of deprecated models"
    model = sorted(table)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        response = make_client().call(request().model_copy(update={"model": model}))
    assert any(f"model {model} is deprecated" in n and table[model] in n for n in response.notices)


def test_the_default_judge_model_is_current_and_priced() -> None:
    from evalkit.llm.pricing import default_prices

    assert DEFAULT_MODEL not in deprecation.sdk_table()
    assert DEFAULT_MODEL in default_prices()
    assert JudgeSettings().model == DEFAULT_MODEL


@pytest.fixture(autouse=True)
def _fresh_circuits() -> None:
    circuit.reset()
