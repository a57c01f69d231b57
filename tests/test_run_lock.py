"""One run of a project at a time (issue 27, item 2): `<work>/lock`, an advisory flock holding the owner's
pid and start time. Two real `evalkit run` processes: the second refuses (exit 7) naming the first, or with
`--wait` starts when the first ends and pays for nothing; a lock left by a killed run is taken over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fake_server import FakeAnthropic, Reply
from helpers import evalkit, make_project

from evalkit.runlock import LOCKED_EXIT

ENV = {"ANTHROPIC_API_KEY": "sk-ant-test-lock-0000"}
VERDICT = {"semantic_equivalence_score": 4, "rule_adherence_score": 5, "faithfulness_score": 4,
           "code_quality_score": 4, "is_compilable": True, "detailed_notes": "fine"}
VERDICT_TEXT = "Step 1: equivalent.\n```json\n" + json.dumps(VERDICT) + "\n```"


def slow(body: dict[str, Any]) -> Reply:
    return Reply(text=VERDICT_TEXT, delay_s=0.7)


def start(project: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), **ENV}
    return subprocess.Popen([sys.executable, "-m", "evalkit", "run", *args], cwd=str(project.parent), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_lock(project: Path, proc: subprocess.Popen[str], timeout: float = 60) -> dict[str, Any]:
    """The lock file's contents once ``proc`` holds it."""
    path = project / ".evalkit" / "lock"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            info = json.loads(path.read_text())
            if info.get("pid") == proc.pid:
                return info
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError("the run never took the lock")


def judged_project(root: Path, base_url: str) -> Path:
    return make_project(root, extra=f"judge:\n  model: claude-test-judge\n  base_url: {base_url}\n")


def test_second_run_refuses_then_waits_and_pays_nothing(tmp_path: Path) -> None:
    with FakeAnthropic(responder=slow) as server:
        project = judged_project(tmp_path / "p", server.base_url)
        first = start(project)
        info = wait_for_lock(project, first)
        assert info["start_ticks"] > 0 and info["started"].endswith("Z")

        refused = evalkit(project, "run", env=ENV, check=False)
        assert refused.returncode == LOCKED_EXIT, refused.stderr
        assert f"another evalkit run of this project is going (pid {first.pid}, started {info['started']}" in refused.stderr
        assert "pass --wait" in refused.stderr and "Traceback" not in refused.stderr
        assert first.poll() is None, "the refused run must not have disturbed the first"

        waiting = start(project, "--wait")
        out, err = first.communicate(timeout=300)
        assert first.returncode == 0, err
        calls = server.counts["messages"]
        assert calls >= 2
        w_out, w_err = waiting.communicate(timeout=300)
        assert waiting.returncode == 0, w_err
        assert "waiting for it to end" in w_err
        assert "\n.  " not in "\n" + w_out, "the waiting run found everything done"
        assert server.counts["messages"] == calls, "each judge call paid once over both runs"
        print(f"\ntwo concurrent runs (the second with --wait): {server.counts['messages']} judge calls, as one run")
    assert json.loads((project / "site/r1/report.json").read_text())["cases"]
    assert (project / ".evalkit/lock").read_text() == "", "released"


def test_lock_of_a_killed_run_is_taken_over(tmp_path: Path) -> None:
    with FakeAnthropic(responder=slow) as server:
        project = judged_project(tmp_path / "p", server.base_url)
        victim = start(project)
        wait_for_lock(project, victim)
        os.kill(victim.pid, signal.SIGKILL)
        victim.communicate(timeout=60)
        assert json.loads((project / ".evalkit/lock").read_text())["pid"] == victim.pid  # stale contents stay
        again = evalkit(project, "run", env=ENV, check=False)
        assert again.returncode == 0, again.stderr
        assert "another evalkit run" not in again.stderr
        assert json.loads((project / "site/r1/report.json").read_text())["cases"]
