"""The loopback Anthropic server for tests, with pytest fixtures.

The server itself lives in ``evalkit.llm.fake_server`` so that benchmarks and tests in any folder
can import it without path tricks (pytest runs with ``--import-mode=importlib``); this module is
the test-side entry point: import the names or the fixtures from here when ``tests`` is importable,
or from ``evalkit.llm.fake_server`` otherwise.

    def test_x(fake_anthropic, judge_env): ...
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalkit.llm.fake_server import (
    CHARS_PER_TOKEN,
    FakeAnthropic,
    Reply,
    error,
    hang,
    input_tokens_of,
    ok,
    output_tokens_of,
    ragas_reply,
    with_ragas,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "FakeAnthropic",
    "Reply",
    "error",
    "fake_anthropic",
    "hang",
    "input_tokens_of",
    "judge_env",
    "ok",
    "output_tokens_of",
    "ragas_reply",
    "with_ragas",
]

TEST_KEY = "sk-ant-test-0123456789-do-not-leak"


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A started loopback server, closed after the test."""
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fake API key in ANTHROPIC_API_KEY (and no model override); returns the key."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    monkeypatch.delenv("EVALKIT_JUDGE_MODEL", raising=False)
    return TEST_KEY
