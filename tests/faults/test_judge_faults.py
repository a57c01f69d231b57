"""The judge's API misbehaving inside a real run: each fault is recorded with its reason (never a
silent score, never a traceback or an "internal error"), and a later run against a healthy server
fills in every verdict.

Real `python -m evalkit run` subprocesses; the judge points at a loopback Messages API.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fake_server import FakeAnthropic, Reply, error
from helpers import evalkit, make_project

KEY = "sk-ant-test-faults-0000"
ENV = {"ANTHROPIC_API_KEY": KEY}
VERDICT = {"semantic_equivalence_score": 4, "rule_adherence_score": 5, "faithfulness_score": 4,
           "code_quality_score": 4, "is_compilable": True, "detailed_notes": "fine"}
VERDICT_TEXT = "Step 1: equivalent.\n```json\n" + json.dumps(VERDICT) + "\n```"


def healthy(body: dict[str, Any]) -> Reply:
    return Reply(text=VERDICT_TEXT)


# fault -> (responder, words the recorded reason must contain, judge status it must get)
FAULTS: dict[str, tuple[Callable[[dict[str, Any]], Reply], str, str]] = {
    "http_500": (lambda body: error(500, message="upstream exploded"), "HTTP 500", "infra_error"),
    "429_without_retry_after": (lambda body: error(429), "rate_limited (HTTP 429)", "infra_error"),
    "too_slow": (lambda body: Reply(text=VERDICT_TEXT, delay_s=4), "no answer within 1 s", "infra_error"),
    "malformed_json": (lambda body: Reply(raw=b'{"type": "message", "content": [{"ty'), "not valid JSON",
                       "infra_error"),
    "html_page": (lambda body: Reply(raw=b"<html><h1>502 Bad Gateway</h1></html>", content_type="text/html"),
                  "HTTP 200 with a body that is not a message", "infra_error"),
    "truncated_body": (lambda body: Reply(text=VERDICT_TEXT, truncate=True), "complete message body",
                       "infra_error"),
    "envelope_without_verdict": (lambda body: Reply(text="The migration looks reasonable overall."),
                                 "no JSON object found", "judge_error"),
}


def judged_parts(project: Path) -> dict[str, dict[str, Any]]:
    """grades.json's judge outcome per (system, case) for the outputs that went to the model."""
    out = {}
    for path in (project / ".evalkit" / "artifacts").rglob("grades.json"):
        judge = json.loads(path.read_text())["judge"]
        if judge and judge["status"] != "parser":  # decided without a model: no call to fault
            out[str(path.relative_to(project))] = judge
    return out


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_is_recorded_with_its_reason_then_healed(tmp_path: Path, fault: str) -> None:
    responder, reason, status = FAULTS[fault]
    with FakeAnthropic(responder=responder) as server:
        project = make_project(tmp_path / "p", cases=["jpa-entity", "ejb-stateless"], extra=(
            f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n"
            "  timeout_s: 1\n  max_retries: 1\n  circuit_after: 3\n"))
        first = evalkit(project, "run", "--jobs", "2", env=ENV, check=False)
        # infrastructure errors remain: exit 5 (issue 27); an unusable verdict (judge_error) is not retried: 0
        assert first.returncode == (5 if status == "infra_error" else 0), first.stderr
        assert "Traceback" not in first.stderr and "internal error" not in first.stderr + first.stdout
        parts = judged_parts(project)
        assert len(parts) >= 2 and server.counts["messages"] >= 1
        for where, judge in parts.items():
            assert judge["status"] == status, (where, judge)
            assert judge["scores"] is None and not judge["verdicts"], where  # never a silent score
            assert reason in judge["error"] or "circuit open after 3 consecutive failures" in judge["error"], judge
            assert KEY not in json.dumps(judge)
            assert (project / where).with_name("grades.json.retry").exists() == (status == "infra_error")
        assert any(reason in j["error"] for j in parts.values())
        for path in (project / ".evalkit" / "artifacts").rglob("scores.json"):
            scores = json.loads(path.read_text())
            judge_scores = {k: v for k, v in scores["metrics"].items() if k.startswith("judge_") and k != "judge_cost_usd"}
            assert all(v is None for v in judge_scores.values()), (path, judge_scores)
        report = json.loads((project / "site" / "r1" / "report.json").read_text())
        assert any("no judge verdict" in note for note in report["notes"]), report["notes"]

        server.responder = healthy
        extra = ["--retry-judge-errors"] if status == "judge_error" else []
        second = evalkit(project, "run", *extra, env=ENV)
        assert "Traceback" not in second.stderr
        healed = judged_parts(project)
        assert set(healed) == set(parts)
        assert {j["status"] for j in healed.values()} == {"judged"}, healed
        assert all(j["scores"]["rule_adherence_score"] == 5 for j in healed.values())
        assert not list((project / ".evalkit").rglob("*.retry"))
        report = json.loads((project / "site" / "r1" / "report.json").read_text())
        assert not any("no judge verdict" in note for note in report["notes"])
        judged_n = sum(s["judge_mean"]["n"] for s in report["suites"][0]["systems"].values() if "judge_mean" in s)
        assert judged_n == len(parts)


def test_deprecation_notices_reach_the_run_output_and_the_release_page(tmp_path: Path) -> None:
    sunset = {"Deprecation": "@1798675200", "Sunset": "Wed, 30 Dec 2026 00:00:00 GMT"}
    with FakeAnthropic(responder=lambda body: Reply(text=VERDICT_TEXT, headers=sunset)) as server:
        project = make_project(tmp_path / "p", cases=["jpa-entity"], extra=(
            f"judge:\n  model: claude-sonnet-4-5\n  base_url: {server.base_url}\n"))
        run = evalkit(project, "run", env=ENV)
    from evalkit.llm.deprecation import sdk_table

    end = sdk_table()["claude-sonnet-4-5"]
    # printed once per run, however many calls carried it
    assert run.stderr.count("the API says sunset: Wed, 30 Dec 2026") == 1, run.stderr
    assert run.stderr.count(f"model claude-sonnet-4-5 is deprecated by Anthropic and reaches its end of life on {end}") == 1
    parts = judged_parts(project)
    assert parts and all(any("sunset" in n for n in j["notices"]) for j in parts.values())
    report = json.loads((project / "site" / "r1" / "report.json").read_text())
    assert any("Judge provider notice" in n and end in n for n in report["notes"]), report["notes"]
    page = (project / "site" / "r1" / "index.html").read_text()
    assert "Judge provider notice" in page and "Wed, 30 Dec 2026" in page
