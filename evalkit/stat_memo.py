"""Small facts read from many files, kept from one run to the next while each file's stat is unchanged.

summarize reads a field or two from every pair's artifacts (where its tests ran, which cluster worker made it): 4,000
to 12,000 opens and JSON parses on a 1,000 x 4 project, on every run that reaches it, though a one-case edit changes
a dozen files. `StatMemo` keeps each fact beside the (mtime_ns, size, inode) of the file it came from, in one pickle
below the work folder, and reads a file again only when that changed: an atomic write makes a new inode, an edit in
place a new mtime (the trust doit's and `evalkit.report.case_details`' stat checks place in a stat). The pickle is
salted with evalkit's code (`code_digest`), so a fact is never one that other code derived.
"""

from __future__ import annotations

import os
import pickle
import stat
from pathlib import Path
from typing import Callable, Generic, TypeVar, cast

from evalkit.code_digest import code_digest
from evalkit.fsutil import atomic_write_bytes

T = TypeVar("T")

VERSION = 1
Sig = tuple[int, int, int]
"""(mtime_ns, size, inode) of a regular file."""


def regular_file_sig(path: str) -> Sig | None:
    """(mtime_ns, size, inode) of a regular file; None when there is none at ``path``."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino) if stat.S_ISREG(st.st_mode) else None


class StatMemo(Generic[T]):
    """``derive(file's bytes)`` per path, from the last run while the file's stat is the same (`save` keeps them)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.old = cast("dict[str, tuple[Sig, T]]", _load(path))  # facts this memo's one `derive` made
        self.new: dict[str, tuple[Sig, T]] = {}

    def get(self, file: str, derive: Callable[[bytes], T]) -> T | None:
        """The fact of ``file`` (None when it is absent or not a regular file). ``derive`` must be a pure function of
        the bytes, the same one for every use of this memo's file."""
        sig = regular_file_sig(file)
        if sig is None:
            return None
        hit = self.old.get(file)
        if hit is not None and hit[0] == sig:
            self.new[file] = hit
            return hit[1]
        try:
            with open(file, "rb") as fh:
                data = fh.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        value = derive(data)
        self.new[file] = (sig, value)
        return value

    def save(self) -> None:
        """Keep the facts this run used (not the others: the file does not grow run after run), when they changed."""
        if self.new != self.old:
            atomic_write_bytes(self.path, pickle.dumps({"version": VERSION, "salt": code_digest(), "facts": self.new},
                                                       protocol=pickle.HIGHEST_PROTOCOL))


def _load(path: Path) -> dict[str, tuple[Sig, object]]:
    """The kept facts, or none: a missing, unreadable or truncated file, or one of another version or code."""
    try:
        with open(path, "rb") as fh:
            data = pickle.load(fh)
    except Exception:  # noqa: BLE001 - pickle raises many kinds of error for a damaged file: a cold memo
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION or data.get("salt") != code_digest():
        return {}
    facts = data.get("facts")
    return facts if isinstance(facts, dict) else {}
