"""The anthropic adapter against the loopback server: prompt, fenced answer, usage and cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.cases import discover
from evalkit.config import AnthropicSystem
from fake_server import FakeAnthropic, Reply
from evalkit.llm.settings import JudgeSettings
from evalkit.systems.anthropic_adapter import run_anthropic
from evalkit.systems.base import RunContext
from helpers import make_project

JAVA = "package org.acme;\n\nimport jakarta.persistence.Entity;\n\n@Entity\npublic class Order {}\n"


def test_fenced_java_becomes_main_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_project(tmp_path / "p", cases=["jpa-entity"])
    case = next(c for c in discover(root / "cases").cases if c.id == "jpa-entity")
    seen: list[dict] = []

    def responder(body: dict) -> Reply:
        seen.append(body)
        return Reply(text=f"Here is the file:\n```java\n{JAVA}```\n")

    system = AnthropicSystem(name="plain", adapter="anthropic", model="claude-test-sut")
    with FakeAnthropic(responder=responder) as server:
        ctx = RunContext(root=root, work=tmp_path / "work", judge=JudgeSettings(base_url=server.base_url))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-adapter")
        sample = run_anthropic(system, case, 0, ctx)
        assert server.message_calls() == 1
    assert sample.status == "ok", sample.reason
    assert sample.files == {case.inputs.file_path: JAVA}
    assert sample.usage.input_tokens > 0 and sample.usage.output_tokens > 0 and sample.usage.cost_usd > 0
    assert seen[0]["model"] == "claude-test-sut"
    prompt = seen[0]["messages"][0]["content"]
    assert case.inputs.file_path in prompt and case.inputs.incidents[0].rule_id in prompt


def test_without_key_infra_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_project(tmp_path / "p", cases=["jpa-entity"])
    case = discover(root / "cases").cases[0]
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    system = AnthropicSystem(name="plain", adapter="anthropic", model="claude-test-sut")
    sample = run_anthropic(system, case, 0, RunContext(root=root, work=tmp_path / "w", judge=JudgeSettings()))
    assert sample.status == "infra_error" and sample.reason == "ANTHROPIC_API_KEY not set"
