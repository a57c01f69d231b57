"""Syntax validity of generated code, with tree-sitter: the suite's language, or each file's extension."""

from __future__ import annotations

from evalkit.artifacts import SyntaxResult
from evalkit.treesitter import PARSEABLE, canonical, language_of_path, syntax_errors

MAX_ISSUES = 5


def check_syntax(source: str, language: str) -> SyntaxResult:
    """Parse ``source``; valid=None when there is no parser for the language."""
    if canonical(language) not in PARSEABLE:
        return SyntaxResult(language=language, valid=None)
    issues = syntax_errors(source, language)
    shown = [f"line {i.line}:{i.column}: {i.message}" for i in issues[:MAX_ISSUES]]
    if len(issues) > MAX_ISSUES:
        shown.append(f"... and {len(issues) - MAX_ISSUES} more")
    return SyntaxResult(language=language, valid=not issues and bool(source.strip()), issues=shown)


def check_files(files: dict[str, str]) -> SyntaxResult | None:
    """Parse every output file whose extension has a parser (``.ts``, ``.tsx``, ``.js``, ``.mjs``, ``.cjs``,
    ``.jsx``, ``.java``, ``.py``); issues say ``file:line:column: what``.

    For answers made of several files whose names the system chooses (e.g. LLMService's generated tests
    and models). None when no file has a parser. A blank file is invalid.
    """
    issues: list[str] = []
    languages: list[str] = []
    checked = 0
    for path in sorted(files):
        language = language_of_path(path)
        if language is None:
            continue
        checked += 1
        if language not in languages:
            languages.append(language)
        text = files[path]
        if not text.strip():
            issues.append(f"{path}: empty file")
            continue
        issues += [f"{path}:{i.line}:{i.column}: {i.message}" for i in syntax_errors(text, language)]
    if not checked:
        return None
    shown = issues[:MAX_ISSUES] + ([f"... and {len(issues) - MAX_ISSUES} more"] if len(issues) > MAX_ISSUES else [])
    return SyntaxResult(language="+".join(languages), valid=not issues, issues=shown)
