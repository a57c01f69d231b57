"""Who the local backend's tests run as, and which limits hold: applied in the child, then measured.

Run as root, evalkit gives every local sandbox a user of its own (a free uid above
``UID_BASE``, no passwd entry): the tree, ``out/`` and ``home/`` are chowned to it, the control
folder stays root's, and the child drops to it (no supplementary groups) after setting its
rlimits and entering a new network namespace. Owning nothing else, that user can write only
where anybody can; its process count starts at zero, so ``RLIMIT_NPROC`` caps the sandbox exactly;
every process of that uid is killed after each phase, whatever session it moved to.

Not root: the tests run as the current user with the same rlimits (``RLIMIT_NPROC`` counts the
user's other processes too) and ``unshare -rn`` for the network when the kernel allows it.

What actually holds is measured, not assumed: a probe child started exactly like the runner
reports its uid, its rlimits and its network interfaces, and the sandbox's notes name every limit
that could not be applied.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import pwd
import random
import resource
import shlex
import shutil
import stat
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from evalkit import procs

#: Unprivileged uids for local sandboxes are drawn from [UID_BASE, UID_BASE + UID_SPAN).
UID_BASE = 1_900_000_000
UID_SPAN = 1 << 20
CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 4096, 8192, 16384, 1 << 18

_taken: set[int] = set()
_taken_lock = threading.Lock()


@dataclass
class Identity:
    """Who a local sandbox's processes run as."""

    uid: int | None = None
    """The sandbox's own uid (None: the tests run as evalkit's user)."""
    stay_reason: str = ""
    """Why evalkit, running as root, kept root for the tests (empty when it dropped or is not root)."""
    applied: list[str] = field(default_factory=list)
    """Limits measured in the probe child."""
    missing: list[str] = field(default_factory=list)
    """Limits that could not be applied here."""
    masks: list[tuple[str, str]] = field(default_factory=list)
    """(folder, sub-folder) pairs: in the tests' own mount namespace an empty folder is mounted over the
    first, with only the second in it (the test program's install under /root, say, and nothing else
    of /root), so a user who owns nothing reaches the program and no other file of that folder."""


def _world_reachable(path: str) -> bool:
    """Whether a user who owns nothing can execute ``path`` (every folder on the way searchable)."""
    for p in {os.path.abspath(path), os.path.realpath(path)}:
        try:
            if not os.stat(p).st_mode & stat.S_IXOTH:
                return False
            parent = os.path.dirname(p)
            while True:
                if not os.stat(parent).st_mode & stat.S_IXOTH:
                    return False
                if parent == os.path.dirname(parent):
                    break
                parent = os.path.dirname(parent)
        except OSError:
            return False
    return True


def _program(test_command: str) -> str | None:
    """The program the test command starts, when it is found on PATH (None: a shell built-in or a tree file)."""
    try:
        words = shlex.split(test_command)
    except ValueError:
        return None
    while words and "=" in words[0] and not words[0].startswith("="):
        words = words[1:]  # VAR=value prefixes
    if not words or "/" in words[0]:
        return None
    return shutil.which(words[0])


def _free_uid() -> int:
    with _taken_lock:
        while True:
            uid = UID_BASE + random.randrange(UID_SPAN)
            if uid in _taken:
                continue
            try:
                pwd.getpwuid(uid)
                continue
            except KeyError:
                pass
            _taken.add(uid)
            return uid


def release(identity: Identity) -> None:
    if identity.uid is not None:
        with _taken_lock:
            _taken.discard(identity.uid)


def _blocking(path: str) -> tuple[str, str] | None:
    """The first folder on the way to ``path`` a user who owns nothing cannot enter, and its entry on the way."""
    parts = os.path.abspath(path).split(os.sep)[1:]
    current = os.sep
    for part in parts[:-1]:
        nxt = os.path.join(current, part)
        try:
            if not os.stat(nxt).st_mode & stat.S_IXOTH:
                rest = parts[len(nxt.split(os.sep)) - 1:]
                return (nxt, os.path.join(nxt, rest[0])) if len(rest) > 1 else None
        except OSError:
            return None
        current = nxt
    return None


@functools.lru_cache(maxsize=1)
def mount_namespace_available() -> bool:
    """Whether this process (root) can make a mount namespace of its own."""
    if shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def masks_for(prog: str, keep: str) -> list[tuple[str, str]] | None:
    """The masks that make ``prog`` reachable by a user who owns nothing (None: none can; ``keep``, the
    sandbox's own folder, must stay visible)."""
    masks: list[tuple[str, str]] = []
    for p in dict.fromkeys([os.path.abspath(prog), os.path.realpath(prog)]):
        hit = _blocking(p)
        if hit is None:
            continue
        folder, sub = hit
        if folder == os.sep or os.path.commonpath([folder, os.path.abspath(keep)]) == folder:
            return None
        if hit not in masks:
            masks.append(hit)
    return masks or None


def choose(test_command: str, keep: str = "/tmp") -> Identity:
    """The sandbox's identity: its own uid when evalkit runs as root and the test command's program
    is reachable by a user who owns nothing (if need be through masks: a pyenv under /root); else
    evalkit's user (with the reason when root)."""
    if os.geteuid() != 0:
        return Identity()
    prog = _program(test_command)
    if prog is not None and not _world_reachable(prog):
        masks = masks_for(prog, keep) if mount_namespace_available() else None
        if masks is None:
            return Identity(stay_reason=f"the tests ran as root: the test command's program {prog} is in a folder "
                                        "an unprivileged user cannot enter (install it where any user can run it)")
        return Identity(uid=_free_uid(), masks=masks)
    return Identity(uid=_free_uid())


def chown_tree(root: Path, uid: int) -> None:
    """Give ``root`` (not following links) to ``uid``."""
    os.lchown(root, uid, uid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)


_libc = None


def _unshare_net() -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if _libc.unshare(CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    assert _libc is not None
    enc = (lambda v: v.encode() if v is not None else None)
    if _libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def _mask(masks: list[tuple[str, str]], staging: str) -> None:
    """In a new mount namespace: each masked folder becomes an empty tmpfs holding only its kept entry."""
    assert _libc is not None
    if _libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    for i, (folder, keep) in enumerate(masks):
        held = os.path.join(staging, str(i))
        os.makedirs(held, exist_ok=True)
        _mount(keep, held, None, MS_BIND | MS_REC, None)
        _mount("tmpfs", folder, "tmpfs", 0, "mode=0755")
        os.makedirs(keep, exist_ok=True)
        _mount(held, keep, None, MS_MOVE, None)


def preexec(identity: Identity, memory_mb: int, nproc: int, file_size: int, own_netns: bool, staging: str = ""):
    """The child's set-up: rlimits, then (as root) a new network namespace, the masks and the drop to
    the sandbox's uid. Each limit is best effort (the probe says which held); a mask that fails stops
    the child (its tests could not run as that user)."""
    if own_netns or identity.masks:
        _unshare_net_ready()

    def apply() -> None:
        mem = memory_mb << 20
        for res, value in ((resource.RLIMIT_AS, mem), (resource.RLIMIT_NPROC, nproc),
                           (resource.RLIMIT_FSIZE, file_size), (resource.RLIMIT_CORE, 0)):
            try:
                _soft, hard = resource.getrlimit(res)
                value = value if hard == resource.RLIM_INFINITY else min(value, hard)
                resource.setrlimit(res, (value, value))
            except (OSError, ValueError):
                pass
        if own_netns:
            try:
                _unshare_net()
            except OSError:
                pass
        if identity.masks:
            _mask(identity.masks, staging)
        if identity.uid is not None:
            os.setgroups([])
            os.setgid(identity.uid)
            os.setuid(identity.uid)

    return apply


def _unshare_net_ready() -> None:
    """Load libc in the parent: the child only calls into it."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


PROBE = "id -u; echo @@; cat /proc/self/limits; echo @@; cat /proc/net/dev"


def _limit(limits: str, name: str) -> str:
    """The soft value of one row of /proc/self/limits ('unlimited', a number, or '?')."""
    for line in limits.splitlines():
        if line.startswith(name):
            parts = line[len(name):].split()
            return parts[0] if parts else "?"
    return "?"


def probe(identity: Identity, argv_prefix: list[str], preexec_fn, cwd: Path, memory_mb: int, nproc: int) -> None:
    """Start a shell exactly as the runner will be started and record in ``identity`` which limits hold."""
    try:
        done = subprocess.run([*argv_prefix, "/bin/sh", "-c", PROBE], cwd=cwd, env={"PATH": "/usr/bin:/bin"},
                              capture_output=True, text=True, timeout=30, preexec_fn=preexec_fn,
                              start_new_session=True)
        uid, limits, netdev = (done.stdout.split("@@") + ["", ""])[:3]
        uid = uid.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        identity.missing.append(f"every limit unverified (the probe did not run: {exc})")
        return
    as_root = os.geteuid() == 0 and uid == "0"  # not root: `unshare -rn` shows uid 0 for evalkit's own user
    if os.geteuid() != 0:
        identity.applied.append(f"uid {os.geteuid()} (evalkit's own user)")
    elif identity.uid is not None and uid != str(identity.uid):
        identity.missing.append(f"unprivileged user (the probe ran as uid {uid or '?'})")
    elif as_root:
        identity.missing.append("unprivileged user (" + (identity.stay_reason or "ran as root") + ")")
    else:
        identity.applied.append("a uid of its own")  # not the number: it is drawn at random, results must not be
    procs = _limit(limits, "Max processes")
    if as_root:
        identity.missing.append("process limit (not enforced for root)")
    elif not procs.isdigit():
        identity.missing.append("process limit")
    else:
        identity.applied.append(f"{procs} processes" + ("" if identity.uid is not None else " (the user's own included)"))
    fsize = _limit(limits, "Max file size")
    if fsize.isdigit():
        identity.applied.append(f"{int(fsize) >> 20} MiB per file")
    else:
        identity.missing.append("file size limit")
    if _limit(limits, "Max address space").isdigit():
        identity.applied.append(f"{memory_mb} MiB address space")
    else:
        identity.missing.append("memory limit")
    interfaces = [line.split(":", 1)[0].strip() for line in netdev.splitlines()[2:] if ":" in line]
    interfaces = [n for n in interfaces if n != "lo"]
    if interfaces:
        identity.missing.append(f"network cut (interfaces {', '.join(interfaces[:3])} reachable)")
    else:
        identity.applied.append("no network")
    identity.missing.append("CPU quota (no cgroup)")


def note(identity: Identity) -> str:
    """One line for the run's reason: what held and what did not."""
    text = "local backend limits: " + (", ".join(identity.applied) or "none")
    if identity.missing:
        text += "; not applied: " + ", ".join(identity.missing)
    return text


def kill_uid(uid: int, rounds: int = 5) -> int:
    """SIGKILL every process of ``uid`` (a sandbox's own user) until none is left; return how many."""
    killed = 0
    for _ in range(rounds):
        found = []
        # the owner is asked after the listing, and `kill_listed` kills only while the pid names the process
        # listed: a uid read from a process that got the number in between never leads to a kill
        for proc in procs.others():
            try:
                if os.stat(f"/proc/{proc.pid}").st_uid == uid:
                    found.append(proc)
            except OSError:
                continue
        if not found:
            break
        killed += sum(procs.kill_listed(proc.pid, proc.start) for proc in found)
        time.sleep(0.05)
    return killed
