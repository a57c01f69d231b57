"""judge.mode batch inside a real run: the grade stage's calls go out as one Message Batch.

A loopback server implements the Message Batches endpoints (create, retrieve, JSONL results) and
counts how often each custom_id is submitted. The run is killed (SIGKILL) while the batch is
processing, after it was created and before its results are read; the rerun resumes the saved
batch id: no request is submitted twice, no message is sent one by one, and every output is judged.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from fake_server import FakeAnthropic, Reply
from helpers import evalkit_here, make_project, run
from zygote import popen_evalkit

KEY = "sk-ant-test-batch-0000"
VERDICT = {"semantic_equivalence_score": 4, "rule_adherence_score": 5, "faithfulness_score": 4,
           "code_quality_score": 4, "is_compilable": True, "detailed_notes": "fine"}


def verdict(body: dict[str, Any]) -> Reply:
    return Reply(text="Checked.\n```json\n" + json.dumps(VERDICT) + "\n```")


def judge_statuses(project: Path) -> list[str]:
    return [json.loads(p.read_text())["judge"]["status"] for p in (project / ".evalkit/artifacts").rglob("grades.json")]


def test_batch_killed_while_processing_resumes_the_saved_batch_and_pays_nothing_twice(tmp_path: Path) -> None:
    with FakeAnthropic(responder=verdict) as server:
        server.polls_to_end = 10**9  # the batch stays in progress until the first run is dead
        project = make_project(tmp_path / "p", cases=["jpa-entity", "ejb-stateless", "cdi-inject"], extra=(
            f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n  mode: batch\n"
            "  batch_poll_s: 0.05\n"))
        env = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), "ANTHROPIC_API_KEY": KEY}
        proc = popen_evalkit(["run", "--jobs", "2"], tmp_path, env, start_new_session=True)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None and server.counts["batch_retrieve"] < 3:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before the batch was polled"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert server.counts["batch_create"] == 1 and server.counts["batch_results"] == 0
        submitted = dict(server.batch_custom_ids)
        states = list((project / ".evalkit/cache/llm-batches").glob("*.json"))
        assert len(states) == 1 and json.loads(states[0].read_text())["status"] == "open"
        assert not list((project / ".evalkit/artifacts").rglob("grades.json"))  # no grade task ran yet

        server.polls_to_end = 0  # the batch has ended by the time the next run looks
        executed = run(project, env={"ANTHROPIC_API_KEY": KEY})
        assert "judge_batch:run" in executed
        assert server.counts["batch_create"] == 1  # resumed by its saved id, not created again
        assert server.batch_custom_ids == submitted and set(submitted.values()) == {1}
        assert server.counts["messages"] == 0  # nothing went one by one at full price
        assert json.loads(states[0].read_text())["status"] == "ended"
        assert set(judge_statuses(project)) <= {"judged", "parser"}
        keys = set()
        for path in (project / ".evalkit/artifacts").rglob("grades.json"):
            judge = json.loads(path.read_text())["judge"]
            if judge["status"] == "judged":  # identical answers share one request and its verdict
                assert judge["cost_usd"] > 0
                keys.update(judge["request_keys"])
        assert {key[:64] for key in keys} == set(submitted)
        record = json.loads((project / ".evalkit/batches/grade.json").read_text())
        assert [r["requests"] for r in record["rounds"]] == [len(submitted)]

        # nothing changed: the batch step is skipped and nothing is asked
        again = run(project, env={"ANTHROPIC_API_KEY": KEY})
        assert "judge_batch:run" not in again and not any(t.startswith("grade:") for t in again)
        # one case's legacy file edited: one new batch with that case's requests only
        legacy = next((project / "cases/migration/cdi-inject/legacy").rglob("*.java"))
        legacy.write_text(legacy.read_text() + "\n// edited\n")
        run(project, env={"ANTHROPIC_API_KEY": KEY})
        assert server.counts["batch_create"] == 2 and server.counts["messages"] == 0
        assert set(server.batch_custom_ids.values()) == {1}
        new = len(server.batch_custom_ids) - len(submitted)
        assert 1 <= new <= 3  # at most one per system on that case
        last = evalkit_here(project, "estimate", env={"ANTHROPIC_API_KEY": KEY}).stdout.strip().splitlines()[-1]
        assert json.loads(last)["uncached_calls"] == 0
    report = json.loads((project / "site/r1/report.json").read_text())
    assert report["suites"][0]["systems"]["gold"]["judge_mean"]["n"] == 3
