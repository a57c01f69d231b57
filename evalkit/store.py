"""Content-addressed store for expensive results (system runs, model calls, container runs).

Lives outside doit's database, so a killed run or a lost ``.doit.db`` never pays twice:
the key is a digest of everything the result depends on.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from pathlib import Path
from contextlib import AbstractContextManager
from typing import Any, Iterator, Protocol

from evalkit.fsutil import atomic_write_json, digest, pretty_json, redact

class CacheService(Protocol):
    """The coordinator's cache service as a cluster worker reaches it (evalkit.executors.cache_service.ServiceRef)."""

    def read(self, rel: str) -> bytes | None: ...

    def write(self, rel: str, data: bytes) -> None: ...

    def has(self, rel: str) -> bool: ...

    def delete(self, rel: str) -> None: ...

    def budget(self, limit: float | None, charge: float = 0.0) -> dict[str, Any]: ...

    def claim(self, rel: str) -> AbstractContextManager[None]: ...


_remote: list[tuple[CacheService, Path]] = []
"""Set while a call runs on a cluster worker: (the coordinator's cache service, this call's work folder). Entries
below that folder are read and written through the service (evalkit.executors.cache_service), never here."""


@contextlib.contextmanager
def remote(service: CacheService, work: Path) -> Iterator[None]:
    """Within: every store below ``work`` reads and writes the coordinator's cache through ``service``."""
    _remote.append((service, Path(work)))
    try:
        yield
    finally:
        _remote.remove((service, Path(work)))


def remote_service() -> CacheService | None:
    """The coordinator's cache service while a call runs on a cluster worker, else None."""
    return _remote[-1][0] if _remote else None


def _through(path: Path) -> tuple[CacheService, str] | None:
    for service, work in reversed(_remote):
        if path.is_relative_to(work):
            return service, path.relative_to(work).as_posix()
    return None


class ContentStore:
    """A folder of JSON blobs addressed by the digest of their inputs."""

    def __init__(self, root: str | Path, namespace: str) -> None:
        self.root = Path(root) / namespace

    def key(self, inputs: object) -> str:
        """The address of a result computed from ``inputs``."""
        return digest(inputs)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        """The stored value, or None when absent (a corrupt entry counts as absent)."""
        remote_entry = _through(self.path(key)) if _remote else None
        if remote_entry is not None:
            raw = remote_entry[0].read(remote_entry[1])
            try:
                return None if raw is None else json.loads(raw)
            except ValueError:
                return None
        try:
            with open(self.path(key), encoding="utf-8") as fh:
                return json.load(fh)
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def put(self, key: str, value: object) -> None:
        remote_entry = _through(self.path(key)) if _remote else None
        if remote_entry is not None:
            remote_entry[0].write(remote_entry[1], redact(pretty_json(value).encode("utf-8")))
            return
        atomic_write_json(self.path(key), value)

    @contextlib.contextmanager
    def claim(self, key: str) -> Iterator[None]:
        """Hold while computing the value of ``key``, and look ``key`` up again inside: a thread or process of this
        host claiming the same key meanwhile waits, then finds the value stored, so identical work in flight at
        once is done and paid once (an exclusive ``flock`` on ``<key>.lock`` beside the entry; the kernel drops it
        when its holder dies). On a cluster worker the coordinator's cache service takes the same lock for as long
        as the worker's claim connection stays open, so workers (and the coordinator's host) exclude each other."""
        lock = self.path(key).with_suffix(".lock")
        remote_entry = _through(lock) if _remote else None
        if remote_entry is not None:
            with remote_entry[0].claim(remote_entry[1]):
                yield
            return
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def delete(self, key: str) -> None:
        """Drop the entry under ``key`` (absent: nothing to do)."""
        remote_entry = _through(self.path(key)) if _remote else None
        if remote_entry is not None:
            remote_entry[0].delete(remote_entry[1])
            return
        self.path(key).unlink(missing_ok=True)

    def __contains__(self, key: str) -> bool:
        remote_entry = _through(self.path(key)) if _remote else None
        if remote_entry is not None:
            return bool(remote_entry[0].has(remote_entry[1]))
        return self.path(key).exists()
