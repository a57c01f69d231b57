"""Canaries: answers evalkit makes from a case that do no real work, to prove its headline cannot be won
without the work (the metric-validity alarm, evalkit.report.leaderboard).

One function per way of doing no work, on text; each kind (``Kind.canary``) says which apply to its cases
and what they are made of (the legacy file, the expected file, the gold patch, the expected tasks):

- ``empty``: no answer at all;
- ``unchanged``: the input returned as it is;
- ``truncated``: the first half of the expected answer, its brackets closed (silent truncation);
- ``truncated-elided``: the same with an elision comment where the rest was;
- ``placeholder``: a trivial stub of the same file;
- ``lines-deleted``: the input with the lines the kind knows to be wrong deleted (migration: the incidents').
"""

from __future__ import annotations

import re

from evalkit.config import CANARY_VARIANTS, canary_name
from evalkit.graders.degenerate import strip_comments_and_literals
from evalkit.treesitter import PARSEABLE, canonical, syntax_errors

VARIANTS = CANARY_VARIANTS
"""Every canary, in the order the report lists them (evalkit.config, where `canaries: true` adds them)."""

_LINE_COMMENT = {"python": "#"}
_OPEN_CLOSE = {"{": "}", "(": ")", "[": "]"}


def system_name(variant: str) -> str:
    """The system name of canary ``variant``."""
    return canary_name(variant)


def elision_comment(language: str) -> str:
    """A typical elision comment of a model's answer, in the language's line comment."""
    return f"{_LINE_COMMENT.get(language, '//')} ... rest of the file remains unchanged ..."


def _closers(code: str, language: str) -> str:
    """What closes the brackets left open in ``code`` (comments and literals ignored), innermost first."""
    if language == "python":
        return ""
    stack: list[str] = []
    for ch in strip_comments_and_literals(code):
        if ch in _OPEN_CLOSE:
            stack.append(_OPEN_CLOSE[ch])
        elif ch in _OPEN_CLOSE.values() and stack and stack[-1] == ch:
            stack.pop()
    return "".join(reversed(stack))


def truncated(text: str, language: str, elided: bool = False) -> str:
    """The first half of ``text`` (by lines), brackets closed; cut a few lines earlier where that parses and the
    half does not (e.g. a half ending on an annotation); with ``elided``, an elision comment where the rest was."""
    lines = text.splitlines()
    half = max(1, len(lines) // 2)
    first = _cut(lines, half, language, elided)
    if canonical(language) not in PARSEABLE or not syntax_errors(first, language):
        return first
    for n in range(half - 1, max(0, half - 20), -1):
        candidate = _cut(lines, n, language, elided)
        if not syntax_errors(candidate, language):
            return candidate
    return first


def _cut(lines: list[str], n: int, language: str, elided: bool) -> str:
    head = "\n".join(lines[:n])
    if language == "python":
        head = head.rstrip()
        if head.endswith(":"):  # a block opened on the last line kept: give it a body
            head += "\n    pass"
        tail = f"\n{elision_comment(language)}\n" if elided else "\n"
        return head + tail
    closers = _closers(head, language)
    middle = f"\n{elision_comment(language)}" if elided else ""
    return head + middle + "".join(f"\n{c}" for c in closers) + "\n"


_JAVA_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.M)


def placeholder(path: str, language: str, like: str | None = None) -> str:
    """A trivial stub standing for the file at ``path`` (Java: its package and an empty class of its name)."""
    stem = re.sub(r"\W", "_", path.rsplit("/", 1)[-1].split(".", 1)[0]) or "Placeholder"
    if language == "java":
        package = _JAVA_PACKAGE.search(like or "")
        head = f"package {package.group(1)};\n\n" if package else ""
        return f"{head}public class {stem} {{}}\n"
    if language == "python":
        return "# TODO: implement\npass\n"
    if language == "go":
        return "package main\n"
    return "export {};\n"


def delete_lines(text: str, lines: set[int]) -> str:
    """``text`` without its 1-based ``lines``."""
    return "\n".join(ln for n, ln in enumerate(text.splitlines(), 1) if n not in lines) + "\n"


_HUNK = re.compile(r"^@@ ", re.M)
_FILE = re.compile(r"^diff --git ", re.M)


def half_patch(patch: str) -> str | None:
    """The first half of a unified diff's hunks (whole hunks: it still applies); None with fewer than two."""
    files = [m.start() for m in _FILE.finditer(patch)] or [0]
    pieces = [patch[a:b] for a, b in zip(files, [*files[1:], len(patch)])]
    hunks = [(i, m.start()) for i, p in enumerate(pieces) for m in _HUNK.finditer(p)]
    if len(hunks) < 2:
        return None
    keep = hunks[:len(hunks) // 2]
    out = []
    for i, piece in enumerate(pieces):
        mine = [start for j, start in keep if j == i]
        if not mine:
            continue
        starts = [m.start() for m in _HUNK.finditer(piece)]
        cut = starts[len(mine)] if len(mine) < len(starts) else len(piece)
        out.append(piece[:cut])
    text = "".join(out)
    return text if text.endswith("\n") else text + "\n"


def placeholder_patch() -> str:
    """A diff that applies anywhere and changes nothing that matters: a new TODO file."""
    return ("diff --git a/TODO.md b/TODO.md\nnew file mode 100644\n--- /dev/null\n+++ b/TODO.md\n"
            "@@ -0,0 +1 @@\n+TODO: fix the issue\n")
