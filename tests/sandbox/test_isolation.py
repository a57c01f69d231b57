"""One isolation per run, and what the local backend holds to (issue 19, points 2 and 3).

Regressions: with `backend: auto` a daemon dying mid-run sent later executions to the host
(38 of 43); the local backend ran tests as root, let them write outside the tree and fork 2000
processes; killed runs left `evalkit-run-*` folders in the temp directory for good.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evalkit import isolation, procs, tempdirs
from evalkit.sandbox import daemon, local_backend, local_user, run_tests
from evalkit.sandbox.images import DEFAULT_BASE_IMAGE
from evalkit.sandbox.runner import resolve_backend

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import REPO, evalkit, without_plugin_autoload  # noqa: E402


# ---- decided once ------------------------------------------------------------------------------

def test_auto_is_decided_once_and_kept_when_the_daemon_goes_away(monkeypatch) -> None:
    answers = iter([True, False, False, False])
    monkeypatch.setattr(daemon, "daemon_answers", lambda: next(answers))
    isolation.forget()
    try:
        first = isolation.for_run("auto")
        assert first.isolation == "docker" and "answered" in first.reason
        # the daemon is gone now: the run keeps Docker (and gets infra errors), never the host
        assert resolve_backend("auto") == "docker"
        assert isolation.for_run("auto") is first
        isolation.forget()  # a new run decides again
        assert isolation.for_run("auto").isolation == "local"
    finally:
        isolation.forget()


def test_the_start_of_run_ping_speaks_to_the_socket_docker_host_names(tmp_path: Path, monkeypatch) -> None:
    import socket
    import threading

    path = str(tmp_path / "d.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(2)
    seen = []

    def answer() -> None:
        for status in (b"200 OK", b"500 Internal Server Error"):
            conn, _ = server.accept()
            seen.append(conn.recv(4096))
            conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Length: 2\r\n\r\nOK")
            conn.close()

    threading.Thread(target=answer, daemon=True).start()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    assert daemon.daemon_answers() is True
    assert daemon.daemon_answers() is False  # a daemon that answers 500 is not a daemon to run on
    assert seen[0].startswith(b"GET /_ping ")
    server.close()
    assert daemon.daemon_answers(timeout=2) is False  # nothing listens any more
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    assert isolation.decide("auto").isolation == "local"


def test_untrusted_suites_are_refused_on_the_host_only_under_auto() -> None:
    auto_local = isolation.IsolationDecision(backend="auto", isolation="local", reason="no daemon")
    why = isolation.refusal(auto_local, "third-party", trusted=False)
    assert why and "not marked trusted" in why and "sandbox.backend: local" in why
    assert isolation.refusal(auto_local, "demo", trusted=True) is None
    explicit = isolation.IsolationDecision(backend="local", isolation="local", reason="asked")
    assert isolation.refusal(explicit, "third-party", trusted=False) is None
    docker = isolation.IsolationDecision(backend="auto", isolation="docker", reason="answered")
    assert isolation.refusal(docker, "third-party", trusted=False) is None


def _two_suites(root: Path) -> Path:
    """The demo patch suite twice, one case each: `trusted` as shipped, and `untrusted` without the mark."""
    for name, trusted in (("trusted", True), ("untrusted", False)):
        dest = root / "cases" / name
        shutil.copytree(REPO / "cases" / "patch", dest)
        for case in dest.iterdir():
            if case.is_dir() and case.name not in ("_src", "parse-thousands"):
                shutil.rmtree(case)
        spec = (dest / "suite.yaml").read_text()
        if not trusted:
            spec = "\n".join(line for line in spec.splitlines() if not line.startswith("trusted:")) + "\n"
        assert ("trusted: true" in spec) == trusted
        (dest / "suite.yaml").write_text(spec)
        without_plugin_autoload(dest / "suite.yaml")  # the trusted suite's runs on the host: 3 s of CPU less each
    shutil.copytree(REPO / "templates", root / "templates")
    (root / "evalkit.yaml").write_text(textwrap.dedent("""\
        release: r1
        templates_dir: templates
        systems:
          - name: gold
            adapter: gold
        sandbox:
          backend: auto
        """))
    return root


def _execution(root: Path, suite: str) -> dict:
    return json.loads((root / ".evalkit" / "artifacts" / "gold" / suite / "parse-thousands" / "execution.json").read_text())


@pytest.mark.docker
def test_auto_without_a_daemon_runs_only_trusted_suites_and_a_daemon_later_reruns_all_in_docker(
        tmp_path: Path, docker_engine) -> None:
    root = _two_suites(tmp_path / "p")
    no_daemon = {"DOCKER_HOST": f"unix://{tmp_path}/no-daemon.sock"}
    first = evalkit(root, "run", env=no_daemon, timeout=600, check=False)
    assert first.returncode == 6, first.stderr  # an environment failure: no Docker daemon (issue 27)
    assert "environment failure: no Docker daemon" in first.stderr
    trusted, untrusted = _execution(root, "trusted"), _execution(root, "untrusted")
    assert trusted["status"] == "ok" and trusted["isolation"] == "local", trusted["reason"]
    assert trusted["runs"][0]["resolved"] is True
    assert untrusted["status"] == "infra_error" and untrusted["isolation"] is None
    assert "not marked trusted" in untrusted["reason"]
    report = json.loads((root / "site" / "r1" / "report.json").read_text())
    assert report["sandbox"]["isolation"] == "local" and report["sandbox"]["backend"] == "auto"
    page = (root / "site" / "r1" / "index.html").read_text()
    top = page.index('id="isolation-notice"')
    assert "Ran without Docker" in page[top:top + 300] and top < page.index('id="h-systems"')
    assert report["images"] == [] and 'id="sandbox-images"' not in page  # no image was used: no table of them
    # nothing of the untrusted suite ran on the host, validation included
    validation = json.loads((root / ".evalkit" / "validation" / "untrusted" / "parse-thousands.json").read_text())
    assert validation["status"] == "infra_error"

    # The daemon answers at the next run's start: the decision changed, so execute reruns everywhere.
    evalkit(root, "run", timeout=600)
    for suite in ("trusted", "untrusted"):
        art = _execution(root, suite)
        assert art["status"] == "ok" and art["isolation"] == "docker", (suite, art["reason"])
        assert art["runs"][0]["resolved"] is True
    report = json.loads((root / "site" / "r1" / "report.json").read_text())
    assert report["sandbox"]["isolation"] == "docker"
    assert [(i["name"], i["present"]) for i in report["images"]] == [(DEFAULT_BASE_IMAGE, True)]
    assert 'id="isolation-notice"' not in (root / "site" / "r1" / "index.html").read_text()


# ---- the local backend's user and limits --------------------------------------------------------

PROBE_SCRIPT = r"""
echo "UID=$(id -u)"
echo "TMPDIR=$TMPDIR"
( echo x > /root/evalkit-escape ) 2>/dev/null && echo WROTE_ROOT
( echo x > {host_tree}/escape ) 2>/dev/null && echo WROTE_HOST_TREE
( head -c 3000000 /dev/zero > "$TMPDIR/big" ) 2>/dev/null
wc -c < "$TMPDIR/big" > "$TMPDIR/size"; read size < "$TMPDIR/size"; echo "BIG=$size"
( i=0; while [ $i -lt 2000 ]; do sleep 60 </dev/null >/dev/null 2>&1 & i=$((i+1)); echo $i > "$TMPDIR/n"; done ) 2>/dev/null
read n < "$TMPDIR/n"; echo "FORKS=$n"
"""


def test_local_backend_runs_unprivileged_with_its_limits_and_names_them(spec_for, demo_tree, monkeypatch) -> None:
    monkeypatch.setattr(local_backend, "FILE_SIZE_LIMIT", 1 << 20)
    command = PROBE_SCRIPT.format(host_tree=demo_tree)
    spec = spec_for(test_command=command, limits={"pids": 40, "timeout_s": 60})
    r = run_tests(spec, "local")
    printed = r.log.split("===== main: test output =====", 1)[-1]
    out = dict(line.split("=", 1) for line in printed.splitlines() if "=" in line and line.split("=", 1)[0].isupper())
    if os.geteuid() == 0:
        assert out["UID"] != "0", r.log  # dropped to the sandbox's own user
    else:  # evalkit's own user (shown as 0 inside `unshare -rn`'s user namespace)
        assert f"uid {os.geteuid()} (evalkit's own user)" in r.reason
    assert "WROTE_ROOT" not in printed and "WROTE_HOST_TREE" not in printed
    assert not (demo_tree / "escape").exists() and not Path("/root/evalkit-escape").exists()
    assert out["TMPDIR"].startswith(tempfile_dir()) and "evalkit-sbx-" in out["TMPDIR"]
    assert int(out["BIG"]) == 1 << 20  # the file size limit cut the write
    assert "1 MiB per file" in r.reason
    if os.geteuid() == 0:
        assert 0 < int(out["FORKS"]) < 40 + 5, out["FORKS"]  # 2000 asked for
        assert "a uid of its own" in r.reason and "40 processes" in r.reason
    else:  # RLIMIT_NPROC counts the user's other processes too
        assert 0 < int(out["FORKS"]) < 2000, out["FORKS"]
    assert "not applied: " in r.reason and "CPU quota" in r.reason
    # every process the tests left (60 s sleeps) is gone with the phase
    if os.geteuid() == 0:
        assert local_user.kill_uid(int(out["UID"])) == 0


def tempfile_dir() -> str:
    import tempfile

    return tempfile.gettempdir()


def test_the_probe_names_every_limit_it_could_not_apply(tmp_path: Path) -> None:
    ident = local_user.Identity()
    local_user.probe(ident, [], None, tmp_path, 1024, 256)  # started with no limit of ours at all
    if resource.getrlimit(resource.RLIMIT_FSIZE)[0] == resource.RLIM_INFINITY:
        assert "file size limit" in ident.missing
    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        assert "memory limit" in ident.missing
    if os.geteuid() == 0:
        assert any(m.startswith("unprivileged user") for m in ident.missing)
        assert "process limit (not enforced for root)" in ident.missing
    assert "not applied:" in local_user.note(ident)


@pytest.mark.skipif(os.geteuid() != 0, reason="the drop to a sandbox user happens only when evalkit runs as root")
def test_a_test_program_out_of_reach_is_masked_in_or_root_is_kept_with_the_reason(tmp_path: Path) -> None:
    private = tmp_path / "private"
    (private / "bin").mkdir(parents=True)
    tool = private / "bin" / "mytest"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    private.chmod(0o700)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{private / 'bin'}:{old}"
    try:
        # the sandbox's own folder inside the folder that blocks the way: no mask can help
        kept = local_user.choose("mytest -q", keep=str(private / "sandbox"))
        assert kept.uid is None and str(tool) in kept.stay_reason
        # else the tests get a mount namespace where only the program's branch of that folder is left
        masked = local_user.choose("mytest -q", keep="/var/tmp/elsewhere")
        if not local_user.mount_namespace_available():  # no CAP_SYS_ADMIN here: root is kept, as above
            assert masked.uid is None and str(tool) in masked.stay_reason
            return
        assert masked.uid is not None and len(masked.masks) == 1
        folder, kept_branch = masked.masks[0]
        assert str(tool).startswith(kept_branch + "/") and os.path.dirname(kept_branch) == folder
        dropped = local_user.choose("sh -c true")
        assert dropped.uid is not None and dropped.uid >= local_user.UID_BASE
    finally:
        os.environ["PATH"] = old


# ---- sweeping what killed runs left ------------------------------------------------------------

def test_the_next_run_sweeps_folders_of_dead_owners_only(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    start = procs.start_time(dead.pid)
    dead.wait()
    dead_dirs = [tmp_path / f"{kind}{dead.pid}.{start}-abc" for kind in tempdirs.PREFIXES]
    mine = tmp_path / (tempdirs.prefix("evalkit-run-") + "live")
    old_unstamped, new_unstamped = tmp_path / "evalkit-run-x1y2", tmp_path / "evalkit-sbx-z3"
    unrelated = tmp_path / "evalkit-runner-cache"
    for d in [*dead_dirs, mine, old_unstamped, new_unstamped, unrelated]:
        (d / "sub").mkdir(parents=True)
        (d / "sub" / "f").write_text("x")
    (dead_dirs[1] / "sub").chmod(0o500)  # a read-only folder inside does not stop the sweep (as root)
    past = time.time() - tempdirs.UNSTAMPED_MAX_AGE_S - 60
    os.utime(old_unstamped, (past, past))
    removed = tempdirs.sweep(tmp_path)
    assert mine.exists() and new_unstamped.exists() and unrelated.exists()
    assert not old_unstamped.exists()
    gone = [d for d in dead_dirs if not d.exists()]
    if os.geteuid() != 0:  # an unprivileged sweeper cannot empty a read-only folder
        (dead_dirs[1] / "sub").chmod(0o700)
        dead_dirs = [d for d in dead_dirs if d != dead_dirs[1]]
    assert all(not d.exists() for d in dead_dirs), removed
    assert set(removed) >= {d.name for d in gone} | {old_unstamped.name}


SPAWNS_AWAY = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], cwd="/", env={})
print(child.pid, flush=True)
time.sleep(300)
"""
"""A command system that starts a process outside its folder, with an empty environment, and prints its pid."""


def test_the_sweep_kills_what_still_works_for_a_dead_owners_folder_only(tmp_path: Path) -> None:
    """A process whose working directory is in a dead owner's folder, or whose environment names a path in it,
    is killed (and reported) before the folder is removed; one working in a live owner's folder is not."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    start = procs.start_time(dead.pid)
    dead.wait()
    dead_dir = tmp_path / f"evalkit-run-{dead.pid}.{start}-abc"
    live_dir = tmp_path / (tempdirs.prefix("evalkit-run-") + "live")
    dead_dir.mkdir()
    live_dir.mkdir()
    sleep = [sys.executable, "-c", "import time; time.sleep(300)"]
    case_env = {**os.environ, "EVALKIT_CASE": str(dead_dir / "case.json")}
    in_dead = subprocess.Popen(sleep, cwd=dead_dir)
    named = subprocess.Popen(sleep, cwd=tmp_path, env=case_env)
    in_live = subprocess.Popen(sleep, cwd=live_dir)
    # a command system leads a session of its own; what it starts may leave the folder and drop the environment
    leader = subprocess.Popen([sys.executable, "-c", SPAWNS_AWAY], cwd=tmp_path, env=case_env, start_new_session=True,
                              stdout=subprocess.PIPE, text=True)
    assert leader.stdout is not None
    away = int(leader.stdout.readline())
    try:
        assert procs.environ(away) == [] and os.readlink(f"/proc/{away}/cwd") == "/"
        killed: list[tempdirs.Stray] = []
        removed = tempdirs.sweep(tmp_path, killed=killed.append)
        assert sorted(s.pid for s in killed) == sorted([in_dead.pid, named.pid, leader.pid, away]), killed
        assert {s.folder for s in killed} == {str(dead_dir)} and all("time.sleep(300)" in s.command for s in killed), killed
        assert all(proc.wait(timeout=10) == -9 for proc in (in_dead, named, leader))
        deadline = time.monotonic() + 10  # as the waits above: SIGKILL takes effect asynchronously
        while procs.alive(away) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not procs.alive(away)
        assert in_live.poll() is None and live_dir.is_dir()
        assert removed == [dead_dir.name] and not dead_dir.exists()
    finally:
        for proc in (in_dead, named, in_live, leader):
            proc.kill()
            proc.wait()
        if procs.alive(away):
            os.kill(away, 9)


def test_a_killed_owner_not_yet_reaped_is_dead(tmp_path: Path) -> None:
    """An owner killed and not yet reaped by its parent (a zombie: a Dask worker the test or a supervisor killed)
    still has its /proc entry and start time; it owns nothing: what still works for its folder is killed."""
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    folder = tmp_path / f"evalkit-run-{owner.pid}.{procs.start_time(owner.pid)}-abc"
    folder.mkdir()
    left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], cwd=folder)
    try:
        assert tempdirs.owner_alive(folder.name) is True
        owner.kill()
        deadline = time.monotonic() + 10
        while (procs.stat(owner.pid) or ("",))[0] != "Z" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert procs.stat(owner.pid) is not None and procs.start_time(owner.pid) is not None  # a zombie, not reaped
        assert tempdirs.owner_alive(folder.name) is False
        killed: list[tempdirs.Stray] = []
        assert tempdirs.sweep(tmp_path, killed=killed.append) == [folder.name]
        assert [s.pid for s in killed] == [left.pid] and left.wait(timeout=10) == -9
    finally:
        for proc in (owner, left):
            proc.kill()
            proc.wait()


def test_a_killed_run_leaves_a_work_folder_that_the_next_run_removes(tmp_path: Path) -> None:
    """kill -9 of a command system's run (evalkit itself): its `evalkit-run-<pid>.*` folder stays; the next run sweeps it."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = textwrap.dedent(f"""
        import os, tempfile, time
        tempfile.tempdir = {str(tmp)!r}
        from evalkit import procs, tempdirs
        d = tempfile.mkdtemp(prefix=tempdirs.prefix("evalkit-run-"))
        print(d, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    folder = Path(proc.stdout.readline().strip())
    assert folder.is_dir()
    assert tempdirs.sweep(tmp) == []  # its owner lives
    proc.kill()
    proc.wait()
    assert tempdirs.sweep(tmp) == [folder.name]
    assert not folder.exists()
