"""The no-op gate: a no-op `evalkit run` answered before the rest of evalkit is imported.

A no-op rerun (nothing changed since a run after which doit found every task up to date,
`evalkit.uptodate_manifest`) prints the kept end of the run that left the manifest. To find that out it still
imports evalkit (pydantic's models, doit), loads the config, discovers the cases and builds every task dict: about
a second for 1,000 cases × 4 systems, nearly all of it before the answer is known.

So a process that turned out to be such a no-op keeps what it printed and its exit status (`<config folder>/
.evalkit/gate/noop.pickle`) beside **everything it read**, each with its (mtime_ns, ctime_ns, size, inode) or its
absence, taken when the process had finished:

- every file it opened and every folder it listed (a `sys.addaudithook` hook: `open`, `os.listdir`, `os.scandir`,
  `sqlite3.connect`), every path it asked the file system about (`os.stat`, `os.lstat`, `os.access`, which
  `os.path.exists`, `pathlib` and `shutil.which` go through, wrapped while it records), every module file loaded,
  and the no-op manifest's file_deps and targets;
- the folder holding each of those: a file created, removed or renamed in a folder changes the folder's stat, so a
  new `.retry` marker or case is seen even where the run only asked whether a path existed;
- the invocation: the arguments, the working folder, the interpreter, the whole environment as the process got it,
  and whether stdout and stderr are terminals (a terminal is never answered: the live display is drawn there).

`answer` (the first thing `python -m evalkit` and the `evalkit` command do) prints the same bytes and exits with the
same status when the invocation is the same and every stat matches: nothing the no-op's decision or its output
depended on has changed, so the full process would print the same. Otherwise, or on any doubt (no gate, another
format, an unreadable file, a path asked relative to a folder descriptor), the run goes on as always and records
again. A gate is kept only when what the process printed is exactly its kept end (no warning, no swept process, no
other line); a run that changes anything changes a stat the gate holds (the no-op manifest is deleted before doit
runs). Left out of the stats: `/proc`, `/sys`,
`/dev`, the temporary folder's own listing and evalkit's scratch folders in it (`evalkit.tempdirs.PREFIXES`): other
processes' and this process's own scratch (a process the run's sweep would kill there is said on stderr, which keeps the gate
from being written). A project in the temporary folder is recorded as any other.

This module imports only the standard library: `answer` costs an interpreter start and ~20,000 `stat` calls.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, NoReturn, TextIO, cast

from evalkit import tempdirs

FORMAT = 1
"""The gate file's layout; a gate of another format is not answered (and is replaced)."""
GATE_DIR = os.path.join(".evalkit", "gate")
"""Below the config's folder (with the default `work_dir`): the gate's own folder, kept out of what is recorded."""
GATE_FILE = "noop.pickle"
_UNSEEN_ROOTS = ("/proc/", "/sys/", "/dev/")


Stat = tuple[int, int, int, int]


def stat_of(path: str) -> Stat | None:
    """(mtime_ns, ctime_ns, size, inode) of ``path`` (followed), None when it is absent or unreadable."""
    try:
        st = _real_stat(path)
    except (OSError, ValueError):
        return None
    return st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino


_real_stat = os.stat
_real_lstat = os.lstat
_real_access = os.access


def gate_path(argv: list[str], environ: dict[str, str], cwd: str) -> str | None:
    """Where the gate of this invocation would be: None unless it is `evalkit run` (the config as `run` finds it:
    ``--config``/``-c``, then $EVALKIT_CONFIG, then ./evalkit.yaml)."""
    if len(argv) < 2 or argv[1] != "run":
        return None
    config = environ.get("EVALKIT_CONFIG") or "evalkit.yaml"
    args = argv[2:]
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg in ("--config", "-c") and i + 1 < len(args):
            config = args[i + 1]
        elif arg.startswith("--config="):
            config = arg.split("=", 1)[1]
        elif arg.startswith("-c") and len(arg) > 2 and not arg.startswith("--"):
            config = arg[2:]
    folder = os.path.dirname(os.path.realpath(os.path.join(cwd, config)))
    return os.path.join(folder, GATE_DIR, GATE_FILE)


def invocation(argv: list[str], environ: dict[str, str], cwd: str) -> bytes:
    """What must be the same for a gate to answer: the arguments, working folder, interpreter and environment."""
    return hashlib.sha256(pickle.dumps(
        (FORMAT, argv, cwd, sys.executable, sys.version, tuple(sys.flags), sorted(environ.items())),
        protocol=pickle.HIGHEST_PROTOCOL)).digest()


def _on_terminal() -> bool:
    try:
        return sys.stdout.isatty() or sys.stderr.isatty()
    except (AttributeError, ValueError):
        return True


# --- answering ------------------------------------------------------------------------------------------------------

def answer(argv: list[str]) -> int | None:
    """The exit status of this no-op, its output written, when its gate holds; None: run as usual."""
    try:
        cwd = os.getcwd()
    except OSError:  # the working folder was removed: the run says so
        return None
    environ = dict(os.environ)
    path = gate_path(argv, environ, cwd)
    if path is None or _on_terminal():
        return None
    try:
        with open(path, "rb") as fh:
            gate = pickle.load(fh)
        holds = (isinstance(gate, Gate) and gate.format == FORMAT and gate.invocation == invocation(argv, environ, cwd)
                 and len(gate.paths) == len(gate.stats)
                 and all(stat_of(p) == s for p, s in zip(gate.paths, gate.stats)))
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, ImportError, IndexError, TypeError):
        return None  # a gate of another layout, or none readable: the run goes on as always
    if not holds:
        return None
    sys.stdout.write(gate.stdout)
    sys.stdout.flush()
    sys.stderr.write(gate.stderr)
    sys.stderr.flush()
    return gate.status


@dataclass(frozen=True)
class Gate:
    """A no-op's answer: what it printed and its exit status, for this `invocation` while every path has its stat."""

    format: int
    invocation: bytes
    paths: list[str]
    stats: list[Stat | None]
    stdout: str
    stderr: str
    status: int


# --- recording ------------------------------------------------------------------------------------------------------

class _Tee:
    """A text stream that writes through to ``base`` and keeps a copy (every other attribute is ``base``'s)."""

    def __init__(self, base: TextIO, copy: list[str]) -> None:
        self._base = base
        self._copy = copy

    def write(self, text: str) -> int:
        if _recording is not None and _recording.on:  # once the process is no no-op, nothing is kept
            self._copy.append(text)
        return self._base.write(text)

    def flush(self) -> None:
        self._base.flush()

    def isatty(self) -> bool:
        return self._base.isatty()

    def fileno(self) -> int:
        return self._base.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)


@dataclass
class _Recording:
    argv: list[str]
    environ: dict[str, str]
    cwd: str
    gate: str
    seen: set[str] = field(default_factory=set)
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    on: bool = True
    doubt: bool = False
    noop: tuple[list[str], str, str] | None = None
    """Set by `evalkit run` when the process was a no-op that said its kept end: (the manifest's paths, what it
    should have printed on stdout, on stderr)."""

    def see(self, path: Any) -> None:
        if not self.on:
            return
        if isinstance(path, int):  # a file descriptor: what it names was opened (and seen) before
            return
        try:
            name = os.fsdecode(path)
        except TypeError:
            self.doubt = True
            return
        self.seen.add(os.path.abspath(name))


_recording: _Recording | None = None


def _hook(event: str, args: tuple[Any, ...]) -> None:
    rec = _recording
    if rec is None or not rec.on:
        return
    if event == "open" or event == "sqlite3.connect":
        rec.see(args[0])
    elif event in ("os.listdir", "os.scandir"):
        rec.see("." if args[0] is None else args[0])


def _watched(real: Callable[..., Any]) -> Callable[..., Any]:
    def call(path: Any, *args: Any, **kwargs: Any) -> Any:
        rec = _recording
        if rec is not None and rec.on:
            if kwargs.get("dir_fd") is not None:
                rec.doubt = True  # relative to a folder this module cannot name
            else:
                rec.see(path)
        return real(path, *args, **kwargs)
    call.__name__ = real.__name__
    call.__doc__ = real.__doc__
    return call


def record(argv: list[str]) -> None:
    """Start recording what this process reads and prints (before evalkit's imports), for `gate_for`."""
    global _recording
    if _recording is not None:
        return
    try:
        cwd = os.getcwd()
    except OSError:
        return
    environ = dict(os.environ)
    path = gate_path(argv, environ, cwd)
    if path is None or _on_terminal():
        return
    rec = _Recording(list(argv), environ, cwd, path)
    _recording = rec
    sys.addaudithook(_hook)
    os.stat, os.lstat, os.access = _watched(_real_stat), _watched(_real_lstat), _watched(_real_access)
    sys.stdout = cast(TextIO, _Tee(sys.stdout, rec.stdout))
    sys.stderr = cast(TextIO, _Tee(sys.stderr, rec.stderr))


def stop() -> None:
    """This process is not a no-op: stop recording (its reads and prints no longer matter)."""
    rec = _recording
    if rec is not None and rec.on:
        rec.on = False
        os.stat, os.lstat, os.access = _real_stat, _real_lstat, _real_access


def noop_said(config: str, work: str, manifest_paths: list[str], stdout: str, stderr: str) -> None:
    """`evalkit run` was a no-op that said its kept end (``stdout``, ``stderr``) for ``config``, whose work folder
    is ``work``: `gate_for` gives the gate to write when the process ends, if it printed nothing else."""
    rec = _recording
    if rec is None or not rec.on:
        return
    folder = os.path.dirname(config)
    if os.path.join(folder, GATE_DIR, GATE_FILE) != rec.gate or os.path.realpath(work) != os.path.join(folder, ".evalkit"):
        return  # another work folder: `answer` would not find the gate
    rec.noop = (list(manifest_paths), stdout, stderr)


def gate_for(status: int) -> tuple[str, bytes] | None:
    """When the process ends (its main returned ``status``): the gate to write (its path and bytes, for
    `evalkit.fsutil.atomic_write_bytes`, which every write of evalkit's goes through), if it was a no-op that printed
    exactly its kept end; else None."""
    rec = _recording
    if rec is None or not rec.on or rec.noop is None or rec.doubt:
        return None
    manifest_paths, stdout, stderr = rec.noop
    stop()
    if "".join(rec.stdout) != stdout or "".join(rec.stderr) != stderr:
        return None
    gate_dir = os.path.dirname(rec.gate)
    try:
        os.makedirs(gate_dir, exist_ok=True)  # before the stats: its creation changes the work folder's
    except OSError:  # a read-only project: no gate, the next no-op takes the whole path
        return None
    temp = {tempfile.gettempdir(), os.path.realpath(tempfile.gettempdir())}
    unseen = (*_UNSEEN_ROOTS, *(os.path.join(t, prefix) for t in temp for prefix in tempdirs.PREFIXES),
              os.path.join(gate_dir, ""))
    modules = {os.path.abspath(value) for module in list(sys.modules.values())
               for value in (getattr(module, "__file__", None), getattr(module, "__cached__", None))
               if isinstance(value, str)}
    read = rec.seen | modules | set(manifest_paths)
    read |= {os.path.dirname(p) for p in read}
    paths = sorted(p for p in read if not p.startswith(unseen) and p != gate_dir and p not in temp)
    gate = Gate(FORMAT, invocation(rec.argv, rec.environ, rec.cwd), paths, [stat_of(p) for p in paths],
                stdout, stderr, status)
    return rec.gate, pickle.dumps(gate, protocol=pickle.HIGHEST_PROTOCOL)


def exit_now(status: int) -> NoReturn:
    """End an answered no-op: output flushed, no interpreter tear-down (as `evalkit.cli.entry` ends)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
