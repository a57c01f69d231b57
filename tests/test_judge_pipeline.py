"""The judge inside a real run: a loopback Anthropic server, the demo migration cases, doit.

The server counts requests: a rerun after losing doit's state makes zero calls; the key never
reaches an artifact or a page; `evalkit estimate` agrees with what the run then records.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fake_server import FakeAnthropic, Reply
from helpers import evalkit, evalkit_here, make_project, run

KEY = "sk-ant-test-NEVER-SHOW-ME-4242"


def verdict(body: dict) -> Reply:
    """A judge that finds leftover javax imports less faithful to the rule."""
    prompt = "".join(block["text"] for m in body["messages"] for block in
                     (m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}]))
    generated = prompt.split(": generated file>>>", 1)[1]
    rule = 2 if "import javax." in generated or "@Stateless" in generated else 5
    answer = {"semantic_equivalence_score": 5, "rule_adherence_score": rule, "faithfulness_score": 4,
              "code_quality_score": "4", "is_compilable": True, "detailed_notes": "checked imports"}
    return Reply(text="Step 1: equivalent.\n```json\n" + json.dumps(answer) + "\n```")


@pytest.fixture
def server():
    with FakeAnthropic(responder=verdict) as s:
        yield s


def project_with_judge(tmp_path: Path, base_url: str, extra: str = "") -> Path:
    return make_project(tmp_path / "p", cases=["jpa-entity", "ejb-stateless"],
                        extra=f"judge:\n  model: claude-test-judge\n  base_url: {base_url}\n{extra}")


def test_judge_columns_zero_calls_on_rerun_and_no_key_leak(tmp_path: Path, server: FakeAnthropic) -> None:
    project = project_with_judge(tmp_path, server.base_url)
    env = {"ANTHROPIC_API_KEY": KEY}
    run(project, "--jobs", "2", env=env)
    calls = server.message_calls()
    distinct = {(p.parent.name, json.dumps(json.loads(p.read_text())["samples"][0]["files"], sort_keys=True))
                for p in (project / ".evalkit/artifacts").rglob("output.json")}
    assert calls == len(distinct) >= 3  # identical (case, answer) pairs share one cached verdict
    report = json.loads((project / "site/r1/report.json").read_text())
    suite = report["suites"][0]
    for system in ("naive", "rules", "gold"):
        agg = suite["systems"][system]["judge_mean"]
        assert agg["n"] == 2 and agg["value"] is not None
    assert suite["systems"]["gold"]["judge_rule_adherence"]["value"] == 5.0
    # lose doit's state and every artifact: the response cache still answers
    shutil.rmtree(project / ".evalkit" / "artifacts")
    (project / ".evalkit" / "doit.sqlite3").unlink()
    run(project, env=env)
    assert server.message_calls() == calls
    for path in list((project / ".evalkit").rglob("*")) + list((project / "site").rglob("*")):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_without_key_judge_not_configured(tmp_path: Path, server: FakeAnthropic) -> None:
    project = project_with_judge(tmp_path, server.base_url)
    run(project, env={"ANTHROPIC_API_KEY": ""})
    assert server.message_calls() == 0
    grades = json.loads((project / ".evalkit/artifacts/rules/migration/jpa-entity/grades.json").read_text())
    assert grades["judge"]["status"] == "not_configured"
    report = json.loads((project / "site/r1/report.json").read_text())
    assert "judge_mean" not in report["suites"][0]["systems"]["rules"]
    assert any("judge not configured" in n for n in report["notes"])
    assert "judge not configured" in (project / "site/r1/index.html").read_text()
    assert (project / "site/r1/index.html").exists()


def test_budget_stops_calls(tmp_path: Path, server: FakeAnthropic) -> None:
    project = project_with_judge(tmp_path, server.base_url, extra="  budget_usd: 0.000001\n  concurrency: 1\n")
    run(project, env={"ANTHROPIC_API_KEY": KEY})
    assert server.message_calls() == 1  # the first call spends past the budget; no further call
    statuses = [json.loads(p.read_text())["judge"]["status"]
                for p in (project / ".evalkit/artifacts").rglob("grades.json")]
    assert statuses.count("judged") >= 1 and statuses.count("not_judged_budget") >= 2


def test_estimate_agrees_with_recorded_cost(tmp_path: Path, server: FakeAnthropic) -> None:
    project = project_with_judge(tmp_path, server.base_url)
    env = {"ANTHROPIC_API_KEY": KEY}
    evalkit(project, "run", "generate", env=env)
    est = json.loads(evalkit_here(project, "estimate", env=env).stdout.strip().splitlines()[-1])
    assert est["uncached_calls"] >= 3
    run(project, env=env)
    judged = {}
    for p in (project / ".evalkit/artifacts").rglob("grades.json"):
        judge = json.loads(p.read_text())["judge"]
        judged[tuple(judge["request_keys"])] = judge["usage"]["input_tokens"]
    assert len(judged) == est["uncached_calls"] == server.message_calls()
    # the count-tokens endpoint and the messages endpoint agree, so estimated = recorded input tokens
    assert est["input_tokens"] == sum(judged.values()) > 0
    est_after = json.loads(evalkit_here(project, "estimate", env=env).stdout.strip().splitlines()[-1])
    assert est_after["uncached_calls"] == 0 and est_after["cost_usd"] == 0
