"""A Docker daemon stopped mid-run (issue 19, point 2): no execution falls back to the host.

A second dockerd on its own socket (its own data and exec roots, no bridge, no iptables) gets the
sandbox image (`docker save` from the main daemon, `docker load` into it); evalkit runs the demo
patch suite against it with `sandbox.backend: auto` and the daemon is stopped once the first
execution is written. Every execution.json must then say `docker`, or be an infrastructure error
(retried next run): none `local`. Once the daemon is back, a rerun completes every case in Docker.
Needs root and dockerd (CI has both); skips without them unless EVALKIT_REQUIRE_DOCKER=1.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from evalkit.artifacts import RETRY_SUFFIX

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import patch_project  # noqa: E402

pytestmark = pytest.mark.docker
IMAGE = os.environ.get("EVALKIT_SANDBOX_IMAGE", "evalkit/python-pytest:bookworm")
SYSTEMS = ("gold", "empty", "patch-bot")


def _unavailable(reason: str) -> None:
    if os.environ.get("EVALKIT_REQUIRE_DOCKER") == "1":
        pytest.fail(f"EVALKIT_REQUIRE_DOCKER=1 but {reason}")
    pytest.skip(reason)


class SecondDaemon:
    """A dockerd of our own, started and stopped by the test (never the main one)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.sock = base / "d.sock"
        self.host = f"unix://{self.sock}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        log = open(self.base / "dockerd.log", "ab")
        self.proc = subprocess.Popen(
            ["dockerd", "--host", self.host, "--data-root", str(self.base / "data"),
             "--exec-root", str(self.base / "x"), "--pidfile", str(self.base / "d.pid"), "--bridge", "none",
             "--iptables=false", "--ip-masq=false", "--ip-forward=false", "--userland-proxy=false"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dockerd exited {self.proc.returncode}: {self.log_tail()}")
            if subprocess.run(["docker", "-H", self.host, "version"], capture_output=True).returncode == 0:
                return
            time.sleep(0.3)
        raise RuntimeError(f"dockerd did not answer within 60 s: {self.log_tail()}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def log_tail(self) -> str:
        try:
            return (self.base / "dockerd.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""


@pytest.fixture
def second_daemon(docker_engine):
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        _unavailable("a second dockerd needs root and the dockerd binary")
    base = Path(tempfile.mkdtemp(prefix="ek-dd-", dir="/tmp"))  # short: containerd's socket path is limited
    daemon = SecondDaemon(base)
    try:
        try:
            daemon.start()
        except RuntimeError as exc:
            _unavailable(str(exc))
        save = subprocess.Popen(["docker", "save", IMAGE], stdout=subprocess.PIPE)
        load = subprocess.run(["docker", "-H", daemon.host, "load"], stdin=save.stdout, capture_output=True, text=True)
        save.stdout.close()
        assert save.wait() == 0 and load.returncode == 0, load.stderr
        yield daemon
    finally:
        daemon.stop()
        subprocess.run(["umount", "-R", str(base / "x")], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def _run(root: Path, host: str) -> subprocess.Popen:
    env = {**os.environ, "EVALKIT_CONFIG": str(root / "evalkit.yaml"), "DOCKER_HOST": host}
    env.pop("EVALKIT_RELEASE", None)
    return subprocess.Popen([sys.executable, "-m", "evalkit", "run"], cwd=str(root.parent), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _executions(root: Path) -> dict[str, dict]:
    found = {}
    for path in sorted((root / ".evalkit" / "artifacts").glob("*/patch/*/execution.json")):
        found[f"{path.parts[-4]}/{path.parts[-2]}"] = json.loads(path.read_text())
    return found


def test_a_daemon_stopped_mid_run_sends_nothing_to_the_host_and_a_rerun_completes_in_docker(
        tmp_path: Path, second_daemon: SecondDaemon) -> None:
    root = patch_project(tmp_path / "p", backend="auto")
    n_cases = sum(1 for d in (root / "cases" / "patch").iterdir() if d.is_dir() and not d.name.startswith("_"))
    run = _run(root, second_daemon.host)
    end = time.monotonic() + 600
    while not any(a.get("isolation") == "docker" for a in _executions(root).values()):
        assert run.poll() is None, f"the run ended before any execution: {run.stdout.read()[-3000:]}"
        assert time.monotonic() < end, "no execution within 10 minutes"
        time.sleep(0.2)
    second_daemon.stop()  # mid-run: later executions find no daemon
    out, _ = run.communicate(timeout=900)
    assert "Traceback" not in out, out[-3000:]

    runs = _executions(root)
    assert len(runs) == len(SYSTEMS) * n_cases, sorted(runs)
    by_isolation = {key: (a["status"], a.get("isolation")) for key, a in runs.items()}
    on_host = {k: v for k, v in by_isolation.items() if v[1] == "local"}
    assert not on_host, f"executed on the host after the daemon stopped: {on_host}"
    infra = [k for k, (status, _iso) in by_isolation.items() if status == "infra_error"]
    assert infra, "the daemon was stopped too late to matter: no execution was affected"
    assert all(s == "infra_error" or iso == "docker" for s, iso in by_isolation.values()), by_isolation
    print(f"\ndaemon stopped mid-run: {len(runs) - len(infra)} executions in Docker, {len(infra)} infrastructure "
          "errors, 0 on the host")
    for key in infra:  # marked to be redone by the next run
        system, case = key.split("/")
        assert Path(f"{root}/.evalkit/artifacts/{system}/patch/{case}/execution.json{RETRY_SUFFIX}").exists(), key
    report = json.loads((root / "site" / "r1" / "report.json").read_text())
    assert report["sandbox"]["isolation"] == "docker"

    second_daemon.start()  # the same data root: the image is still there
    rerun = _run(root, second_daemon.host)
    out, _ = rerun.communicate(timeout=900)
    assert rerun.returncode == 0, out[-3000:]
    runs = _executions(root)
    assert len(runs) == len(SYSTEMS) * n_cases
    bad = {k: (a["status"], a.get("isolation"), a.get("reason", "")[:200]) for k, a in runs.items()
           if a["status"] != "ok" or a.get("isolation") != "docker"}
    assert not bad, bad
    resolved = {k: a["runs"][0]["resolved"] for k, a in runs.items()}
    assert all(resolved[f"gold/{c}"] for c in {k.split("/")[1] for k in resolved})
    assert not any(v for k, v in resolved.items() if k.startswith("empty/"))
