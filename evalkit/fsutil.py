"""Atomic file writes and content digests: a half-written artifact never exists."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import weakref
from pathlib import Path
from typing import Callable, Iterable

from pydantic import BaseModel


def canonical_json(obj: object) -> str:
    """Same inputs, same bytes: sorted keys, no NaN surprises, stable separators."""
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def digest(obj: object) -> str:
    """sha256 hex of the canonical JSON of ``obj`` (bytes and str are hashed as they are)."""
    if isinstance(obj, bytes):
        data = obj
    elif isinstance(obj, str):
        data = obj.encode("utf-8")
    else:
        data = canonical_json(obj).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def file_digest(path: str | os.PathLike[str]) -> str:
    """sha256 hex of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_replace_listeners: list[weakref.WeakMethod[Callable[[str], None]]] = []


def on_replace(method: Callable[[str], None]) -> None:
    """Call the bound ``method`` with each path an atomic write replaces, while its object lives.

    doit's file checker keeps a stat memo for a run (evalkit.doitplus) and forgets what we rewrite.
    """
    _replace_listeners[:] = [ref for ref in _replace_listeners if ref() is not None]
    _replace_listeners.append(weakref.WeakMethod(method))  # type: ignore[arg-type]


def replaced(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Tell the `on_replace` listeners about files another process replaced (a forked renderer's pages)."""
    for path in paths:
        for ref in _replace_listeners:
            if (listener := ref()) is not None:
                listener(str(path))


class WriteOutsideRoots(Exception):
    """evalkit's own bug (or a planted symlink): a write aimed outside the folders evalkit may write.

    Names are validated when the project loads, so this should never happen; it is reported as an
    evalkit bug, never as bad input or an infrastructure error.
    """

    def __init__(self, path: str, real: str, roots: list[str]) -> None:
        self.path = path
        where = f" (that is {real})" if real != path else ""
        super().__init__(f"evalkit bug: refused to write {path}{where}: outside the folders evalkit writes "
                         f"({', '.join(roots)}) once '..' and symlinks are resolved")


_write_roots: list[str] = []


def confine_writes(*roots: str | os.PathLike[str]) -> None:
    """Allow writes below ``roots`` (resolved now; a root that is a symlink is followed once, here).

    Loading a project confines writes to its work and site folders, `evalkit import` to the suite
    folder it was given. Roots add up within a process (tests load several projects); before any
    root is set (schema generation, library use) writes are not confined.
    """
    for root in roots:
        real = os.path.realpath(os.fspath(root))
        if real not in _write_roots:
            _write_roots.append(real)


def guarded(path: str | os.PathLike[str]) -> Path:
    """``path`` itself, after checking it lies below a write root once `..` and symlinks are resolved.

    The last component is not followed (an atomic write replaces a symlink, never writes through
    it). Every evalkit write goes through here: atomic writes, `ensure_dir`, `touch`, `copy_file`.
    Raises WriteOutsideRoots.
    """
    p = os.path.abspath(os.fspath(path))
    if not _write_roots:
        return Path(path)
    head, name = os.path.split(p)
    real = os.path.join(os.path.realpath(head), name) if name not in ("", ".", "..") else os.path.realpath(p)
    for root in _write_roots:
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return Path(path)
    raise WriteOutsideRoots(p, real, _write_roots)


def ensure_dir(path: str | os.PathLike[str]) -> Path:
    """``mkdir -p`` below a write root (see `guarded`)."""
    p = guarded(path)
    p.mkdir(parents=True, exist_ok=True)
    return p


def touch(path: str | os.PathLike[str]) -> None:
    """Create an empty marker file below a write root."""
    guarded(path).touch()


def remove(path: str | os.PathLike[str]) -> None:
    """Delete a file below a write root (absent is fine)."""
    try:
        guarded(path).unlink()
    except FileNotFoundError:
        pass


def copy_file(src: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """Copy a file's bytes to ``dest`` (below a write root), atomically."""
    with open(src, "rb") as fh:
        atomic_write_bytes(dest, fh.read())


def _temp_file(path: Path) -> tuple[int, str]:
    """A new temp file next to ``path``, opened for writing, with the mode an ordinary file gets.

    tempfile.mkstemp creates files 0600, and the rename kept that: a web server running as another
    user answered 403 for every site page. Here the kernel applies the umask to 0666, as for any
    file a program creates (0644 under the usual umask 022); folders get 0777 less the umask (0755).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name next to {path}")


#: Secret values (API keys of every provider) no file evalkit writes may contain; see ``redact``.
_secrets: set[bytes] = set()
REDACTED = b"[redacted]"
#: Shorter values are not secrets worth the name (and would blank ordinary text).
MIN_SECRET_LEN = 8


def register_secrets(values: Iterable[str]) -> None:
    """Values every later write replaces with ``[redacted]`` (evalkit.llm.keys registers every key)."""
    for value in values:
        value = value.strip()
        if len(value) >= MIN_SECRET_LEN:
            _secrets.add(value.encode("utf-8"))


def redact(data: bytes) -> bytes:
    """``data`` with every registered secret replaced by ``[redacted]``."""
    for secret in _secrets:
        if secret in data:
            data = data.replace(secret, REDACTED)
    return data


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder and a rename (below a write root).

    Every file evalkit writes passes here, through ``redact``: a key a system's tests printed (or
    anything else) never reaches an artifact, the caches or the site. The file gets 0666 less the
    umask (0644 usually), like any file a program creates."""
    data = redact(data) if _secrets else data
    path = guarded(path)
    try:
        fd, tmp = _temp_file(path)
    except FileNotFoundError:  # its folder is new (no mkdir before each write: a site writes thousands of pages to folders that exist)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _temp_file(path)
    try:
        try:  # os.write, not a file object: os.fdopen costs three system calls more per file (fstat, ioctl, lseek)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
        for ref in _replace_listeners:
            if (listener := ref()) is not None:
                listener(str(path))
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write UTF-8 text atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def pretty_json(obj: object) -> str:
    """Indented, key-sorted JSON for artifacts people may read."""
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=1, default=str) + "\n"


def atomic_write_json(path: str | os.PathLike[str], obj: object, compact: bool = False) -> None:
    """Write a model or plain object as sorted JSON (indented unless ``compact``), atomically.

    Compact output goes through json's C encoder: use it for large files (site data).
    """
    atomic_write_text(path, canonical_json(obj) + "\n" if compact else pretty_json(obj))
