"""A command system gets a clean environment, and a process it leaves behind fails its case (and dies).

Regression tests for issue 19: ANTHROPIC_BASE_URL and evalkit settings leaked into systems under
test; a system that left a background process was recorded `ok` with an empty answer after 10 s.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from evalkit.kinds.generation.models import GenerationInputs
from evalkit.cases import Case
from evalkit.config import CommandSystem
from evalkit.systems.base import RunContext
from evalkit.systems.command import BASE_ENV, run_command
from helpers import record_group_kills

DUMP_ENV = "import json, os; print(json.dumps({'text': json.dumps(dict(os.environ))}))"


def _case(tmp_path: Path) -> Case:
    return Case(suite="s", id="c1", kind="generation", language="text", path=str(tmp_path / "c1.yaml"),
                dir=str(tmp_path), files=[],
                inputs=GenerationInputs(instructions="hi"))


def _run(tmp_path: Path, code: str, **kw):
    system = CommandSystem(name="sut", adapter="command", command=[sys.executable, "-c", code], **kw)
    return run_command(system, _case(tmp_path), 0, RunContext(root=tmp_path, work=tmp_path / "work"))


def test_only_base_config_and_protocol_variables_reach_the_system(tmp_path: Path, monkeypatch) -> None:
    leaks = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/leak", "ANTHROPIC_API_KEY": "sk-ant-leak",
             "EVALKIT_RELEASE": "r-leak", "EVALKIT_JUDGE_MODEL": "leak-model", "EVALKIT_SELECT": "x/*",
             "PYTHONPATH": "/leak", "RANDOM_PARENT_VAR_7": "leak", "AWS_SECRET_ACCESS_KEY": "leak"}
    for k, v in leaks.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("MY_TOOL_TOKEN", "passed-by-name")
    sample = _run(tmp_path, DUMP_ENV, env={"FROM_CONFIG": "yes"}, pass_env=["MY_TOOL_TOKEN", "NOT_SET_ANYWHERE"])
    assert sample.status == "ok", sample.reason
    env = json.loads(sample.text)
    assert not set(leaks) & set(env), f"leaked: {sorted(set(leaks) & set(env))}"
    assert env["FROM_CONFIG"] == "yes" and env["MY_TOOL_TOKEN"] == "passed-by-name"
    assert "NOT_SET_ANYWHERE" not in env
    protocol = {"EVALKIT_CASE", "EVALKIT_OUTPUT", "EVALKIT_OUT_DIR", "EVALKIT_SAMPLE", "PYTHONDONTWRITEBYTECODE"}
    assert protocol <= set(env)
    allowed = set(BASE_ENV) | protocol | {"FROM_CONFIG", "MY_TOOL_TOKEN"}
    # the interpreter may add a few of its own (e.g. LC_CTYPE coercion): nothing else of ours
    assert set(env) - allowed <= {"LC_CTYPE"}, sorted(set(env) - allowed)
    assert env["PATH"] == os.environ["PATH"]


def test_config_env_may_set_a_key_explicitly_but_protocol_variables_win(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-parent")
    sample = _run(tmp_path, DUMP_ENV, env={"ANTHROPIC_API_KEY": "sk-from-config", "EVALKIT_SAMPLE": "99"})
    env = json.loads(sample.text)
    assert env["ANTHROPIC_API_KEY"] == "sk-from-config"
    assert env["EVALKIT_SAMPLE"] == "0"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _wait_dead(pid: int, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


BACKGROUND = """
import os, subprocess, sys, json
child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL{extra})
open(os.environ['EVALKIT_OUT_DIR'] + '/../child.pid', 'w').write(str(child.pid))
open({pidfile!r}, 'w').write(str(child.pid))
print(json.dumps({{'text': 'done'}}))
"""


@pytest.mark.parametrize("how", ["same group", "own session, pipes closed", "own session, stdout kept",
                                 "own session, clean environment, stdout kept"])
def test_a_process_left_running_fails_the_case_and_is_killed(tmp_path: Path, how: str) -> None:
    pidfile = tmp_path / "child.pid"
    extra = "" if how == "same group" else ", start_new_session=True"
    code = BACKGROUND.format(extra=extra, pidfile=str(pidfile))
    if how.endswith("stdout kept"):
        code = code.replace("stdout=subprocess.DEVNULL, ", "")
    if "clean environment" in how:  # no marker variable: found by the output pipe it holds
        code = code.replace("start_new_session=True", "start_new_session=True, env={'PATH': '/usr/bin'}")
    sample = _run(tmp_path, code, timeout_s=60)
    child = int(pidfile.read_text())
    assert sample.status == "error", sample
    assert "left 1 process running after it exited" in sample.reason and f"pid {child}" in sample.reason
    assert "time.sleep(300)" in sample.reason
    assert _wait_dead(child), "the left-over process still runs"
    assert sample.wall_s < 30


def test_a_system_that_waits_for_its_children_is_fine(tmp_path: Path) -> None:
    code = ("import subprocess, sys, json; subprocess.run([sys.executable, '-c', 'print(1)'], check=True, capture_output=True); "
            "print(json.dumps({'text': 'ok'}))")
    sample = _run(tmp_path, code)
    assert sample.status == "ok" and sample.text == "ok", sample.reason


@pytest.mark.parametrize("code", ["print('{\"text\": \"ok\"}')", "import time; time.sleep(60)"], ids=["exits", "times out"])
def test_the_systems_group_is_killed_before_its_leader_is_reaped(tmp_path: Path, monkeypatch, code: str) -> None:
    """After the wait the leader's pid may go to another process at once: a group kill by that number, or a search
    of its session, must come while the zombie still holds it (evalkit.procs.Group)."""
    kills = record_group_kills(monkeypatch)
    sample = _run(tmp_path, code, timeout_s=2)
    assert sample.status == ("ok" if "print" in code else "timeout"), sample
    assert kills, "the system's group was never killed"
    assert all(state is not None and state[1] == pgid for pgid, state in kills), kills
