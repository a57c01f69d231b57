"""`command`: any executable, run on a case materialised in a temporary work folder.

Protocol (README "The command protocol"):
- the work folder holds `case.json` and the case's input files under `inputs/`; the same JSON
  arrives on standard input; env: EVALKIT_CASE, EVALKIT_OUTPUT, EVALKIT_OUT_DIR, EVALKIT_SAMPLE;
- the program prints one JSON object (or writes it to $EVALKIT_OUTPUT) with any of: files,
  patch, text, context_files, context_functions, tasks, usage {input_tokens, output_tokens,
  cost_usd}, steps, help_requests; files written under $EVALKIT_OUT_DIR are added to `files`;
- exit 0 means it answered; anything else is the system's failure, as are a timeout, non-JSON,
  non-UTF-8 or more output than `max_output_bytes`, and a process left running after it exited
  (it runs in its own session; what is left of it is killed and named in the reason);
- its environment is clean: PATH, HOME, LANG and a few such (``BASE_ENV``), the config's `env` and
  `pass_env`, and the protocol variables above; nothing else of evalkit's (API keys, judge
  settings such as ANTHROPIC_BASE_URL, EVALKIT_* settings) reaches it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from evalkit.artifacts import Sample
from evalkit.llm.keys import environ_value
from evalkit import procs, tempdirs
from evalkit.cases import Case
from evalkit.systems.base import RunContext, adapter

if TYPE_CHECKING:
    from evalkit.config import CommandSystem, System

STDERR_TAIL = 4000
PROTOCOL_VERSION = 1
#: Variables of evalkit's own environment every system under test receives (when set).
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "TMPDIR")
#: How long the output pipes may stay open after the system exited before their holders are looked for.
PIPE_GRACE_S = 0.5


def system_env(system: CommandSystem, protocol: dict[str, str]) -> dict[str, str]:
    """The whole environment of a command system: ``BASE_ENV`` and ``pass_env`` from ours, then its
    config's ``env``, then the protocol variables (which nothing overrides)."""
    names = [*BASE_ENV, *getattr(system, "pass_env", [])]
    env = {n: v for n in names if (v := environ_value(n)) is not None}
    env.update(system.env)
    env.update(protocol)
    return env


def _holds_pipe(pid: int, inodes: set[int]) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("pipe:[") and int(link[6:-1]) in inodes:
            return True
    return False


def leftover_processes(session: int, pipe_inodes: AbstractSet[int] = frozenset(),
                       marker: bytes = b"") -> list[procs.Listed]:
    """Live processes of a system's session or process group, or (when ``pipe_inodes``) holding its
    output pipes open, or started with the ``marker`` variable of its run (its one-off EVALKIT_CASE):
    a process that left the session with setsid is still found by one of the last two."""
    return sorted(p for p in procs.others()
                  if session in (p.group, p.session) or (pipe_inodes and _holds_pipe(p.pid, set(pipe_inodes)))
                  or (marker and marker in procs.environ(p.pid)))


def _describe(left: list[procs.Listed]) -> str:
    names = []
    for p in left[:3]:
        cmd = procs.command(p.pid)
        names.append(f"pid {p.pid}" + (f" `{cmd[:80]}`" if cmd else ""))
    more = f" and {len(left) - 3} more" if len(left) > 3 else ""
    return ", ".join(names) + more


def case_payload(case: Case, system: System, sample_index: int, work: Path) -> dict[str, Any]:
    """The case JSON a command system receives; input files are copied under `inputs/`."""
    files: dict[str, str] = {}
    for dotted, src in sorted(case.refs.items()):
        if not dotted.startswith("inputs."):
            continue
        rel = os.path.relpath(src, case.dir)
        rel = rel.replace("..", "_up")
        dest = work / "inputs" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if os.path.isdir(src):
            shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
        else:
            shutil.copyfile(src, dest)
        files[dotted] = str(dest.relative_to(work))
    return {
        "protocol": PROTOCOL_VERSION,
        "suite": case.suite,
        "kind": case.kind,
        "language": case.language,
        "case_id": case.id,
        "description": case.description,
        "tags": list(case.tags),
        "inputs": case.inputs.model_dump(mode="json"),
        "files": files,
        "system": {"name": system.name, "settings": getattr(system, "settings", {})},
        "sample_index": sample_index,
    }


class _CappedReader(threading.Thread):
    """Reads a pipe into memory up to a cap; past it, sets `overflow` and calls `on_overflow`."""

    def __init__(self, pipe: Any, cap: int, on_overflow: Any) -> None:
        super().__init__(daemon=True)
        self.pipe, self.cap, self.on_overflow = pipe, cap, on_overflow
        self.chunks: list[bytes] = []
        self.size = 0
        self.overflow = False

    def run(self) -> None:
        while True:
            chunk = self.pipe.read(65536)
            if not chunk:
                break
            if self.size + len(chunk) > self.cap:
                self.overflow = True
                self.on_overflow()
                break
            self.chunks.append(chunk)
            self.size += len(chunk)
        self.pipe.close()

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)


def _collect_out_dir(out_dir: Path, cap: int) -> tuple[dict[str, str], str | None]:
    files: dict[str, str] = {}
    total = 0
    for p in sorted(out_dir.rglob("*")):
        if not p.is_file() or p.is_symlink():
            continue
        data = p.read_bytes()
        total += len(data)
        if total > cap:
            return files, f"wrote more than {cap} bytes of output files"
        try:
            files[str(p.relative_to(out_dir))] = data.decode("utf-8")
        except UnicodeDecodeError:
            return files, f"output file {p.relative_to(out_dir)} is not UTF-8 text"
    return files, None


def resolve_command(command: list[str], root: Path) -> list[str]:
    """The argv a command system runs, its relative paths resolved against the config's folder (``root``)
    whatever the current folder: the program when written as a path (``./run.sh``, ``bin/gen``; a bare
    name is looked up on PATH), and every later argument that names a file or folder existing below
    ``root`` (``python3 gen/my_generator.py``). Options (``-x``, ``--flag``) and other words stay as written."""
    argv = [a.replace("{python}", sys.executable) for a in command]
    if os.sep in argv[0] and not os.path.isabs(argv[0]):
        argv[0] = str(root / argv[0])
    for i, arg in enumerate(argv[1:], start=1):
        if arg and not arg.startswith("-") and not os.path.isabs(arg) and "{" not in arg and os.path.lexists(root / arg):
            argv[i] = str(root / arg)
    return argv


def run_command(system: System, case: Case, sample_index: int, ctx: RunContext) -> Sample:
    system = cast("CommandSystem", system)  # its `adapter: command` tag made it one (evalkit.config.System)
    argv = resolve_command(system.command, ctx.root)
    with tempfile.TemporaryDirectory(prefix=tempdirs.prefix("evalkit-run-")) as tmp:
        work = Path(tmp)
        payload = case_payload(case, system, sample_index, work)
        case_json = json.dumps(payload, sort_keys=True, indent=1)
        (work / "case.json").write_text(case_json, encoding="utf-8")
        out_dir = work / "out"
        out_dir.mkdir()
        out_json = work / "output.json"
        env = system_env(system, {"EVALKIT_CASE": str(work / "case.json"), "EVALKIT_OUTPUT": str(out_json),
                                  "EVALKIT_OUT_DIR": str(out_dir), "EVALKIT_SAMPLE": str(sample_index),
                                  "PYTHONDONTWRITEBYTECODE": "1"})
        start = time.monotonic()
        try:
            proc = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except FileNotFoundError:
            return Sample(status="error", reason=f"command not found: {argv[0]}")
        except PermissionError:
            return Sample(status="error", reason=f"command is not executable: {argv[0]}")
        pipe_inodes = {os.fstat(proc.stdout.fileno()).st_ino, os.fstat(proc.stderr.fileno()).st_ino}  # type: ignore[union-attr]
        group = procs.Group(proc)  # killed only until reaped: the session's number is not another's before
        out = _CappedReader(proc.stdout, system.max_output_bytes, group.kill)
        err = _CappedReader(proc.stderr, system.max_output_bytes, lambda: None)
        out.start()
        err.start()
        try:
            proc.stdin.write(case_json.encode("utf-8"))  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass
        timed_out = False
        left: list[procs.Listed] = []
        left_desc = ""
        if not procs.wait_exited(proc, system.timeout_s):
            timed_out = True
            group.kill()
        else:  # the system has exited, not yet reaped: its session id cannot name another's processes yet
            out.join(PIPE_GRACE_S)
            err.join(PIPE_GRACE_S)
            held = out.is_alive() or err.is_alive()
            left = leftover_processes(proc.pid, pipe_inodes if held else set(),
                                      f"EVALKIT_CASE={env['EVALKIT_CASE']}".encode())
            left_desc = _describe(left) if left else ""
            for p in left:
                procs.kill_listed(p.pid, p.start)
            group.kill()
        group.reap()
        out.join(5)
        err.join(5)
        wall = time.monotonic() - start
        stderr = err.data[-STDERR_TAIL:].decode("utf-8", errors="replace")
        base = {"wall_s": round(wall, 3), "exit_code": proc.returncode, "stderr": stderr}
        if timed_out:
            return Sample(status="timeout", reason=f"no answer within {system.timeout_s:g} s; killed", **base)
        if out.overflow:
            return Sample(status="error", reason=f"printed more than {system.max_output_bytes} bytes; killed", **base)
        if left:
            return Sample(status="error", reason=f"left {len(left)} process{'es' if len(left) > 1 else ''} running "
                          f"after it exited ({left_desc}): killed; a system must finish its work before it "
                          "exits", **base)
        if proc.returncode != 0:
            last = stderr.strip().splitlines()[-1:] or ["(no stderr)"]
            return Sample(status="error", reason=f"exited with status {proc.returncode}: {last[0][:300]}", **base)
        raw = out_json.read_bytes() if out_json.exists() else out.data
        if len(raw) > system.max_output_bytes:
            return Sample(status="error", reason=f"wrote more than {system.max_output_bytes} bytes of output JSON", **base)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Sample(status="error", reason=f"output is not UTF-8 (byte {exc.start})", **base)
        try:
            answer = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            return Sample(status="error", reason=f"output is not JSON: {exc.msg} at line {exc.lineno}", **base)
        if not isinstance(answer, dict):
            return Sample(status="error", reason="output JSON must be an object", **base)
        files, problem = _collect_out_dir(out_dir, system.max_output_bytes)
        if problem:
            return Sample(status="error", reason=problem, **base)
        answer.setdefault("files", {})
        if isinstance(answer["files"], dict):
            answer["files"] = {**files, **answer["files"]}
        for k in ("status", "reason", "wall_s", "exit_code", "stderr"):
            answer.pop(k, None)
        try:
            return Sample.model_validate({**answer, **base})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            return Sample(status="error", reason=f"output JSON: {where}: {first['msg']}", **base)


adapter("command")(run_command)
