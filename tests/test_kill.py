"""A run killed with SIGKILL loses doit's state; the rerun redoes only the work that was in flight."""

from __future__ import annotations

import json
import os
import signal
import textwrap
import time
from pathlib import Path

from evalkit import procs
from helpers import evalkit, make_project, run
from zygote import popen_evalkit

CASES = ["jpa-entity", "cdi-inject", "jaxrs-resource", "servlet-filter"]


def test_sigkill_then_rerun_pays_only_unfinished(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    slow = tmp_path / "slow.py"
    slow.write_text(textwrap.dedent(f"""\
        import json, sys, time
        case = json.load(sys.stdin)
        with open({str(log)!r}, "a") as fh:
            fh.write("start " + case["case_id"] + "\\n")
        time.sleep(1.0)
        with open({str(log)!r}, "a") as fh:
            fh.write("done " + case["case_id"] + "\\n")
        print(json.dumps({{"files": {{}}}}))
        """))
    systems = f'systems:\n  - name: slow\n    adapter: command\n    command: ["{{python}}", "{slow}"]\n'
    project = make_project(tmp_path / "p", cases=CASES, systems=systems)
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("baseline: naive\n", ""))
    env = {**os.environ, "EVALKIT_CONFIG": str(cfg)}
    proc = popen_evalkit(["run"], tmp_path, env, start_new_session=True)
    artifacts = project / ".evalkit" / "artifacts" / "slow" / "migration"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # killed once a first answer is stored (one task per core runs at once)
        if any((artifacts / c / "output.json").exists() for c in CASES):
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = log.read_text().splitlines()
    # finished = its artifact was written before the kill (the system may have finished a case
    # whose result evalkit had not stored yet: that one was still in flight)
    finished = {c for c in CASES if (artifacts / c / "output.json").exists()}
    assert 1 <= len(finished) < len(CASES), before

    ran = run(project)
    assert {f"generate:slow:migration/{c}" for c in CASES} <= ran  # doit's state was lost ...
    after = log.read_text().splitlines()[len(before):]
    rerun_cases = {line.split()[1] for line in after if line.startswith("start")}
    # ... but the system itself ran again only for cases that had not finished: never for one whose artifact was
    # written, always for one the system had not answered. A case answered but without its artifact may go either
    # way: its answer is in the content store once evalkit stored it, before it wrote the artifact, and the kill
    # may fall between the two (then the rerun takes the stored answer and pays nothing)
    unanswered = {c for c in CASES if f"done {c}" not in before}
    assert unanswered <= rerun_cases <= set(CASES) - finished, (before, after)
    assert all(sum(1 for l in before + after if l == f"done {c}") == 1 for c in finished)
    assert all(sum(1 for l in before + after if l == f"done {c}") >= 1 for c in CASES)  # every case answered in the end
    assert (project / "site" / "r1" / "report.json").exists()


def test_a_killed_runs_system_and_what_it_started_are_killed_by_the_next_run(tmp_path: Path) -> None:
    """A command system starts a session of its own, so killing the run's whole process group leaves it (and a
    process it started) running, answering nobody. The next run kills both before it asks the case again, and
    says which; a live run's system is never touched (the sweep only reads folders whose owner is dead)."""
    hang, pids = tmp_path / "hang", tmp_path / "pids"
    system = tmp_path / "system.py"
    system.write_text(textwrap.dedent(f"""\
        import json, os, pathlib, subprocess, sys, time
        case = json.load(sys.stdin)
        if pathlib.Path({str(hang)!r}).exists():
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
            pathlib.Path({str(pids)!r}).write_text(f"{{os.getpid()}} {{child.pid}}")
            time.sleep(300)
        print(json.dumps({{"files": {{}}}}))
        """), encoding="utf-8")
    systems = f'systems:\n  - name: slow\n    adapter: command\n    command: ["{{python}}", "{system}"]\n'
    project = make_project(tmp_path / "p", cases=["jpa-entity"], systems=systems)
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("baseline: naive\n", ""))
    # a temporary folder of their own: any evalkit run on the machine sweeps /tmp (other tests' runs too)
    private = tmp_path / "tmp"
    private.mkdir()
    env = {**os.environ, "EVALKIT_CONFIG": str(cfg), "TMPDIR": str(private)}
    hang.touch()
    proc = popen_evalkit(["run"], tmp_path, env, start_new_session=True)
    deadline = time.monotonic() + 120
    while not (pids.is_file() and pids.read_text()) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids.is_file(), proc.communicate()
    left = [int(p) for p in pids.read_text().split()]
    os.killpg(proc.pid, signal.SIGKILL)  # the run's whole group, as a cancelled CI job is killed
    proc.wait()
    time.sleep(0.5)
    assert all(procs.alive(p) for p in left), "the system died with its run's group: nothing left to sweep"

    hang.unlink()
    assert any(private.glob("evalkit-run-*")), "the system's work folder is not in the private TMPDIR"
    rerun = evalkit(project, "run", "-q", env={"TMPDIR": str(private)})
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert all(not procs.alive(p) for p in left), f"the killed run's system still runs: {left}"
    named = [line for line in rerun.stderr.splitlines() if "a killed run left it running" in line]
    assert sorted(int(line.split()[3]) for line in named) == sorted(left), rerun.stderr
    assert json.loads(next((project / ".evalkit/artifacts/slow").rglob("output.json")).read_text())["status"] == "ok"
