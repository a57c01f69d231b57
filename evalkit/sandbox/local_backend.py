"""Local sandbox: the runner in a subprocess on a temporary copy of the tree (weaker isolation).

Limits are rlimits (address space, processes, file size) set in the child; run as root, the
tests run as a uid of the sandbox's own (``local_user``: the tree is chowned to it, ctl/ stays
root's) in a network namespace of their own, and every process of that uid is killed after each
phase; otherwise the whole process group is killed at the timeout and the network is cut with
``unshare -rn`` where the kernel allows it. A probe measures what holds: the reason names every
limit that could not be applied.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Literal

from evalkit import procs, tempdirs
from evalkit.sandbox import guards, local_user
from evalkit.sandbox.archive import SKIP_DIRS
from evalkit.sandbox.phase import PhaseOutcome, SandboxError, new_nonce
from evalkit.sandbox.script import RESULTS_DIR, RESULTS_MODE, RESULTS_OWNER, ControlFiles, sentinel_secret
from evalkit.sandbox.spec import TestRunSpec

#: Largest file the tests may write (RLIMIT_FSIZE).
FILE_SIZE_LIMIT = 1 << 30
#: Bytes read at most from one result file (JUnit report, runner messages).
RESULT_FILE_CAP = 64 << 20


@functools.lru_cache(maxsize=1)
def network_namespace_available() -> bool:
    """Whether ``unshare -rn`` works here (user + network namespaces permitted)."""
    if shutil.which("unshare") is None:
        return False
    try:
        done = subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _user_process_count() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except FileNotFoundError:
                continue
    return count


def _force_remove(path: Path) -> None:
    """Remove ``path`` (file, link or folder) even after a test made parts of it read-only."""
    def fix(_func, p, _exc) -> None:
        parent = os.path.dirname(p)
        os.chmod(parent, 0o700)
        if os.path.isdir(p) and not os.path.islink(p):
            os.chmod(p, 0o700)
            shutil.rmtree(p, onerror=fix)
        elif os.path.lexists(p):
            os.unlink(p)

    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        os.chmod(path, 0o700)
        shutil.rmtree(path, onerror=fix)


def write_control(ctl: Path, files: dict[str, str], nonce: str, sentinel: str | None = None) -> None:
    """ctl/ afresh from the host's copy for one phase, read-only but for secret/ (the runner deletes
    the nonce there, evalkit's pytest plugin its ``sentinel``): whatever a test did to ctl/ in an
    earlier phase is gone."""
    _force_remove(ctl)
    (ctl / "secret").mkdir(parents=True, mode=0o700)
    for name, text in files.items():
        (ctl / name).write_text(text, encoding="utf-8")
        (ctl / name).chmod(0o444)
    (ctl / "secret" / "nonce").write_text(nonce, encoding="utf-8")
    if sentinel is not None:
        (ctl / "secret" / "sentinel").write_text(sentinel, encoding="utf-8")
    ctl.chmod(0o555)


class LocalSandbox:
    """A temporary folder with the tree copy and control files; removed on close."""

    isolation: Literal["local"] = "local"

    def __init__(self, spec: TestRunSpec, ctl: ControlFiles) -> None:
        self.spec = spec
        self.image_digest: str | None = None
        self.notes: list[str] = ["local backend: the tests ran on this host in a subprocess, not in a container"]
        self.root = Path(tempfile.mkdtemp(prefix=tempdirs.prefix("evalkit-sbx-")))
        try:
            shutil.copytree(spec.tree, self.root / "tree", symlinks=True,
                            ignore=lambda _d, names: [n for n in names if n in SKIP_DIRS])
            for sub in ("out", "home"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
            self.ctl = ctl
        except OSError as exc:
            self.close()
            raise SandboxError(f"cannot prepare the local sandbox: {exc}") from exc
        # Who the tests run as and which limits hold (evalkit.sandbox.local_user): measured by a probe.
        self.identity = local_user.choose(spec.test_command, str(self.root))
        if spec.patch is not None and not spec.patch_trusted and self.identity.uid is None and guards.on("local_uid"):
            why = self.identity.stay_reason or "evalkit does not run as root, so it cannot give the tests a user of their own"
            self.close()
            raise SandboxError("the local backend runs a system's patch (untrusted, whatever the suite's `trusted:` "
                               f"says) only as a user of its own, which is not possible here: {why}; run it in Docker")
        self.root_netns = os.geteuid() == 0  # root enters a network namespace itself, then drops to the sandbox's uid
        self.unshare = not self.root_netns and network_namespace_available()
        try:
            (self.root / "tmp").mkdir()
            results = self.root / RESULTS_DIR  # evalkit's pytest plugin writes here: not listable by the tests
            results.mkdir()
            results.chmod(RESULTS_MODE)
            if self.identity.uid is not None:
                os.chown(results, RESULTS_OWNER, RESULTS_OWNER)
                self.root.chmod(0o711)  # mkdtemp's 0700: the sandbox's user must pass through
                for sub in ("tree", "out", "home", "tmp"):  # the root folder and ctl/ stay root's
                    local_user.chown_tree(self.root / sub, self.identity.uid)
        except OSError as exc:
            self.close()
            raise SandboxError(f"cannot prepare the local sandbox: {exc}") from exc
        local_user.probe(self.identity, ["unshare", "-rn"] if self.unshare else [], self._preexec(), self.root,
                         spec.limits.memory_mb, spec.limits.pids)
        self.notes.append(local_user.note(self.identity))

    def __enter__(self) -> LocalSandbox:
        return self

    def _preexec(self):
        lim = self.spec.limits
        nproc = lim.pids if self.identity.uid is not None else _user_process_count() + lim.pids
        return local_user.preexec(self.identity, lim.memory_mb, nproc, FILE_SIZE_LIMIT, self.root_netns,
                                  str(self.root / "mnt"))

    def __exit__(self, *exc) -> None:
        self.close()

    def run_phase(self, phase: str, command: str | None) -> PhaseOutcome:
        nonce = new_nonce()
        files = {**self.ctl.files, "phase": f"{phase}\n"}
        if command is not None:
            files[f"{phase}.cmd"] = command + "\n"
        prefix = new_nonce()
        secret = None if self.ctl.sentinel is None else \
            sentinel_secret(str(self.root / RESULTS_DIR / prefix), str(self.root / "tree"), self.ctl.sentinel)
        try:
            write_control(self.root / "ctl", files, nonce, secret)
        except OSError as exc:
            raise SandboxError(f"cannot write the control files: {exc}") from exc
        if self.identity.uid is not None:  # the runner reads and deletes its nonce; the rest of ctl/ stays root's
            for path in (self.root / "ctl" / "secret").glob("*"):
                os.chown(path, self.identity.uid, self.identity.uid)
            os.chown(self.root / "ctl" / "secret", self.identity.uid, self.identity.uid)
        # The script itself is passed in memory: a test rewriting ctl/run.sh changes nothing.
        argv = ["/bin/sh", "-c", self.ctl.files["run.sh"], "evalkit-runner", str(self.root)]
        if self.unshare:
            argv = ["unshare", "-rn", *argv]
        lim = self.spec.limits
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root / "home"),
            "TMPDIR": str(self.root / "tmp"),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",  # output reaches the log as it is printed (kept on a timeout)
        }
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv, cwd=self.root / "tree", env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=self._preexec(),
            )
        except OSError as exc:
            raise SandboxError(f"cannot start the local runner: {exc}") from exc
        output = bytearray()
        reader = threading.Thread(target=self._drain, args=(proc.stdout, output, lim.log_limit_bytes), daemon=True)
        reader.start()
        exited = procs.wait_exited(proc, lim.timeout_s)
        group = procs.Group(proc)
        group.kill()  # no test process outlives its phase; killed before the reap, while the group id is the runner's
        returned = group.reap()
        state: Literal["exited", "timeout", "oom"] = "exited" if exited else "timeout"
        code = returned if exited else None
        if self.identity.uid is not None:
            local_user.kill_uid(self.identity.uid)  # nor one that left the group: it still has the sandbox's uid
        reader.join(timeout=5)
        outcome = PhaseOutcome(phase, nonce, state, code, duration_s=time.monotonic() - t0)
        # After a timeout too: what the run printed before the kill is in out/<phase>/ (the log's head).
        outcome.files, outcome.files_capped = self._read_out(phase)
        outcome.sentinel = self._read_sentinel(prefix)
        if state == "exited":
            if "runner.txt" not in outcome.files:
                outcome.crash_output = bytes(output)
        return outcome

    @staticmethod
    def _drain(stream: IO[bytes], out: bytearray, cap: int) -> None:
        for chunk in iter(lambda: stream.read(65536), b""):
            if len(out) < cap:
                out += chunk[: cap - len(out)]
        stream.close()

    def _read_out(self, phase: str) -> tuple[dict[str, bytes], bool]:
        base = self.root / "out" / phase
        files: dict[str, bytes] = {}
        capped = False
        budget = self.spec.limits.log_limit_bytes + RESULT_FILE_CAP
        for path in sorted(base.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            with open(path, "rb") as fh:
                data = fh.read(budget + 1)
            if len(data) > budget:
                capped = True
                break
            budget -= len(data)
            files[path.relative_to(base).as_posix()] = data
        return files, capped

    def _read_sentinel(self, prefix: str) -> list[bytes]:
        out = []
        for path in sorted((self.root / RESULTS_DIR).glob(prefix + "-*.json")):
            if path.is_file() and not path.is_symlink():
                with open(path, "rb") as fh:
                    out.append(fh.read(RESULT_FILE_CAP))
        return out

    def close(self) -> None:
        identity = getattr(self, "identity", None)
        if identity is not None and identity.uid is not None:
            local_user.kill_uid(identity.uid)
            local_user.release(identity)
        try:
            _force_remove(self.root)  # ctl/ is read-only, and a test may have locked folders of its own
        except OSError:
            shutil.rmtree(self.root, ignore_errors=True)
