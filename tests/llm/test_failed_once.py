"""Identical failing judge requests are sent once per run (#29, Why 9): two systems with byte-identical outputs ask
the judge the same content-addressed question; when the API refuses it, the second grade task is told the first
one's failure instead of sending it again. The next run asks again (a failure is never cached), once. Both outputs
are filed as without a verdict, and their judge metrics as excluded."""

from __future__ import annotations

import json
from pathlib import Path

from fake_server import FakeAnthropic, error
from helpers import evalkit, make_project

KEY = "sk-ant-test-failed-once-0000"
SYSTEMS = """\
systems:
  - {name: naive, adapter: command, command: ["{python}", "-m", "evalkit.demo_systems.naive_rewriter"]}
  - {name: naive-copy, adapter: command, command: ["{python}", "-m", "evalkit.demo_systems.naive_rewriter"]}
"""


def test_identical_failing_request_is_sent_once_per_run(tmp_path: Path) -> None:
    with FakeAnthropic(responder=lambda body: error(400, message="scripted refusal")) as server:
        root = make_project(tmp_path / "p", cases=["ejb-stateless"], systems=SYSTEMS,
                            extra=f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n")
        env = {"ANTHROPIC_API_KEY": KEY}
        evalkit(root, "run", "-q", env=env, check=False)
        first = server.message_calls()
        assert first == 1, first  # one question (samples: 1), two systems: sent once
        out = {s: json.loads((root / f".evalkit/artifacts/{s}/migration/ejb-stateless/output.json").read_text())
               for s in ("naive", "naive-copy")}
        assert out["naive"]["samples"][0]["files"] == out["naive-copy"]["samples"][0]["files"]
        statuses = {s: json.loads((root / f".evalkit/artifacts/{s}/migration/ejb-stateless/scores.json").read_text())
                    ["judge_status"] for s in ("naive", "naive-copy")}
        assert set(statuses.values()) <= {"infra_error", "judge_error"} and len(set(statuses.values())) == 1, statuses
        report = json.loads((root / "site/r1/report.json").read_text())
        suite = next(s for s in report["suites"] if s["name"] == "migration")
        agg = suite["systems"]["naive"].get("judge_mean")
        assert agg is None or agg["n"] == 0
        evalkit(root, "run", "-q", env=env, check=False)
        assert server.message_calls() == first + 1  # the next run retries, once again
