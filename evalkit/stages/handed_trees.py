"""The source trees a stage call is handed (evalkit.executors.call): a repository case's tree made on the
coordinator, by content; the execute stage asks for its case's tree here before making one itself."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalkit.executors.blobs import FileRef


@dataclass(frozen=True)
class TreeRef:
    """A case's source tree made from ``repo@commit`` on the coordinator, by content (or why it could not be)."""

    files: dict[str, FileRef] = field(default_factory=dict)
    """Path inside the tree (posix) -> content."""
    host: str = ""
    """Where the coordinator holds it (used in place when the files are there)."""
    error: str = ""
    """Why there is no tree (``files`` empty)."""
    unmapped: bool = False
    """The error is this machine's setup (the repository is mapped nowhere), not the case."""


HANDED: contextvars.ContextVar[dict[str, TreeRef | Path] | None] = contextvars.ContextVar("evalkit_handed_trees",
                                                                                           default=None)


def handed_tree(repo: str, commit: str) -> TreeRef | Path | None:
    """Inside a stage call: the tree handed for ``repo@commit`` (a folder, or a `TreeRef` saying why there is
    none); outside one (validation, planning): None, and the caller makes the tree itself."""
    handed = HANDED.get()
    if handed is None:
        return None
    got = handed.get(f"{repo}@{commit}")
    return got if got is not None else TreeRef(error=f"the source tree of {repo}@{commit} was not handed to the "
                                                     "stage call (an evalkit bug)")


def in_call() -> bool:
    """A stage call is running in this context."""
    return HANDED.get() is not None
