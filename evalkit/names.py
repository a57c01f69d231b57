"""The one rule for names that become file and folder names: case ids, suite folders, systems, releases.

A name is 1 to 120 characters: an ASCII letter or digit first, then letters, digits, `_`, `-` and
`.`, never two dots in a row and no dot at the end. So a name is always exactly one path component:
no `/`, no `\\`, never `.` or `..`, no leading dot (hidden files), no spaces or shell characters.
Every command that loads a project checks names with this rule before anything is written.
"""

from __future__ import annotations

import re

NAME_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9_-]|\.[A-Za-z0-9_-])*$"
"""The name rule as a regular expression (no look-around: pydantic's regex engine takes it too)."""
NAME_MAX = 120
"""Longest name accepted."""
NAME_RULE = ("1-120 characters: a letter or digit first, then letters, digits, '_', '-' or '.' "
             "(no '..', no trailing '.')")
"""The rule in words, for messages."""

_NAME = re.compile(NAME_PATTERN)


def is_valid_name(name: object) -> bool:
    """Whether ``name`` is a string that follows the name rule."""
    return isinstance(name, str) and len(name) <= NAME_MAX and _NAME.fullmatch(name) is not None


def name_problem(name: object, what: str) -> str | None:
    """None when ``name`` is valid, else a message such as "case id '../x' is not a valid name (...)"."""
    if is_valid_name(name):
        return None
    shown = repr(name) if not isinstance(name, str) or len(name) <= 200 else repr(name[:200] + "...")
    return f"{what} {shown} is not a valid name ({NAME_RULE})"
