"""Syntax validity of generated code, with tree-sitter for the suite's language."""

from __future__ import annotations

from evalkit.artifacts import SyntaxResult
from evalkit.treesitter import SUPPORTED, syntax_errors

MAX_ISSUES = 5


def check_syntax(source: str, language: str) -> SyntaxResult:
    """Parse ``source``; valid=None when there is no parser for the language."""
    if language not in SUPPORTED:
        return SyntaxResult(language=language, valid=None)
    issues = syntax_errors(source, language)
    shown = [f"line {i.line}:{i.column}: {i.message}" for i in issues[:MAX_ISSUES]]
    if len(issues) > MAX_ISSUES:
        shown.append(f"... and {len(issues) - MAX_ISSUES} more")
    return SyntaxResult(language=language, valid=not issues and bool(source.strip()), issues=shown)
