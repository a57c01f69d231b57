"""One exit status per outcome of `evalkit run` (issue 27, item 5; the README's table), each tested here or
where its feature is: 0 done, 1 doit failure, 2 bad input, 3 all failed (tests/test_bad_input.py) or nothing
evaluated, 4 evalkit bug (tests/test_bugs.py), 5 infrastructure errors remain, 6 environment failure
(disk full; no Docker daemon), 7 locked (tests/test_run_lock.py). Real `python -m evalkit run` subprocesses."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fake_server import FakeAnthropic, error
from helpers import evalkit, executed, make_project, plain_doit

from evalkit.run_status import RunCells, after_run
from evalkit.termtext import terminal_safe

ENV = {"ANTHROPIC_API_KEY": "sk-ant-test-exit-0000"}
GOLD_ONLY = "systems:\n  - name: gold\n    adapter: gold\n"


def gold_project(root: Path, extra: str = "", cases: list[str] | None = None) -> Path:
    project = make_project(root, cases=cases or ["jpa-entity"], systems=GOLD_ONLY, extra=extra)
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("baseline: naive", "baseline: gold"))
    return project


def test_done_is_0(tmp_path: Path) -> None:
    proc = evalkit(gold_project(tmp_path / "p"), "run", check=False)
    assert proc.returncode == 0, proc.stderr
    header = next(line for line in proc.stdout.splitlines() if "suite" in line and "system" in line)
    assert "errors" not in header and "first error of" not in proc.stdout  # the column comes with errors


def test_doit_failure_is_1(tmp_path: Path) -> None:
    proc = evalkit(gold_project(tmp_path / "p"), "run", "no-such-task", check=False)
    assert proc.returncode == 1, proc.stderr
    assert "exit status 1: doit failed" in proc.stderr


def test_every_case_broken_is_2_not_a_silent_success(tmp_path: Path) -> None:
    project = gold_project(tmp_path / "p", cases=["jpa-entity", "cdi-inject"])
    for case in ("jpa-entity", "cdi-inject"):
        path = project / f"cases/migration/{case}/case.yaml"
        path.write_text(path.read_text() + "unexpected_key: 1\n")
    proc = evalkit(project, "run", check=False)
    assert proc.returncode == 2, proc.stderr
    assert "nothing was evaluated: every case is broken (2 pair(s))" in proc.stderr
    assert (project / "site/r1/report.json").exists(), "the report still says which and why"


def test_infra_errors_remaining_is_5_with_the_first_reason(tmp_path: Path) -> None:
    with FakeAnthropic(responder=lambda body: error(429)) as server:
        project = gold_project(tmp_path / "p", extra=(
            f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n  max_retries: 0\n"))
        proc = evalkit(project, "run", env=ENV, check=False)
    assert proc.returncode == 5, proc.stderr
    assert ("1 (system, case) pair(s) ended in an infrastructure error (redone by the next run); first: "
            "migration/jpa-entity gold: ") in proc.stderr
    assert "rate_limited (HTTP 429)" in proc.stderr and "exit status 5" in proc.stderr
    header = next(line for line in proc.stdout.splitlines() if "suite" in line and "system" in line)
    assert [c.strip() for c in header.split("┃")][6] == "errors", header
    row = next(line for line in proc.stdout.splitlines() if "│ gold" in line)
    cells = [c.strip() for c in row.split("│")]
    assert cells[6] == "1", row  # the errors column
    assert ("first error of migration × gold (1): jpa-entity: infra_error: grade: judge: rate_limited (HTTP 429)"
            in proc.stdout), proc.stdout


def test_plain_doit_fails_unless_evalkit_run_would_exit_0(tmp_path: Path) -> None:
    """The README's main command is plain `doit`: its last task (`outcome:run`) decides as `evalkit run` does, prints
    the same lines and fails unless the status is 0, so a `doit` that left infrastructure errors or evaluated nothing
    exits non-zero (doit's 1) instead of 0."""
    with FakeAnthropic(responder=lambda body: error(429)) as server:
        project = gold_project(tmp_path / "p", extra=(
            f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n  max_retries: 0\n"))
        proc = plain_doit(project, ENV)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "outcome:run" in executed(proc)
    assert ("evalkit: 1 (system, case) pair(s) ended in an infrastructure error (redone by the next run); first: "
            "migration/jpa-entity gold: ") in proc.stderr
    assert "evalkit: exit status 5" in proc.stderr and "the run's outcome is exit status 5" in proc.stdout + proc.stderr

    broken = gold_project(tmp_path / "b")
    case = broken / "cases/migration/jpa-entity/case.yaml"
    case.write_text(case.read_text() + "unexpected_key: 1\n")
    proc = plain_doit(broken)
    assert proc.returncode == 1 and "nothing was evaluated: every case is broken (1 pair(s))" in proc.stderr

    case.write_text(case.read_text().replace("unexpected_key: 1\n", ""))
    proc = plain_doit(broken)  # healed: done
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "outcome:run" in executed(proc) and "exit status" not in proc.stderr
    again = plain_doit(broken)  # nothing else to do: the outcome is decided again, and is still 0
    assert again.returncode == 0 and executed(again) == {"outcome:run"}, again.stdout + again.stderr


DISK_FULL = '''
import errno, os

if os.environ.get("EVALKIT_TEST_DISK_FULL"):
    import evalkit.fsutil as fsutil

    real = fsutil._temp_file

    def _temp_file(path):
        if "grades.json" in str(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path)

    fsutil._temp_file = _temp_file
'''


def test_disk_full_is_6_without_a_traceback(tmp_path: Path) -> None:
    """Was: doit's traceback and exit 2 ("bad input"). The disk is made full for grades.json by a
    ``sitecustomize`` on the run's PYTHONPATH (an OSError ENOSPC from the atomic writer)."""
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(DISK_FULL)
    project = gold_project(tmp_path / "p")
    env = {"PYTHONPATH": os.pathsep.join([str(inject), os.environ.get("PYTHONPATH", "")]),
           "EVALKIT_TEST_DISK_FULL": "1"}
    proc = evalkit(project, "run", env=env, check=False)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "environment failure: run_stage(grade, gold, migration/jpa-entity): No space left on device: " in proc.stderr
    assert "exit status 6: the machine failed the run" in proc.stderr
    assert not list((project / ".evalkit").rglob("bugs/**/*.json")), "never recorded as an evalkit bug"
    again = evalkit(project, "run", check=False)  # space again: the run completes
    assert again.returncode == 0, again.stderr


def test_outcomes_from_the_report_cells() -> None:
    assert after_run(RunCells(total=4, evaluated=4))[0] == 0
    assert after_run(None)[0] == 3
    code, lines = after_run(RunCells(total=3, evaluated=1, infra=2, infra_first="s/c x: sandbox failure: boom"))
    assert code == 5 and "first: s/c x: sandbox failure: boom" in lines[0]
    docker = "not run: no Docker daemon answered when the run started, and suite 'patch' is not marked trusted"
    code, lines = after_run(RunCells(total=2, evaluated=0, infra=2, no_docker=2, infra_first=f"patch/a x: {docker}"))
    assert code == 6 and lines[0].startswith("environment failure: no Docker daemon for 2 (system, case) pair(s)")
    assert after_run(RunCells(total=2, evaluated=1, infra=2, no_docker=1))[0] == 5  # not only Docker: retry
    code, lines = after_run(RunCells(total=2, evaluated=2, checks=1, checks_first="patch/a health: boom"))
    assert code == 5 and lines == ["1 case(s) whose validation or health check ended in an infrastructure error "
                                   "(not counted healthy; redone by the next run); first: patch/a health: boom"]
    code, lines = after_run(RunCells(total=2, evaluated=0, infra=2, no_docker=2, checks=1, checks_no_docker=1,
                                     infra_first=f"patch/a x: {docker}"))
    assert code == 6 and lines[0].startswith("environment failure: no Docker daemon for 2 (system, case) pair(s) "
                                             "and the checks of 1 case(s)")
    assert after_run(RunCells(total=2, evaluated=2, infra=1, no_docker=1, checks=1))[0] == 5  # a check's other cause
    assert after_run(RunCells(total=2, broken=2))[0] == 2
    code, lines = after_run(RunCells(total=2, broken=1))  # the other not attempted: nothing evaluated
    assert code == 3 and "nothing was evaluated" in lines[0]


NOISY = ("import sys\nsys.stderr.write('\\x1b[31mred\\x1b[0m \\x1b]0;pwned-title\\x07 \\x1b[2J cleared\\a "
         "[bold]markup[/bold]\\n')\nsys.exit(3)\n")


def test_a_systems_escape_sequences_never_reach_the_terminal(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(NOISY)
    systems = (GOLD_ONLY + f"  - name: noisy\n    adapter: command\n    command: [\"{{python}}\", \"{script}\"]\n")
    project = make_project(tmp_path / "p", cases=["jpa-entity"], systems=systems)
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("baseline: naive", "baseline: gold"))
    proc = evalkit(project, "run", check=False)
    assert proc.returncode == 3, proc.stderr
    report = json.loads((project / "site/r1/report.json").read_text())
    assert "\x1b" in report["cases"][0]["systems"]["noisy"]["reason"], "kept as it was in the report"
    out = proc.stdout + proc.stderr
    assert "\x1b" not in out and "\x07" not in out
    assert "every case of system 'noisy' failed" in proc.stderr and "red" in proc.stderr
    assert "[bold]markup[/bold]" in out or "[bold]markup" in out, "rich markup shown as text, not applied"


def test_terminal_safe() -> None:
    assert terminal_safe("a\x1b[31mb\x1b[0m\x1b]8;;http://x\x1b\\c\x07\r\x00d\te\n\x9b2J") == "abcd\te\n"


LOSE_CHECK = '''
import os

if os.environ.get("EVALKIT_TEST_LOSE_CHECK"):
    import evalkit.executors.local as local
    from evalkit.executors import ExecutorFailure

    real = local.LocalExecutor.run

    def run(self, call):
        if call.stage == os.environ["EVALKIT_TEST_LOSE_CHECK"]:
            raise ExecutorFailure("injected: the worker running the call was lost")
        return real(self, call)

    local.LocalExecutor.run = run
'''


@pytest.mark.parametrize("check", ["validate", "health"])
def test_a_case_check_lost_to_infra_is_5_and_the_case_not_healthy(tmp_path: Path, check: str) -> None:
    """Was: exit 0 and the case counted healthy (no badge, no ablation) when its validation or health check
    could not run: CI's cluster run met it (a sandbox whose sweep failed). The executor is made to fail the
    case's check by a ``sitecustomize`` on the run's PYTHONPATH; the next run, without it, heals."""
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(LOSE_CHECK)
    project = gold_project(tmp_path / "p")
    env = {"PYTHONPATH": os.pathsep.join([str(inject), os.environ.get("PYTHONPATH", "")]),
           "EVALKIT_TEST_LOSE_CHECK": check}
    proc = evalkit(project, "run", env=env, check=False)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert ("1 case(s) whose validation or health check ended in an infrastructure error (not counted healthy; "
            "redone by the next run); first: migration/jpa-entity ") in proc.stderr, proc.stderr
    assert "injected: the worker running the call was lost" in proc.stderr
    report = json.loads((project / "site/r1/report.json").read_text(encoding="utf-8"))
    (suite,) = report["suites"]
    assert suite["health"]["unchecked"] == 1 and suite["health"]["healthy"] == 0, suite["health"]
    (row,) = report["cases"]
    assert "unchecked" in row["health"]["badges"] and row["health"]["healthy"] is False, row["health"]
    what = "validation could not run" if check == "validate" else "health could not be checked"
    assert any(d.startswith(what) for d in row["health"]["detail"]), row["health"]
    pages = " ".join(p.read_text(encoding="utf-8") for p in (project / "site/r1").rglob("*.html"))
    assert "<strong>unchecked 1</strong>" in pages
    again = evalkit(project, "run", check=False)  # the executor works again: the check is redone
    assert again.returncode == 0, again.stderr
    report = json.loads((project / "site/r1/report.json").read_text(encoding="utf-8"))
    assert report["suites"][0]["health"]["unchecked"] == 0 and "unchecked" not in report["cases"][0]["health"]["badges"]
