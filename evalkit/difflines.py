"""The class of one line of a unified diff as the report's pages colour it (file, add, del, hunk, ctx)."""

from __future__ import annotations


def line_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    if line.startswith("@@"):
        return "hunk"
    return "ctx"
