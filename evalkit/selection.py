"""The run's case selection: ``$EVALKIT_SELECT`` (``evalkit run --select``) as case-key globs."""

from __future__ import annotations

import fnmatch
import os


def selection() -> list[str]:
    """Case globs from $EVALKIT_SELECT (`suite/case-glob`, comma separated); empty = all."""
    raw = os.environ.get("EVALKIT_SELECT", "")
    return [p.strip() for p in raw.split(",") if p.strip()]


def selected(case_key: str, globs: list[str]) -> bool:
    return not globs or any(fnmatch.fnmatchcase(case_key, g) for g in globs)
