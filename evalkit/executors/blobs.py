"""File bytes by content: the references a stage call carries, and the folder they are kept in.

A stage call never names a host file it relies on without its sha256 (`FileRef`). Where the
call runs, a file is used at its host path when it is there with that content; otherwise it is
materialized from a **blob source**: a content-addressed folder, ``<folder>/<sha[:2]>/<sha>``,
holding each file's bytes once (the coordinator's is ``<work>/cache/blobs``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from evalkit.fsutil import ensure_dir, file_digest


@dataclass(frozen=True)
class FileRef:
    """One file by content."""

    sha256: str
    """sha256 hex of its bytes."""
    size: int
    """Its size in bytes."""
    executable: bool = False
    """Its owner-execute bit (a script in a source tree)."""
    link: str | None = None
    """A symbolic link's target (then ``sha256`` digests the target text, and no blob is kept)."""


_memo: dict[str, tuple[int, int, FileRef]] = {}
"""Host path -> (mtime_ns, size, ref): a file is hashed again only when its stat changes."""


def file_ref(path: str) -> FileRef:
    """The content reference of a host file (hashed once per change of its stat); a symlink by its target."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path)
        return FileRef(hashlib.sha256(target.encode()).hexdigest(), 0, link=target)
    seen = _memo.get(path)
    if seen is not None and seen[0] == st.st_mtime_ns and seen[1] == st.st_size:
        return seen[2]
    ref = FileRef(file_digest(path), st.st_size, bool(st.st_mode & stat.S_IXUSR))
    _memo[path] = (st.st_mtime_ns, st.st_size, ref)
    return ref


def matches(path: str, ref: FileRef) -> bool:
    """The host file ``path`` is there with ``ref``'s content."""
    try:
        return file_ref(path).sha256 == ref.sha256
    except OSError:
        return False


class MissingBlob(RuntimeError):
    """A file a call needs is neither at its host path nor in the blob source (an infrastructure failure)."""


def _temp_name(dest: Path) -> Path:
    """A temporary name beside ``dest``, unique per process and thread (several threads publish calls at once)."""
    return dest.with_name(f".{dest.name}.{os.getpid()}.{threading.get_ident()}.tmp")


class BlobStore:
    """A content-addressed folder of file bytes (``<folder>/<sha[:2]>/<sha>``)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def path(self, sha256: str) -> Path:
        return self.folder / sha256[:2] / sha256

    def has(self, sha256: str) -> bool:
        return self.path(sha256).is_file()

    def put_file(self, src: str, ref: FileRef) -> None:
        """Keep ``src``'s bytes under their digest (once; a copy, never a link to a file that may be edited)."""
        dest = self.path(ref.sha256)
        if dest.is_file():
            return
        ensure_dir(dest.parent)
        tmp = _temp_name(dest)
        shutil.copyfile(src, tmp)
        if file_digest(tmp) != ref.sha256:  # edited since the call was built: not this content
            tmp.unlink()
            raise MissingBlob(f"{src} changed after its stage call was built")
        os.replace(tmp, dest)

    def put_all(self, files: Iterable[tuple[str, FileRef]]) -> int:
        """Keep every ``(host path, ref)``; returns how many were new."""
        new = 0
        for src, ref in files:
            if ref.link is None and not self.has(ref.sha256):
                self.put_file(src, ref)
                new += 1
        return new

    def materialize(self, ref: FileRef, dest: Path) -> None:
        """Place the blob at ``dest``: a copy (a stage may write into its tree; the blob stays as it was),
        executable when the original was; a symlink as a symlink."""
        if ref.link is not None:
            if not os.path.islink(dest) or os.readlink(dest) != ref.link:
                ensure_dir(dest.parent)
                if os.path.lexists(dest):
                    os.unlink(dest)
                os.symlink(ref.link, dest)
            return
        if dest.is_file() and file_ref(str(dest)).sha256 == ref.sha256:
            return
        src = self.path(ref.sha256)
        if not src.is_file():
            raise MissingBlob(f"blob {ref.sha256[:12]}... (for {dest.name}) is not in {self.folder}")
        ensure_dir(dest.parent)
        tmp = _temp_name(dest)
        shutil.copyfile(src, tmp)
        os.chmod(tmp, 0o755 if ref.executable else 0o644)
        os.replace(tmp, dest)
