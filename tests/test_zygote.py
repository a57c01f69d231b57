"""The tests' forked `python -m evalkit` (tests/zygote.py) is the process a new interpreter would be."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import zygote
from helpers import make_project


def _spawned(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return zygote.spawned(args, cwd, env, timeout=300)


def _env(project: Path, **extra: str) -> dict[str, str]:
    """The run's environment, with a temporary folder of the project's own: a run sweeps its temporary folder of
    what killed runs left (and says so on stderr), and the tests here compare stderr and kill runs."""
    tmp = project.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), "TMPDIR": str(tmp), **extra}


def test_a_forked_run_prints_writes_and_exits_as_a_new_interpreter_does(tmp_path: Path) -> None:
    """The same project run both ways (in two folders with the same relative layout): the same exit status,
    the same stdout (no `-q`: the task lines, in the order the jobs ended them, and the summary table) and stderr, the same
    cases scored; and the same for `check` on a project whose YAML is broken (exit 2, the file and line)."""
    forked_project = make_project(tmp_path / "forked" / "p")
    spawned_project = make_project(tmp_path / "spawned" / "p")
    server = zygote.server()
    before = server.forks
    forked = zygote.python_m_evalkit(["run"], forked_project.parent, _env(forked_project), timeout=300)
    assert server.forks == before + 1, "the run was not forked from the zygote"
    spawned = _spawned(["run"], spawned_project.parent, _env(spawned_project))
    assert spawned.returncode == 0, spawned.stdout + spawned.stderr
    # two jobs finish tasks in either order: the same lines, the same summary table after them
    assert (forked.returncode, sorted(forked.stdout.splitlines()), forked.stderr) == \
        (spawned.returncode, sorted(spawned.stdout.splitlines()), spawned.stderr)
    assert forked.stdout.split("\n.  ")[-1].split("\n", 1)[1] == spawned.stdout.split("\n.  ")[-1].split("\n", 1)[1]
    scored = {p.relative_to(forked_project) for p in forked_project.rglob("score*.json")}
    assert scored == {p.relative_to(spawned_project) for p in spawned_project.rglob("score*.json")}
    assert scored, "no score files: nothing was evaluated"

    for project in (forked_project, spawned_project):
        (project / "cases" / "migration" / "jpa-entity" / "case.yaml").write_text("id: [unclosed\n", encoding="utf-8")
    forked = zygote.python_m_evalkit(["check"], forked_project.parent, _env(forked_project), timeout=300)
    spawned = _spawned(["check"], spawned_project.parent, _env(spawned_project))
    assert spawned.returncode == 2 and "case.yaml" in spawned.stderr + spawned.stdout
    assert (forked.returncode, forked.stdout, forked.stderr) == (spawned.returncode, spawned.stdout, spawned.stderr)


def test_a_run_whose_environment_its_imports_read_differently_is_a_new_interpreter(tmp_path: Path) -> None:
    """EVALKIT_YAML_MAX_NODES is read when evalkit.yamlio is imported: a fork would keep the zygote's limit. A run
    that sets it gets its own process, and ends as a new interpreter does (here: evalkit's own rubric files are
    over that limit); so does one that sets a variable the interpreter reads at start."""
    project = make_project(tmp_path / "p")
    server = zygote.server()
    assert "EVALKIT_YAML_MAX_NODES" in server.import_env
    assert server.differs(_env(project, PYTHONPATH=str(tmp_path))) is not None
    before = server.forks
    env = _env(project, EVALKIT_YAML_MAX_NODES="5")
    proc = zygote.python_m_evalkit(["check"], project.parent, env, timeout=300)
    assert server.forks == before, "forked although the environment its imports read differs"
    spawned = _spawned(["check"], project.parent, env)
    assert "limit EVALKIT_YAML_MAX_NODES" in spawned.stderr
    assert (proc.returncode, proc.stdout, proc.stderr) == (spawned.returncode, spawned.stdout, spawned.stderr)
    ok = zygote.python_m_evalkit(["check"], project.parent, _env(project), timeout=300)
    assert ok.returncode == 0 and server.forks == before + 1, ok.stdout + ok.stderr


def test_a_forked_run_past_its_timeout_is_killed_as_subprocess_run_kills_it(tmp_path: Path) -> None:
    """subprocess.run's timeout: the process is killed and TimeoutExpired raised with what it printed so far."""
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import time\ntime.sleep(30)\n", encoding="utf-8")
    project = make_project(tmp_path / "p", cases=["jpa-entity"], systems=(  # the baseline, slow
        "systems:\n  - name: naive\n    adapter: command\n"
        f"    command: [\"{{python}}\", \"{sleeper}\"]\n"))
    server = zygote.server()
    with pytest.raises(subprocess.TimeoutExpired):
        zygote.python_m_evalkit(["run"], project.parent, _env(project), timeout=4)
    assert server.exits[-1] == -9, "the run was not killed at its timeout"
    assert zygote.python_m_evalkit(["check"], project.parent, _env(project), timeout=300).returncode == 0


@pytest.mark.parametrize("forked", [True, False], ids=["forked", "spawned"])
def test_a_started_run_killed_with_its_group_ends_with_its_system_as_a_popen_does(
        tmp_path: Path, forked: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """popen_evalkit (the kill tests' run): started in its own session, the run leads its process group and
    ends when the group is SIGKILLed, exit status -9, whether forked or a `subprocess.Popen` (the fallback);
    a forked run's output is readable after that, as a Popen's is."""
    pidfile = tmp_path / "system.pid"
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text(f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(300)\n",
                       encoding="utf-8")
    project = make_project(tmp_path / "p", cases=["jpa-entity"], systems=(  # the baseline, hanging
        "systems:\n  - name: naive\n    adapter: command\n"
        f"    command: [\"{{python}}\", \"{sleeper}\"]\n"))
    env = _env(project)
    server = zygote.server()
    before = server.forks
    with monkeypatch.context() as patched:
        if not forked:
            patched.setenv("EVALKIT_TEST_NO_ZYGOTE", "1")
        run = zygote.popen_evalkit(["run"], project.parent, env, start_new_session=True)
    assert (server.forks == before + 1) is forked and isinstance(run, zygote.Forked) is forked
    deadline = time.monotonic() + 120
    while not (pidfile.is_file() and pidfile.read_text()) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run.poll() is None and pidfile.is_file(), run.communicate()
    system = int(pidfile.read_text())
    assert os.getsid(run.pid) == os.getpgid(run.pid) == run.pid != os.getsid(0)
    os.killpg(run.pid, signal.SIGKILL)
    assert run.wait(timeout=60) == -9 and run.returncode == -9 and run.poll() == -9
    out, err = run.communicate(timeout=10)  # the task lines printed before the kill (no -q), nothing else
    assert err == "" and all(line.startswith(".  ") for line in out.splitlines()), (out, err)
    with contextlib.suppress(ProcessLookupError):  # the system starts its own group (evalkit's command adapter)
        os.killpg(os.getpgid(system), signal.SIGKILL)
    assert zygote.python_m_evalkit(["check"], project.parent, _env(project), timeout=300).returncode == 0
