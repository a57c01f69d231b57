"""Providers under the one client: the OpenAI-compatible provider against a loopback Chat Completions
server (mapping, usage, prices, cache scope, retries, malformed bodies), keys in rotation with a refused
key dropped, per-endpoint rate limits across threads and clients, and the fallback model."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evalkit.llm.cache import ResponseCache
from evalkit.llm.calls import LLMError, LLMRequest, system_blocks
from evalkit.llm.client import ModelClient
from fake_server import FakeAnthropic, Reply, error
from evalkit.llm.pricing import ModelPrice
from evalkit.llm.providers import cache_scope, provider_names
from evalkit.llm.settings import FallbackSettings, JudgeSettings, RateLimit
from fake_openai import FakeOpenAI, windows

KEY = "sk-openai-test-NEVER-SHOW-0001"


@pytest.fixture
def openai_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_KEYS", raising=False)
    monkeypatch.delenv("EVALKIT_JUDGE_MODEL", raising=False)
    return KEY


def request(text: str, **kw: object) -> LLMRequest:
    return LLMRequest(model="gpt-test", system=system_blocks("You are terse.", "Second block."),
                      messages=[{"role": "user", "content": text}], max_tokens=50, **kw)


def openai_client(server: FakeOpenAI, root: Path, sleeps: list[float] | None = None, **over: object) -> ModelClient:
    fields = {"provider": "openai", "model": "gpt-test", "base_url": server.base_url, "timeout_s": 5, **over}
    return ModelClient(JudgeSettings(**fields), root / "cache", sleep=(sleeps if sleeps is not None else []).append)


def test_registry_names_both_providers() -> None:
    assert {"anthropic", "openai"} <= set(provider_names())
    with pytest.raises(ValueError, match="unknown provider 'nope'"):
        JudgeSettings(provider="nope")
    with pytest.raises(ValueError, match="batch needs provider anthropic"):
        JudgeSettings(provider="openai", mode="batch")


def test_chat_completions_mapping_usage_price_and_cache(tmp_path: Path, openai_env: str) -> None:
    prices = {"gpt-test": ModelPrice(input=2.0, output=8.0, cache_read=0.5, cache_write=0.0),
              "default": ModelPrice(input=100.0, output=100.0, cache_read=100.0, cache_write=100.0)}
    with FakeOpenAI(cached_tokens=3, responder=lambda body: Reply(text="the answer", stop_reason="max_tokens")) as server:
        client = openai_client(server, tmp_path, prices=prices)
        answer = client.call(request("question one", extra={"stop_sequences": ["###"], "metadata": {"u": "x"}}))
        sent = server.requests[0]
        assert sent["path"] == "/v1/chat/completions" and sent["key"] == KEY
        assert sent["body"]["messages"] == [{"role": "system", "content": "You are terse.\n\nSecond block."},
                                            {"role": "user", "content": "question one"}]
        assert sent["body"]["max_tokens"] == 50 and sent["body"]["stop"] == ["###"] and "metadata" not in sent["body"]
        prompt = len("You are terse.\n\nSecond block.question one") // 4
        assert answer.text == "the answer" and answer.model == "gpt-test" and answer.stop_reason == "max_tokens"
        assert (answer.usage.input_tokens, answer.usage.cache_read_tokens) == (prompt - 3, 3)
        assert answer.usage.output_tokens == len("the answer") // 4
        expected = ((prompt - 3) * 2.0 + 3 * 0.5 + answer.usage.output_tokens * 8.0) / 1e6
        assert answer.cost_usd == pytest.approx(expected)
        # a new client on the same cache (a new run): answered from the cache, nothing sent
        again = openai_client(server, tmp_path).call(request("question one", extra={"stop_sequences": ["###"],
                                                                                     "metadata": {"u": "x"}}))
        assert again.cached and again.text == "the answer" and server.calls == 1
    stored = [p.read_text() for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert stored and all(KEY not in text for text in stored)


def test_cache_key_names_provider_and_base_url(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    req = request("same")
    anthropic = cache.key(req, cache_scope(JudgeSettings()))
    assert anthropic == cache.key(req)  # anthropic keys are as they always were
    one = cache.key(req, cache_scope(JudgeSettings(provider="openai", base_url="http://127.0.0.1:1/v1")))
    two = cache.key(req, cache_scope(JudgeSettings(provider="openai", base_url="http://127.0.0.1:2/v1/")))
    default = cache.key(req, cache_scope(JudgeSettings(provider="openai")))
    assert len({anthropic, one, two, default}) == 4


def test_429_and_5xx_retried_malformed_body_is_bad_response(tmp_path: Path, openai_env: str) -> None:
    sleeps: list[float] = []
    with FakeOpenAI() as server:
        server.push(error(429, retry_after=7), Reply(status=503), Reply(raw=b"<html>gateway</html>", content_type="text/html"),
                    Reply(raw=b'{"choices": []}'), Reply(text="finally"))
        client = openai_client(server, tmp_path, sleeps, circuit_after=0)
        assert client.call(request("q")).text == "finally"
        assert server.calls == 5 and sleeps[0] == 7.0 and len(sleeps) == 4
        server.push(*[Reply(raw=b"not json")] * 3)
        with pytest.raises(LLMError) as caught:
            openai_client(server, tmp_path, max_retries=2, circuit_after=0).call(request("q2"))
        assert caught.value.kind == "bad_response" and "not valid JSON" in caught.value.message
        server.push(Reply(status=400, error_message="bad model"))
        with pytest.raises(LLMError) as caught:
            client.call(request("q3"))
        assert caught.value.kind == "bad_request" and caught.value.status == 400 and "bad model" in str(caught.value)


def test_timeout_is_retried_then_reported(tmp_path: Path, openai_env: str) -> None:
    with FakeOpenAI(latency_s=1.0) as server:
        with pytest.raises(LLMError) as caught:
            openai_client(server, tmp_path, timeout_s=0.2, max_retries=1, circuit_after=0).call(request("slow"))
        assert caught.value.kind == "timeout"
        assert server.calls == 2


def test_openai_keys_rotate_and_a_refused_key_is_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capfd: pytest.CaptureFixture[str]) -> None:
    keys = ["sk-rot-AAAA-1111", "sk-rot-BBBB-2222", "sk-rot-CCCC-3333"]
    monkeypatch.setenv("OPENAI_API_KEYS", " , ".join(keys))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-single-ignored-when-the-list-is-set")
    with FakeOpenAI() as server:
        server.refused_keys.add(keys[1])
        client = openai_client(server, tmp_path)
        for i in range(6):
            client.call(request(f"q{i}"))
        used = server.keys_used()
        assert used[:3] == keys  # round-robin; the second key's 401 ...
        assert used.count(keys[1]) == 1  # ... dropped it for the run
        assert used[3:] == [keys[0], keys[2], keys[0], keys[2]][: len(used) - 3]
        assert len(used) == 7  # six answers, one refusal
    err = capfd.readouterr().err
    assert "openai API key 2 of 3 (from OPENAI_API_KEYS) was refused (HTTP 401)" in err
    for key in keys:
        assert key not in err
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert not any(key in path.read_text() for key in keys)


def test_anthropic_keys_rotate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = ["sk-ant-rot-1", "sk-ant-rot-2"]
    monkeypatch.setenv("ANTHROPIC_API_KEYS", ",".join(keys))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with FakeAnthropic() as server:
        client = ModelClient(JudgeSettings(base_url=server.base_url), tmp_path / "cache")
        ask = lambda i: client.call(LLMRequest(model="claude-x", messages=[{"role": "user", "content": f"m{i}"}],
                                               max_tokens=5))
        for i in range(4):
            ask(i)
        server.push(error(403, message="key revoked"))  # the first key's next turn is refused ...
        for i in range(4, 7):
            ask(i)  # ... and the second answers that call and every later one
        sent = [r["headers"].get("x-api-key") or r["headers"].get("authorization", "").removeprefix("Bearer ")
                for r in server.requests if r["endpoint"] == "messages"]
    assert sent == keys * 2 + [keys[0]] + [keys[1]] * 3


def test_rate_limit_shared_by_threads_and_clients(tmp_path: Path, openai_env: str) -> None:
    limit = RateLimit(rpm=3, window_s=1.0)
    with FakeOpenAI() as server:
        judge = openai_client(server, tmp_path, rate_limits={"openai": limit}, concurrency=4)
        system = openai_client(server, tmp_path, rate_limits={"openai": limit}, concurrency=4, model="other")
        assert judge.limiter is system.limiter is not None
        clients = [judge, system]
        with ThreadPoolExecutor(max_workers=6) as pool:
            list(pool.map(lambda i: clients[i % 2].call(request(f"r{i}")), range(10)))
        times = [r["at"] for r in server.requests]
    assert len(times) == 10
    assert windows(times, 1.0) <= 3
    # the same burst with no limit: the server sees more than 3 at once (so the check above can fail)
    with FakeOpenAI() as free:
        c = openai_client(free, tmp_path / "free", concurrency=6)
        with ThreadPoolExecutor(max_workers=6) as pool:
            list(pool.map(lambda i: c.call(request(f"f{i}")), range(10)))
        assert windows([r["at"] for r in free.requests], 1.0) > 3


def test_token_limit_counts_reported_usage(tmp_path: Path, openai_env: str) -> None:
    text = "x" * 200  # about 50 prompt tokens + a few output tokens per call
    with FakeOpenAI() as server:
        client = openai_client(server, tmp_path, rate_limits={"openai": RateLimit(tpm=130, window_s=1.0)})
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(pool.map(lambda i: client.call(request(f"{i}{text}")), range(6)))
        spent = {r["at"]: answers[0].usage.input_tokens + answers[0].usage.output_tokens for r in server.requests}
    per_call = next(iter(spent.values()))
    assert 50 <= per_call <= 70
    times = [r["at"] for r in server.requests]
    assert windows(times, 1.0) * per_call <= 130 + per_call  # a reservation is corrected once usage is known
    assert windows(times, 1.0) <= 2


def test_fallback_answers_when_the_primary_keeps_failing(tmp_path: Path, openai_env: str,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-primary")
    with FakeAnthropic(responder=lambda body: Reply(status=500)) as primary, \
            FakeOpenAI(model="gpt-fallback-2026") as fallback:
        settings = JudgeSettings(base_url=primary.base_url, model="claude-primary", max_retries=1, circuit_after=2,
                                 fallback=FallbackSettings(provider="openai", model="gpt-fallback",
                                                           base_url=fallback.base_url))
        client = ModelClient(settings, tmp_path / "cache", sleep=lambda s: None)
        first = client.call(LLMRequest(model="claude-primary", messages=[{"role": "user", "content": "a"}],
                                       max_tokens=9))
        assert first.fallback and first.model == "gpt-fallback-2026"
        assert fallback.requests[0]["body"]["model"] == "gpt-fallback"
        assert primary.counts["messages"] == 2  # retries spent, then the circuit opened
        second = client.call(LLMRequest(model="claude-primary", messages=[{"role": "user", "content": "b"}],
                                        max_tokens=9))
        assert second.fallback and primary.counts["messages"] == 2  # circuit open: straight to the fallback
        assert client.fallback_calls == 2 and fallback.calls == 2
    assert "asking the fallback openai model gpt-fallback" in capfd.readouterr().err


def test_no_fallback_on_a_bad_request(tmp_path: Path, openai_env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-primary")
    with FakeAnthropic(responder=lambda body: error(400)) as primary, FakeOpenAI() as fallback:
        settings = JudgeSettings(base_url=primary.base_url, fallback=FallbackSettings(
            provider="openai", model="gpt-fallback", base_url=fallback.base_url))
        with pytest.raises(LLMError) as caught:
            ModelClient(settings, tmp_path / "cache").call(
                LLMRequest(model="m", messages=[{"role": "user", "content": "a"}], max_tokens=9))
        assert caught.value.kind == "bad_request" and fallback.calls == 0


def test_threads_share_one_client_safely(tmp_path: Path, openai_env: str) -> None:
    with FakeOpenAI() as server:
        client = openai_client(server, tmp_path, concurrency=3)
        barrier = threading.Barrier(4)

        def go(i: int) -> str:
            barrier.wait()
            return client.call(request("same question")).text

        with ThreadPoolExecutor(max_workers=4) as pool:
            assert list(pool.map(go, range(4))) == ["ok"] * 4
        assert server.calls == 1  # identical requests in flight pay once


def test_not_configured_names_the_key_of_the_judges_provider(monkeypatch) -> None:
    """Without a key, the judge, the rubric grader and the report note name the provider's own variable."""
    from evalkit.graders.migration_judge import MigrationJudgeInput, judge_migration
    from evalkit.kinds.generation.judge import Criterion, GeneratedFile, RubricInput, grade_rubric
    from evalkit.llm.settings import JudgeSettings, configured
    from evalkit.report.run_notes import judge_notes

    for name in ("OPENAI_API_KEY", "OPENAI_API_KEYS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-set")  # another provider's key does not count
    settings = JudgeSettings(provider="openai", model="gpt-4o")
    assert not configured(settings) and configured(JudgeSettings())
    item = MigrationJudgeInput(item_id="s/c", source_technology="Java EE", target_technology="Quarkus",
                               language="java", legacy_code="class A { int x; }\n",
                               generated_code="class A { long x; }\n")
    assert judge_migration(item, None, settings).error == "OPENAI_API_KEY is not set"
    rubric = RubricInput(item_id="s/c", files=[GeneratedFile(path="a.ts", content="export const a = 1;\n")],
                         criteria=[Criterion(id="c1", text="exports a")])
    assert grade_rubric(rubric, None, settings).error == "OPENAI_API_KEY is not set"

    class Scored:
        judge_status = "not_configured"
        judge_notices: list[str] = []

    assert any("OPENAI_API_KEY is not set" in n for n in judge_notes([Scored()], settings))
