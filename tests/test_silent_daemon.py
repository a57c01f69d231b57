"""A Docker daemon that accepts connections and never answers (hung): asked once, with a short deadline, then taken as
silent for a while, so a run ends in seconds with infrastructure errors instead of waiting docker-py's 120 s on every
call (a one-case run used to take over 15 minutes). Against a real socket on 127.0.0.1 (tests/fake_docker.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from evalkit.sandbox import daemon, dockerclient, images, silence
from fake_docker import silent_server, stalling_daemon
from helpers import evalkit, patch_project, refused_port


@pytest.fixture
def fresh_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's own memory of silent daemons and its own client (the process may hold one for the real daemon)."""
    monkeypatch.setattr(silence, "_silent_until", {})
    monkeypatch.setattr(silence, "ANSWER_S", 1)
    monkeypatch.setattr(dockerclient._local, "client", None, raising=False)


def timed(call):
    start = time.monotonic()
    try:
        return call(), time.monotonic() - start
    except Exception as exc:  # noqa: BLE001 - the test looks at what was raised, and when
        return exc, time.monotonic() - start


def test_a_silent_daemon_is_asked_once_then_each_call_fails_at_once(fresh_memory: None,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with silent_server() as server:
        host = server.host
        monkeypatch.setenv("DOCKER_HOST", host)
        answer, took = timed(dockerclient.docker_available)
        assert answer is False and 0.9 <= took < 30, took  # the handshake's deadline, not docker-py's 120 s
        assert silence.silent_for() > 50
        asked = server.connections

        assert dockerclient.docker_available() is False
        raised = timed(lambda: images.image_id("evalkit/python-pytest:bookworm"))[0]
        assert isinstance(raised, dockerclient.DaemonSilent), raised  # raised before any request is sent
        time.sleep(0.3)  # a connection either call made would be accepted by now
        assert server.connections == asked  # not asked again
        assert isinstance(raised, dockerclient.DOCKER_FAILURES)  # every handler of the daemon's failures takes it
        assert host in str(raised) and "did not answer within 1 s" in str(raised)

        answer, took = timed(lambda: dockerclient.docker_available(again=True))
        assert answer is False and took >= 0.9, took  # asked again on purpose (conftest's retries)

        monkeypatch.setattr(silence, "RECHECK_S", 0.3)
        silence.note_silent()
        time.sleep(0.4)
        answer, took = timed(dockerclient.docker_available)
        assert answer is False and took >= 0.9, took  # the memory ran out: asked again
        monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{refused_port()}")
        assert silence.silent_for() == 0  # per daemon: another host is asked


def test_the_runs_first_ping_records_a_silent_daemon_and_not_a_missing_one(fresh_memory: None,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{refused_port()}")
    assert daemon.daemon_answers(timeout=1) is False and silence.silent_for() == 0  # refused: fails at once anyway
    with silent_server() as server:
        monkeypatch.setenv("DOCKER_HOST", server.host)
        answer, took = timed(lambda: daemon.daemon_answers(timeout=1))
        assert answer is False and 0.9 <= took < 30, took
        raised = timed(dockerclient.client)[0]
        assert isinstance(raised, dockerclient.DaemonSilent), raised


def test_a_daemon_that_hangs_after_answering_is_marked_by_the_first_call_past_its_deadline(
        fresh_memory: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A daemon that hangs mid-run: the first ordinary call that misses the client's deadline marks it silent, so the
    rest of the run does not wait that deadline once per call. A call with a deadline of its own (waiting for a
    container: the test's timeout) that runs out says nothing about the daemon."""
    monkeypatch.setattr(dockerclient, "CALL_S", dockerclient.CallDeadline(1))
    with stalling_daemon() as host:
        monkeypatch.setenv("DOCKER_HOST", host)
        assert dockerclient.docker_available() is True  # it answers its ping
        cli = dockerclient.client()
        raised, took = timed(lambda: cli.api.wait("some-container", timeout=1))
        assert isinstance(raised, dockerclient.DOCKER_FAILURES) and 0.9 <= took < 30, (raised, took)
        assert silence.silent_for() == 0  # the test's own timeout ran out, not the daemon's answer

        raised, took = timed(lambda: images.image_id("evalkit/python-pytest:bookworm"))
        assert isinstance(raised, dockerclient.DOCKER_FAILURES) and 0.9 <= took < 30, (raised, took)
        assert not isinstance(raised, dockerclient.DaemonSilent) and silence.silent_for() > 50
        raised = timed(lambda: images.image_id("evalkit/python-pytest:bookworm"))[0]
        assert isinstance(raised, dockerclient.DaemonSilent), raised  # raised before any request is sent


@pytest.mark.parametrize("backend, status, bound", [("docker", 5, 60), ("auto", 0, 150)])
def test_a_run_on_a_hung_daemon_ends_within_seconds(tmp_path: Path, backend: str, status: int, bound: int) -> None:
    """``docker``: each execution is an infrastructure error naming the silent daemon (exit 5, retry). ``auto``: the
    first ping finds no daemon, so the suite (marked trusted) runs on the host (35 s of it under a whole parallel
    run, hence its bound). The old code waited 120 s on each Docker call after the first ping, at least twice: the
    run took longer than this test's whole timeout."""
    project = patch_project(tmp_path / "proj", backend=backend, cases=["slug-lowercase"], systems=("gold",))
    with silent_server() as server:
        host = server.host
        start = time.monotonic()
        proc = evalkit(project, "run", "-q", env={"DOCKER_HOST": host}, check=False, timeout=170)
        took = time.monotonic() - start
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert took < bound, took
    assert "Traceback" not in proc.stdout + proc.stderr
    if backend == "docker":
        assert f"the Docker daemon at {host} did not answer within 10 s" in proc.stderr
    else:
        sandbox = json.loads((project / "site" / "r1" / "report.json").read_text())["sandbox"]
        assert sandbox["chosen"] == "local" and "no Docker daemon answered when the run started" in sandbox["reason"]


def test_check_warns_about_a_hung_daemon_within_seconds(tmp_path: Path) -> None:
    project = patch_project(tmp_path / "proj", cases=["slug-lowercase"], systems=("gold",))
    with silent_server() as server:
        start = time.monotonic()
        proc = evalkit(project, "check", env={"DOCKER_HOST": server.host}, check=False, timeout=110)
        took = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Docker does not answer, so the sandbox image evalkit/python-pytest:bookworm was not checked" in (
        proc.stdout + proc.stderr)
    assert took < 40, took
