"""Source trees as tar archives (built in memory) and digests; capped reading of fetched archives."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

#: Folders never copied into a sandbox nor digested: version-control metadata.
SKIP_DIRS = frozenset({".git"})
SANDBOX_UID = 1000


@dataclass(frozen=True)
class Entry:
    """One file, folder or symbolic link of a tree (relative POSIX path)."""

    rel: str
    path: Path
    kind: str  # "dir" | "file" | "link"
    mode: int


def iter_tree(root: str | os.PathLike[str]) -> Iterator[Entry]:
    """Entries of ``root`` in a stable order, without ``.git`` folders, sockets or devices."""
    root = Path(root)
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as it:
            items = sorted(it, key=lambda e: e.name)
        subdirs = []
        for item in items:
            path = Path(item.path)
            rel = path.relative_to(root).as_posix()
            st = item.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                yield Entry(rel, path, "link", 0o777)
            elif stat.S_ISDIR(st.st_mode):
                if item.name in SKIP_DIRS:
                    continue
                yield Entry(rel, path, "dir", stat.S_IMODE(st.st_mode))
                subdirs.append(path)
            elif stat.S_ISREG(st.st_mode):
                yield Entry(rel, path, "file", stat.S_IMODE(st.st_mode))
        stack.extend(reversed(subdirs))


def tree_digest(root: str | os.PathLike[str]) -> str:
    """sha256 over the tree's paths, kinds, executable bits, link targets and file contents."""
    h = hashlib.sha256()
    for e in iter_tree(root):
        h.update(f"{e.kind}\0{e.rel}\0{int(bool(e.mode & 0o111))}\0".encode())
        if e.kind == "link":
            h.update(os.readlink(e.path).encode("utf-8", "surrogateescape"))
        elif e.kind == "file":
            with open(e.path, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
        h.update(b"\n")
    return h.hexdigest()


def _info(name: str, kind: str, mode: int, uid: int, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = {"dir": tarfile.DIRTYPE, "file": tarfile.REGTYPE, "link": tarfile.SYMTYPE}[kind]
    info.mode, info.uid, info.gid, info.size = mode, uid, uid, size
    info.uname = info.gname = "evalkit" if uid == SANDBOX_UID else "root"
    info.mtime = 0
    return info


class TarBuilder:
    """An in-memory tar whose members are owned by a chosen uid/gid (1000 unless told)."""

    def __init__(self) -> None:
        self._buf = io.BytesIO()
        self._tar = tarfile.open(fileobj=self._buf, mode="w", format=tarfile.PAX_FORMAT)

    def add_dir(self, name: str, mode: int = 0o755, uid: int = SANDBOX_UID) -> None:
        self._tar.addfile(_info(name, "dir", mode, uid))

    def add_bytes(self, name: str, data: bytes, mode: int = 0o644, uid: int = SANDBOX_UID) -> None:
        self._tar.addfile(_info(name, "file", mode, uid, len(data)), io.BytesIO(data))

    def add_tree(self, root: str | os.PathLike[str], prefix: str, uid: int = SANDBOX_UID) -> None:
        """Add ``root``'s entries under ``prefix``, owner ``uid``, user-writable (modes kept otherwise)."""
        self.add_dir(prefix, 0o755, uid)
        for e in iter_tree(root):
            name = f"{prefix}/{e.rel}"
            if e.kind == "dir":
                self.add_dir(name, e.mode | 0o700, uid)
            elif e.kind == "link":
                info = _info(name, "link", 0o777, uid)
                info.linkname = os.readlink(e.path)
                self._tar.addfile(info)
            else:
                with open(e.path, "rb") as fh:
                    size = os.fstat(fh.fileno()).st_size
                    self._tar.addfile(_info(name, "file", e.mode | 0o600, uid, size), fh)

    def getvalue(self) -> bytes:
        self._tar.close()
        return self._buf.getvalue()


class CappedReader(io.RawIOBase):
    """A file-like view of byte chunks that stops (EOF) after ``cap`` bytes and says so."""

    def __init__(self, chunks: Iterable[bytes], cap: int) -> None:
        self._it = iter(chunks)
        self._pending = b""
        self.cap = cap
        self.read_bytes = 0
        self.capped = False

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        room = self.cap - self.read_bytes
        if room <= 0:
            self.capped = self.capped or bool(self._pending) or self._peek()
            return 0
        while not self._pending:
            try:
                self._pending = next(self._it)
            except StopIteration:
                return 0
        n = min(len(b), len(self._pending), room)
        b[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        self.read_bytes += n
        return n

    def _peek(self) -> bool:
        try:
            self._pending = next(self._it)
        except StopIteration:
            return False
        return True


def read_tar_files(chunks: Iterable[bytes], cap: int, strip: str = "") -> tuple[dict[str, bytes], bool]:
    """Regular files of a tar stream (name relative to ``strip``), reading at most ``cap`` bytes.

    Returns the files read in full and whether the stream was cut short by the cap.
    """
    reader = CappedReader(chunks, cap)
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BufferedReader(reader), mode="r|") as tar:
            for member in tar:
                if not member.isreg():
                    continue
                fh = tar.extractfile(member)
                if fh is None:
                    continue
                data = fh.read()
                if len(data) < member.size:
                    break
                name = member.name
                if strip and name.startswith(strip):
                    name = name[len(strip):].lstrip("/")
                files[name] = data
    except (tarfile.ReadError, EOFError, tarfile.StreamError):
        if not reader.capped and reader.read_bytes < cap:
            raise
        return files, True
    return files, reader.capped
