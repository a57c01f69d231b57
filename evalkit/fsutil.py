"""Atomic file writes and content digests: a half-written artifact never exists."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import weakref
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel


def canonical_json(obj: Any) -> str:
    """Same inputs, same bytes: sorted keys, no NaN surprises, stable separators."""
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def digest(obj: Any) -> str:
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


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
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


def pretty_json(obj: Any) -> str:
    """Indented, key-sorted JSON for artifacts people may read."""
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=1, default=str) + "\n"


def atomic_write_json(path: str | os.PathLike[str], obj: Any, compact: bool = False) -> None:
    """Write a model or plain object as sorted JSON (indented unless ``compact``), atomically.

    Compact output goes through json's C encoder: use it for large files (site data).
    """
    atomic_write_text(path, canonical_json(obj) + "\n" if compact else pretty_json(obj))
