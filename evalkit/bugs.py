"""evalkit's own bugs: a stage that raised an unexpected exception.

Such an artifact has status ``bug`` (kept apart from the system's failures and from infrastructure
errors) and a record under ``<work>/bugs/<system>/<suite>/<case>/<stage>.json`` naming the code
that failed (`evalkit.code_digest.code_digest`). It is not retried on every run, as a flaky
Docker daemon or API is: the same code would fail the same way. It is redone when evalkit's code
changes, or when asked (``evalkit run --retry-bugs``, ``EVALKIT_RETRY_BUGS=1``).
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

from evalkit.code_digest import code_digest
from evalkit.fsutil import atomic_write_json, remove
from evalkit.models import Model

TRACEBACK_FRAMES = 4
"""Frames of a bug's traceback written to the log (the innermost ones)."""
BUG_EXIT = 4
"""`evalkit run`'s exit status when some stage hit an evalkit bug (after 2 bad input and 3 a system failed
on every case, which take precedence)."""


class BugRecord(Model):
    """One stage artifact that recorded an evalkit bug."""

    target: str
    """The artifact's path."""
    stage: str
    """The stage that raised."""
    system: str
    """System name."""
    case: str
    """`suite/case`."""
    code: str
    """Digest of the evalkit code that raised (`code_digest`); other code redoes the stage."""
    reason: str
    """The exception, one line."""
    traceback: str
    """The innermost frames of the traceback."""


def record_path(work: Path | str, stage: str, system: str, suite: str, case_id: str) -> Path:
    return Path(f"{work}/bugs/{system}/{suite}/{case_id}/{stage}.json")


def short_traceback(exc: BaseException, frames: int = TRACEBACK_FRAMES) -> str:
    """The exception and its innermost ``frames`` frames (not the eighty lines of doit and evalkit above them)."""
    tb = traceback.extract_tb(exc.__traceback__)[-frames:]
    lines = "".join(traceback.format_list(tb))
    return f"Traceback (innermost {len(tb)} frames):\n{lines}{type(exc).__name__}: {exc}"


def reason_of(stage: str, exc: BaseException) -> str:
    return f"evalkit bug in {stage}: {type(exc).__name__}: {exc}"[:1000]


def report(stage: str, system: str, case_key: str, exc: BaseException) -> str:
    """Say a bug on stderr (short traceback); returns the traceback text."""
    text = short_traceback(exc)
    print(f"evalkit: BUG in {stage} of {system} on {case_key} (status bug; redone when evalkit's code changes "
          f"or with --retry-bugs):\n{text}", file=sys.stderr)
    return text


def write_record(work: Path | str, stage: str, system: str, suite: str, case_id: str, target: str,
                 reason: str, tb: str) -> None:
    record = BugRecord(target=target, stage=stage, system=system, case=f"{suite}/{case_id}", code=code_digest(),
                       reason=reason, traceback=tb)
    atomic_write_json(record_path(work, stage, system, suite, case_id), record)


def clear_record(work: Path | str, stage: str, system: str, suite: str, case_id: str) -> None:
    path = record_path(work, stage, system, suite, case_id)
    if path.exists():
        remove(path)


def records(work: Path | str) -> list[BugRecord]:
    """Every bug record of the work folder (none: one failed stat)."""
    root = f"{work}/bugs"
    if not os.path.isdir(root):
        return []
    out = []
    for dirpath, _dirs, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".json"):
                try:
                    out.append(BugRecord.model_validate_json(Path(dirpath, name).read_bytes()))
                except (OSError, ValueError):
                    continue
    return out


def to_redo(work: Path | str, retry_all: bool | None = None) -> set[str]:
    """Artifacts whose bug is redone this run: all with ``retry_all`` (default: $EVALKIT_RETRY_BUGS=1),
    else those recorded by other code than this."""
    found = records(work)
    if not found:
        return set()
    if retry_all is None:
        retry_all = os.environ.get("EVALKIT_RETRY_BUGS") == "1"
    if retry_all:
        return {r.target for r in found}

    now = code_digest()
    return {r.target for r in found if r.code != now}


def describe_bugs(work: Path | str, pairs: set[tuple[str, str]] | None = None) -> list[str]:
    """One line per system with recorded bugs, for stderr: how many stages, and the first reason. With ``pairs``
    ((system, suite/case) of this run), only theirs: a system or case since taken out of the run is not reported."""
    by: dict[str, list[BugRecord]] = {}
    for r in records(work):
        if pairs is None or (r.system, r.case) in pairs:
            by.setdefault(r.system, []).append(r)
    return [f"evalkit bug in {len(rs)} stage(s) of system {name!r}; first: {rs[0].case} {rs[0].stage}: {rs[0].reason}"
            for name, rs in sorted(by.items())]
