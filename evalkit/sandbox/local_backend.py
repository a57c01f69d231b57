"""Local sandbox: the runner in a subprocess on a temporary copy of the tree (weaker isolation).

Limits are rlimits (address space, processes, file size) set in the child; the whole process
group is killed at the timeout; the network is cut with ``unshare -rn`` where the kernel allows
it (detected once), otherwise the run goes on with network and the reason says so.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from evalkit import tempdirs
from evalkit.sandbox.archive import SKIP_DIRS
from evalkit.sandbox.phase import PhaseOutcome, SandboxError, new_nonce
from evalkit.sandbox.script import ControlFiles
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


def _limiter(memory_mb: int, nproc: int):
    def apply() -> None:
        mem = memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


class LocalSandbox:
    """A temporary folder with the tree copy and control files; removed on close."""

    isolation = "local"

    def __init__(self, spec: TestRunSpec, ctl: ControlFiles) -> None:
        self.spec = spec
        self.image_digest: str | None = None
        self.notes: list[str] = ["local backend: the tests ran on this host in a subprocess, not in a container"]
        self.root = Path(tempfile.mkdtemp(prefix=tempdirs.prefix("evalkit-sbx-")))
        try:
            shutil.copytree(spec.tree, self.root / "tree", symlinks=True,
                            ignore=lambda _d, names: [n for n in names if n in SKIP_DIRS])
            for sub in ("out", "home", "ctl/secret"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
            for name, text in {**ctl.files, "phase": "main\n"}.items():
                (self.root / "ctl" / name).write_text(text, encoding="utf-8")
        except OSError as exc:
            self.close()
            raise SandboxError(f"cannot prepare the local sandbox: {exc}") from exc
        self.unshare = network_namespace_available()
        if not self.unshare:
            self.notes.append("no network namespace (unshare -rn not permitted here): tests had network access")

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run_phase(self, phase: str, command: str | None) -> PhaseOutcome:
        nonce = new_nonce()
        ctl = self.root / "ctl"
        (ctl / "phase").write_text(f"{phase}\n", encoding="utf-8")
        if command is not None:
            (ctl / f"{phase}.cmd").write_text(command + "\n", encoding="utf-8")
        (ctl / "secret" / "nonce").write_text(nonce, encoding="utf-8")
        argv = ["/bin/sh", str(ctl / "run.sh"), str(self.root)]
        if self.unshare:
            argv = ["unshare", "-rn", *argv]
        lim = self.spec.limits
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root / "home"),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv, cwd=self.root / "tree", env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_limiter(lim.memory_mb, _user_process_count() + lim.pids),
            )
        except OSError as exc:
            raise SandboxError(f"cannot start the local runner: {exc}") from exc
        output = bytearray()
        reader = threading.Thread(target=self._drain, args=(proc, output, lim.log_limit_bytes), daemon=True)
        reader.start()
        try:
            code = proc.wait(timeout=lim.timeout_s)
            state = "exited"
        except subprocess.TimeoutExpired:
            self._kill_group(proc)
            code, state = None, "timeout"
        self._kill_group(proc)  # no test process outlives its phase
        reader.join(timeout=5)
        outcome = PhaseOutcome(phase, nonce, state, code, duration_s=time.monotonic() - t0)
        if state == "exited":
            outcome.files, outcome.files_capped = self._read_out(phase)
            if "runner.txt" not in outcome.files:
                outcome.crash_output = bytes(output)
        return outcome

    @staticmethod
    def _drain(proc: subprocess.Popen, out: bytearray, cap: int) -> None:
        for chunk in iter(lambda: proc.stdout.read(65536), b""):
            if len(out) < cap:
                out += chunk[: cap - len(out)]
        proc.stdout.close()

    @staticmethod
    def _kill_group(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        proc.wait()

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

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
