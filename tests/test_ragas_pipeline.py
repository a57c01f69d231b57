"""ragas' LLM-path metrics inside a real run: the demo rag cases, doit, a loopback Anthropic server.

The server answers ragas' prompts (fake_server.ragas_reply); every call goes through
evalkit's model client, so the response cache, the cost accounting and the report's judge notes
apply: a rerun after losing doit's state and every artifact makes zero calls.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fake_server import FakeAnthropic
from helpers import REPO, run

KEY = "sk-ant-test-ragas-NEVER-SHOW-ME-77"
METRICS = ("rag_faithfulness", "rag_context_relevance", "rag_answer_relevancy")
CASES = ("ejb-stateless-to-cdi", "javax-persistence-import", "jms-to-reactive-messaging")
SYSTEMS = ("hint-bot", "gold")


def rag_project(root: Path, base_url: str) -> Path:
    shutil.copytree(REPO / "cases" / "rag", root / "cases" / "rag")
    shutil.copytree(REPO / "templates", root / "templates")
    (root / "evalkit.yaml").write_text(
        "release: r1\nbaseline: hint-bot\ntemplates_dir: templates\nsystems:\n"
        "  - name: hint-bot\n    adapter: command\n"
        '    command: ["{python}", "-m", "evalkit.demo_systems.hint_bot"]\n'
        "  - name: gold\n    adapter: gold\n"
        f"judge:\n  model: claude-test-judge\n  base_url: {base_url}\n", encoding="utf-8")
    return root


def artifact(project: Path, system: str, case: str, stage: str) -> dict:
    return json.loads((project / f".evalkit/artifacts/{system}/rag/{case}/{stage}.json").read_text())


@pytest.fixture
def server():
    with FakeAnthropic() as s:  # the default responder answers ragas' prompts
        yield s


def test_ragas_metrics_through_the_client_scores_report_cache(tmp_path: Path, server: FakeAnthropic) -> None:
    project = rag_project(tmp_path / "p", server.base_url)
    env = {"ANTHROPIC_API_KEY": KEY}
    run(project, "--jobs", "2", env=env)
    calls = server.message_calls()
    # faithfulness 2 prompts, context relevance 2, answer relevancy 3; the context relevance prompts are
    # the same for both systems (the contexts are the case's), so the second system's come from the cache
    assert calls == len(CASES) * (2 * 5 + 2)
    assert all("temperature" not in r["body"] and "top_p" not in r["body"] for r in server.requests)
    judge_cost = 0.0
    for system in SYSTEMS:
        for case in CASES:
            grades = artifact(project, system, case, "grades")
            ragas = grades["extra"]["ragas"]
            assert ragas["status"] == "judged" and grades["judge"]["status"] == "judged"
            assert {m["status"] for m in ragas["metrics"].values()} == {"judged"}
            scores = artifact(project, system, case, "scores")
            for name in METRICS:
                value = scores["metrics"][name]
                assert 0.0 <= value <= 1.0
                assert scores["metrics"][f"{name}_5"] == pytest.approx(1 + 4 * value)
            assert scores["judge_status"] == "judged"
            assert grades["judge"]["cost_usd"] > 0
            assert scores["judge_usage"]["cost_usd"] == pytest.approx(grades["judge"]["cost_usd"])
            assert scores["judge_usage"]["input_tokens"] > 0
            assert scores["metrics"]["judge_cost_usd"] == pytest.approx(scores["judge_usage"]["cost_usd"])
            judge_cost += scores["judge_usage"]["cost_usd"]
    report = json.loads((project / "site/r1/report.json").read_text())
    suite = report["suites"][0]
    for system in SYSTEMS:
        aggs = suite["systems"][system]
        for name in METRICS:
            assert aggs[name]["n"] == len(CASES) and 0.0 <= aggs[name]["value"] <= 1.0
            assert 1.0 <= aggs[f"{name}_5"]["value"] <= 5.0
    assert sum(suite["systems"][s]["judge_cost_usd"]["value"] for s in SYSTEMS) == pytest.approx(judge_cost)
    assert not any("judge" in note.lower() for note in report["notes"])
    page = (project / "site/r1/cases/rag/javax-persistence-import.html").read_text()
    assert "Faithfulness" in page
    # lose doit's state and every artifact: the response cache answers every ragas prompt
    shutil.rmtree(project / ".evalkit" / "artifacts")
    (project / ".evalkit" / "doit.sqlite3").unlink()
    run(project, env=env)
    assert server.message_calls() == calls
    again = artifact(project, "hint-bot", "javax-persistence-import", "scores")
    assert again["metrics"]["rag_faithfulness"] is not None
    assert json.loads((project / "site/r1/report.json").read_text())["suites"][0]["systems"]["gold"][
        "judge_cost_usd"]["value"] == pytest.approx(suite["systems"]["gold"]["judge_cost_usd"]["value"])
    for path in list((project / ".evalkit").rglob("*")) + list((project / "site").rglob("*")):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_without_key_ragas_llm_metrics_not_configured(tmp_path: Path, server: FakeAnthropic) -> None:
    project = rag_project(tmp_path / "p", server.base_url)
    run(project, env={"ANTHROPIC_API_KEY": ""})
    assert server.message_calls() == 0
    grades = artifact(project, "hint-bot", "ejb-stateless-to-cdi", "grades")
    assert grades["judge"]["status"] == "not_configured"
    assert {m["status"] for m in grades["extra"]["ragas"]["metrics"].values()} == {"not_configured"}
    scores = artifact(project, "hint-bot", "ejb-stateless-to-cdi", "scores")
    assert not set(METRICS) & set(scores["metrics"]) and "rag_context_recall" in scores["metrics"]
    report = json.loads((project / "site/r1/report.json").read_text())
    assert any(f"not configured (ANTHROPIC_API_KEY is not set): {len(CASES) * len(SYSTEMS)} outputs" in n
               for n in report["notes"])
