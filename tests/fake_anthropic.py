"""The loopback Anthropic server for tests, with pytest fixtures.

The server itself lives in ``tests/fake_server.py`` (a test double: it does not ship in the package);
pytest puts ``tests/`` on ``sys.path`` (``pythonpath`` in pyproject.toml) and benchmarks insert it
themselves. This module is the test-side entry point: the names and the pytest fixtures.

    def test_x(fake_anthropic, judge_env): ...
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fake_server import (
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
