"""Fixtures for the model-client tests: a loopback server, a fake key, a client that never sleeps."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from evalkit.llm.client import Budget, ModelClient
from fake_server import FakeAnthropic
from evalkit.llm.settings import JudgeSettings
from tests.fake_anthropic import fake_anthropic, judge_env  # noqa: F401 - fixtures


@pytest.fixture
def server(fake_anthropic: FakeAnthropic) -> FakeAnthropic:  # noqa: F811
    return fake_anthropic


@pytest.fixture
def api_key(judge_env: str) -> str:  # noqa: F811
    return judge_env


@pytest.fixture
def sleeps() -> list[float]:
    """Waits the client asked for (recorded, not slept)."""
    return []


@pytest.fixture
def make_client(server: FakeAnthropic, api_key: str, tmp_path, sleeps: list[float]) -> Callable[..., ModelClient]:
    def make(budget: Budget | None = None, **overrides: object) -> ModelClient:
        fields = {"base_url": server.base_url, "timeout_s": 5, "batch_poll_s": 1, **overrides}
        settings = JudgeSettings(**fields)
        return ModelClient(settings, tmp_path / "cache", budget=budget, sleep=sleeps.append)

    return make
