"""`python -m evalkit ARGS` for the tests, forked from a process that has already imported evalkit (issue #30).

Most of the suite's CPU went to starting the `evalkit run` processes its tests make (392 of them, 2.1 s of CPU
each, about half of it importing evalkit, numpy, scipy, doit and jinja2, and 2.8 s more for the Anthropic SDK in
a judge's). Each test worker therefore starts one *zygote*: a plain `python -c` process (single-threaded, started
from an empty folder, so it imports evalkit from where `python -m evalkit` would) that imports those modules once
(and builds the validators of evalkit's pydantic models, which a new process builds on first use: the same
validators either way) and then, for each run, forks a child that becomes `python -m evalkit ARGS`:

- fds 0, 1 and 2 are /dev/null, the stdout file and the stderr file (the zygote's pipes to the test are
  replaced; what its imports opened stays open, as in a new process that imported them);
- the working directory, `os.environ` (and so the C environment subprocesses inherit), `sys.argv` and
  `sys.path[0]` (the working directory, as `-m` sets it) are the run's;
- `evalkit/__main__.py` runs as `__main__` (`runpy`, as `-m` does), an exception it lets out is printed and
  exits 1, and the end is the interpreter's: non-daemon threads joined, atexit handlers run, stdio flushed.

A fork is the same process as a new one only if nothing the imports did depends on what differs. So the zygote
records every environment variable the imports read (`os.environ` lookups, hits and misses) and a run whose
environment gives any of them another value, or that sets a variable the interpreter or a native library reads
at start (`PYTHON*`, locale, BLAS threads), gets a real subprocess instead (`tests/test_zygote.py` checks both
ways). Tests about the process itself (its imports, its start, signals other than a kill) start their own
subprocess.

`popen_evalkit` is `subprocess.Popen` for the tests that kill a run mid-way or wait on it while they do something
else: the forked child starts its own session when asked (`start_new_session`), so `os.killpg(run.pid, ...)` ends
the run as it ends a Popen's; a SIGKILL cannot be caught, so the forked run dies as a new one does.
`tests/test_zygote.py` kills one of each kind. Two runs at once (the run lock's tests) keep their own processes: a
zygote serves one run at a time, and a forked run starts seconds sooner than a new interpreter, which changes which
of two runs gets where first.
"""
from __future__ import annotations

import atexit
import json
import locale
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from evalkit import procs

WARM = ("evalkit.cli", "numpy", "numpy.random", "scipy.special", "doit.control", "doit.cmd_base", "jinja2",
        "evalkit.sandbox.dockerclient", "evalkit.executors.call", "evalkit.metrics.rag_offline",
        "evalkit.report.summarize", "evalkit.report.render", "evalkit.report.case_pages",
        "evalkit.graders.judge_dispatch", "anthropic")
"""What the zygote imports: what a run of the tests' projects imports (read from `-X importtime`), with the
Anthropic SDK a judge's run needs (2.8 s alone). Not ragas: it changes the environment when imported."""

START_PREFIXES = ("PYTHON", "LC_", "LANG", "OPENBLAS", "OMP_", "MKL_", "NPY_", "NUMPY_")
"""Variables read before or below Python's `os.environ` (the interpreter's start, the locale, native libraries'
thread pools): a run that sets any of them differently gets a real subprocess."""

SERVER = r'''
import json, os, sys

def _record_reads():
    """Every key the imports look up in os.environ (a miss counts: its absence is what they saw)."""
    seen = set()
    cls = type(os.environ)
    get = cls.__getitem__
    def recording(self, key):
        seen.add(key)
        return get(self, key)
    cls.__getitem__ = recording
    return seen, lambda: setattr(cls, "__getitem__", get)

seen, stop = _record_reads()
for name in json.loads(sys.argv[1]):
    __import__(name)
from evalkit.models import _Deferred  # the models' validators, built on first use, built once here instead
todo = [_Deferred]
while todo:
    cls = todo.pop()
    todo.extend(cls.__subclasses__())
    try:
        cls.model_rebuild(_parent_namespace_depth=0)
    except Exception:  # a name it refers to is not defined yet: built on first use, as in a new process
        pass
stop()
import atexit, importlib, runpy, tempfile, threading, traceback
if threading.active_count() != 1:
    raise SystemExit("zygote: an import started a thread")

def _line(obj):
    os.write(1, (json.dumps(obj) + "\n").encode())

def _child(req):
    if req["session"]:
        os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(req["out"], os.O_WRONLY | os.O_TRUNC)
    err = os.open(req["err"], os.O_WRONLY | os.O_TRUNC)
    for fd, target in ((null, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    sys.argv = ["evalkit", *req["args"]]
    sys.path[0] = os.getcwd()
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    tempfile.tempdir = None
    code = 0
    try:
        runpy.run_module("evalkit", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        threading._shutdown()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                code = code or 120
        os._exit(code)

_line({"env": {k: os.environ.get(k) for k in sorted(seen)}})
buf = b""
while True:
    chunk = os.read(0, 1 << 16)
    if not chunk:
        break
    buf += chunk
    while b"\n" in buf:
        raw, buf = buf.split(b"\n", 1)
        req = json.loads(raw)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(req)
        with open(f"/proc/{pid}/stat") as fh:  # not reaped before the waitpid below: the pid is the child's
            start = int(fh.read().rsplit(")", 1)[1].split()[19])
        _line({"pid": pid, "start": start})
        _line({"status": os.waitpid(pid, 0)[1]})
'''


class Zygote:
    """One test worker's zygote (`server()`), started on first use and ended when the worker exits."""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="evalkit-zygote-"))
        self.base_env = dict(os.environ)
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, json.dumps(WARM)], cwd=self.home,
                                     env=self.base_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(self.home / "zygote.err", "wb"))  # noqa: SIM115 - the process keeps it
        self.buf = b""
        first = self._reply(timeout=120)
        if first is None or "env" not in first:
            raise RuntimeError(f"the zygote did not start: {(self.home / 'zygote.err').read_text(errors='replace')}")
        self.import_env: dict[str, str | None] = first["env"]
        self.lock = threading.Lock()
        self.forks = 0
        self.exits: list[int] = []
        """The exit status of each forked run, in order (a negative number: the signal that ended it)."""
        atexit.register(self.close)

    def _reply(self, timeout: float | None) -> dict | None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        end = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            wait = None if end is None else max(0.0, end - time.monotonic())
            if not select.select([fd], [], [], wait)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise RuntimeError("the zygote ended")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\n", 1)
        return json.loads(raw)

    def differs(self, env: dict[str, str]) -> str | None:
        """Why a run with ``env`` cannot be forked from this zygote (None: it can)."""
        for key, value in self.import_env.items():
            if env.get(key) != value:
                return f"{key} was read at import"
        for key in set(env) | set(self.base_env):
            if key.startswith(START_PREFIXES) and env.get(key) != self.base_env.get(key):
                return f"{key} is read at the interpreter's start"
        return None

    def start(self, args: list[str], cwd: Path, env: dict[str, str], session: bool = False) -> Forked:
        """Fork `python -m evalkit ARGS` and return at once. The caller has taken ``self.lock``; the run
        returned holds it until its exit status is read. ``session``: the child starts a new session, as
        `Popen(start_new_session=True)` makes it."""
        try:
            folder = Path(tempfile.mkdtemp(dir=self.home))
            out, err = folder / "out", folder / "err"
            out.touch()
            err.touch()
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps({"args": args, "cwd": str(cwd), "env": env, "out": str(out),
                                               "err": str(err), "session": session}) + "\n").encode())
            self.proc.stdin.flush()
            started = self._reply(timeout=60)
            assert started is not None and "pid" in started, started
        except BaseException:
            self.lock.release()
            raise
        self.forks += 1
        return Forked(self, _argv(args), started["pid"], started["start"], folder)

    def run(self, args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
        run = self.start(args, cwd, env)
        try:
            out, err = run.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            run.kill()
            out, err = run.communicate()
            raise subprocess.TimeoutExpired(run.args, timeout, output=out, stderr=err) from None
        assert run.returncode is not None
        return subprocess.CompletedProcess(run.args, run.returncode, out, err)

    def close(self) -> None:
        """End the zygote (its input closed: its loop ends) and remove its folder."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.home, ignore_errors=True)


class Forked:
    """A forked run, used as a `subprocess.Popen` of `python -m evalkit ARGS` is: ``pid`` (a process group's
    too when started in its own session), ``poll``, ``wait``, ``communicate`` (what it wrote to stdout and
    stderr, as text) and ``kill``. Its zygote takes no other run until this one's exit status is read."""

    def __init__(self, zygote: Zygote, args: list[str], pid: int, start: int, folder: Path) -> None:
        self.zygote, self.args, self.pid, self.start, self.folder = zygote, args, pid, start, folder
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self._ended(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._ended(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        code = self._ended(timeout)
        out, err = (_text((self.folder / name).read_bytes()) for name in ("out", "err"))
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0, output=out, stderr=err)
        shutil.rmtree(self.folder, ignore_errors=True)
        return out, err

    def kill(self) -> None:
        if self.returncode is None:  # still running, or ended and reaped by the zygote, its status not read yet:
            procs.kill_listed(self.pid, self.start)  # then the pid may be another's, which is left alone

    def _ended(self, timeout: float | None) -> int | None:
        if self.returncode is None:
            ended = self.zygote._reply(timeout)
            if ended is None:
                return None
            self.returncode = os.waitstatus_to_exitcode(ended["status"])
            self.zygote.exits.append(self.returncode)
            self.zygote.lock.release()
        return self.returncode


def _argv(args: list[str]) -> list[str]:
    """`python -m evalkit ARGS`, the command every run here stands for."""
    return [sys.executable, "-m", "evalkit", *args]


def _text(data: bytes) -> str:
    """What `subprocess.run(..., text=True)` makes of a stream's bytes."""
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


_SERVER: list[Zygote] = []


def server() -> Zygote:
    if not _SERVER:
        _SERVER.append(Zygote())
    return _SERVER[0]


def _free(env: dict[str, str]) -> Zygote | None:
    """The zygote, its lock taken, when a run with ``env`` can be forked from it now: nothing its imports read
    differs and no other run of it is in flight (a second thread's run at the same time gets its own process)."""
    if os.environ.get("EVALKIT_TEST_NO_ZYGOTE") == "1":
        return None
    zygote = server()
    if zygote.differs(env) is None and zygote.lock.acquire(blocking=False):
        return zygote
    return None


def python_m_evalkit(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """`subprocess.run([python, -m, evalkit, *args], cwd=cwd, env=env, capture_output=True, text=True,
    timeout=timeout)`: forked from the zygote when it can be, else that very call."""
    zygote = _free(env)
    if zygote is not None:
        return zygote.run(args, cwd, env, timeout)
    return spawned(args, cwd, env, timeout)


def popen_evalkit(args: list[str], cwd: Path, env: dict[str, str],
                  start_new_session: bool = False) -> Forked | subprocess.Popen[str]:
    """`subprocess.Popen([python, -m, evalkit, *args], cwd=cwd, env=env, stdout=PIPE, stderr=PIPE, text=True,
    start_new_session=...)`, for a test that kills the run or waits on it while it does something else: forked
    from the zygote when it can be (the run's output is kept in files, so nothing blocks on a full pipe), else
    that very call."""
    zygote = _free(env)
    if zygote is not None:
        return zygote.start(args, cwd, env, session=start_new_session)
    return subprocess.Popen(_argv(args), cwd=str(cwd), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=start_new_session)


def spawned(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """`python -m evalkit ARGS` as a new interpreter: what a forked run stands in for."""
    return subprocess.run(_argv(args), cwd=str(cwd), env=env, capture_output=True,
                          text=True, timeout=timeout)
