"""Degenerate outputs, found without a model: empty, unchanged from the legacy file, or incomplete.

- *empty*: no main file, or one holding only whitespace (not an answer).
- *unchanged*: the output equals the legacy input once line endings and trailing whitespace are
  normalised (a migration that did nothing).
- *incomplete*: the output elides code: a placeholder comment ("// ... rest of the file remains
  unchanged ...", "# ... existing code ...", "other methods remain unchanged", "omitted for
  brevity", and a vocabulary of other wordings: "rest unchanged", "same as before", "TODO: migrate
  the other methods", "<snip>", ...), a Java ``...`` body or argument list, a file cut off with
  unclosed braces (Java) or an open bracket or block (Python), a Python function reduced to
  ``...``/``pass`` whose legacy version had a body, or, given the expected file too, a declaration
  the legacy and expected files share missing from the output (silent truncation, braces closed).

Conservative on purpose: every expected file of the demo cases and of the real Konveyor Kai data
is judged complete. Kai's judge prompt gives such files all zeros and "not compilable", so the
migration judge decides them here without a model call (see evalkit.graders.migration_judge).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import TYPE_CHECKING

from evalkit import pyast
from evalkit.graders.declarations import structure, stubbed_bodies, supported
from evalkit.models import Model

if TYPE_CHECKING:
    from evalkit.artifacts import Sample

BRACE_LANGUAGES = {"java", "javascript", "typescript", "c", "cpp", "csharp", "go", "kotlin", "scala", "rust"}


class Assessment(Model):
    """What the degenerate-output checks found in one generated file."""

    empty: bool
    """No content at all (missing file, or only whitespace)."""
    unchanged: bool | None
    """Equal to the legacy file after normalising line endings and trailing whitespace; None without a legacy file."""
    complete: bool
    """No elided code found (False for an empty file)."""
    elisions: list[str] = []
    """Where code is elided, e.g. "line 12: placeholder comment '// ... rest unchanged ...'"."""

    @property
    def decided(self) -> str | None:
        """empty, unchanged or incomplete: why the output gets the all-zero verdict without a model; else None."""
        if self.empty:
            return "empty"
        if self.unchanged:
            return "unchanged"
        if not self.complete:
            return "incomplete"
        return None

    def reason(self) -> str:
        """The decision in plain words (empty when nothing was decided)."""
        if self.empty:
            return "the output file is empty or missing"
        if self.unchanged:
            return "the output is the legacy file unchanged"
        if not self.complete:
            more = f" (and {len(self.elisions) - 3} more)" if len(self.elisions) > 3 else ""
            return "the output elides code: " + "; ".join(self.elisions[:3]) + more
        return ""


def is_blank(text: str | None) -> bool:
    """True for a missing file or one holding only whitespace."""
    return text is None or not text.strip()


def normalise(text: str) -> str:
    """Line endings to \\n, trailing whitespace of every line and blank lines at both ends removed."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def is_unchanged(output: str, legacy: str) -> bool:
    """The output is the legacy file, up to line endings and trailing whitespace."""
    return normalise(output) == normalise(legacy)


# --- placeholder comments --------------------------------------------------------------------
_DOTS = r"(?:\.{3,}|…)"
_NOUN = (r"(?:code|file|class|methods?|fields?|functions?|implementation|logic|getters?|setters?|imports?|"
         r"content|body|bodies|members?|properties|constructors?|lines?|parts?|sections?|tests?)")
_KEEP = (r"(?:remains?|stays?|unchanged|as (?:before|is|in the original)|the same|omitted|not shown|"
         r"(?:are|is) (?:unchanged|the same|omitted|not shown))")
_PLACEHOLDERS = [
    # "..." alone (only when the comment stands alone between code lines: see placeholder_comments)
    re.compile(rf"^{_DOTS}$"),
    # "... existing code ...", "... rest of the code remains the same ...", "... (same as before)"
    re.compile(rf"^(?=.{{0,100}}$){_DOTS}\W*(?:the\s+)?(?:rest|remaining|remainder|existing|unchanged|omitted|"
               rf"same|previous|as before|keep)\b", re.I),
    re.compile(rf"^(?=.{{0,100}}$){_DOTS}\s*(?:other|more|remaining|existing)\s+(?:\w+\s+)?{_NOUN}\s*(?:{_DOTS})?$", re.I),
    # "rest of the file remains unchanged", "Rest of the class ..."
    re.compile(rf"^(?:{_DOTS}\s*)?(?:the\s+)?(?:rest|remainder) of (?:the |this )?{_NOUN}\b", re.I),
    re.compile(rf"\b(?:rest|remainder) of (?:the |this )?{_NOUN}\b.*\b{_KEEP}", re.I),
    # "Other methods remain unchanged", "existing getters and setters stay the same"
    re.compile(rf"\b(?:other|remaining|existing|previous|unchanged)\s+(?:\w+\s+){{0,2}}{_NOUN}\s+{_KEEP}\b", re.I),
    re.compile(r"\b(?:omitted|truncated|elided|abbreviated|shortened) for (?:brevity|clarity|space)\b", re.I),
    re.compile(rf"\b(?:your|the)\s+(?:\w+\s+)?{_NOUN}\s+goes here\b", re.I),
]
_SHORT = r"(?=.{0,90}$)"
ELISION_VOCABULARY = [
    # "rest unchanged", "everything else stays the same", "remaining methods as before", "rest omitted"
    re.compile(rf"^{_SHORT}.*\b(?:rest|remainder|remaining|everything else|all else|the others)\b.{{0,40}}"
               r"\b(?:unchanged|the same|same as|as (?:before|is|above)|omitted|not shown|elided|follows?|here)\b", re.I),
    # "same as before", "(unchanged)", "as above", "no changes", "identical to the original"
    re.compile(rf"^{_SHORT}\W*(?:{_DOTS}\s*)?(?:\w+\s+){{0,3}}(?:unchanged|same as (?:before|above|the original|original|"
               r"in the original|the legacy)|as before|as above|no changes?|identical(?: to the original)?)\W*(?:{_DOTS})?\W*$", re.I),
    # "TODO: migrate the other methods", "TODO rest of the migration", "FIXME: convert the remaining beans"
    re.compile(r"\b(?:TODO|FIXME|XXX)\b.{0,40}\b(?:other|remaining|rest|others|remainder|the same for)\b", re.I),
    # "similarly for the other methods", "the remaining methods follow the same pattern"
    re.compile(r"\b(?:similar(?:ly)?|likewise|same)\b.{0,30}\bfor\b.{0,20}\b(?:the\s+)?(?:other|remaining|rest)\b", re.I),
    re.compile(r"\bfollows?\s+the\s+same\s+pattern\b", re.I),
    # "<snip>", "[snip]", "code continues ...", "keep the existing code", "add your code here"
    re.compile(r"(?:<|\[|\b)snip(?:ped)?(?:>|\]|\b)", re.I),
    re.compile(rf"\b{_NOUN}\s+(?:continues?|goes on)\b", re.I),
    re.compile(rf"^{_SHORT}.*\bkeep(?:s|ing)?\s+(?:the\s+|all\s+)?(?:rest|existing|remaining|other|original)\b", re.I),
    re.compile(rf"^{_SHORT}.*\b(?:add|insert|put|paste)\b.{{0,30}}\bhere\b", re.I),
    # "... existing code ...", "existing methods", "previous implementation" standing alone
    re.compile(rf"^{_SHORT}\W*(?:{_DOTS}\s*)?(?:the\s+)?(?:existing|previous|original|other|old)\s+(?:\w+\s+)?{_NOUN}\W*(?:{_DOTS})?\W*$", re.I),
]
"""Elision comments in other words than the patterns above: a vocabulary (each matched against a comment that
stands on its own line)."""


def _comment_lines(text: str, language: str) -> list[tuple[int, str, str]]:
    """(line, raw line, comment text) of every line that is only a comment."""
    if language == "python":
        return _python_comment_lines(text)
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        body = None
        if s.startswith("//"):
            body = s.lstrip("/")
        elif s.startswith("/*") and s.endswith("*/") and len(s) >= 4:
            body = s[2:-2].strip("*")
        elif s.startswith("<!--") and s.endswith("-->"):
            body = s[4:-3]
        if body is not None:
            out.append((n, raw.strip(), body.strip()))
    return out


def _python_comment_lines(text: str) -> list[tuple[int, str, str]]:
    """Python comments on lines of their own (tokenized, so never text inside a docstring)."""
    lines = text.splitlines()
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and tok.start[0] <= len(lines) \
                    and lines[tok.start[0] - 1].strip().startswith("#"):
                out.append((tok.start[0], tok.string.strip(), tok.string.lstrip("#").strip()))
    except (tokenize.TokenError, SyntaxError):
        pass  # comments up to the point where the file stops making sense
    return out


def placeholder_comments(text: str, language: str) -> list[str]:
    """Comments standing in for code that was left out."""
    found = []
    comments = _comment_lines(text, language)
    lines = {n for n, _, _ in comments}
    for n, raw, body in comments:
        if _PLACEHOLDERS[0].search(body) or _PLACEHOLDERS[3].search(body):
            # a bare "..." or "rest of the class" is a placeholder when it stands alone, not a line of a
            # longer comment or of a commented-out example
            if (n - 1) in lines or (n + 1) in lines:
                continue
            found.append(f"line {n}: placeholder comment {raw[:80]!r}")
        elif any(p.search(body) for p in _PLACEHOLDERS[1:]) or any(p.search(body) for p in ELISION_VOCABULARY):
            found.append(f"line {n}: placeholder comment {raw[:80]!r}")
    return found


# --- brace languages: code without comments and literals ------------------------------------
_COMMENT_OR_LITERAL = re.compile(
    r"//[^\n]*"                                  # line comment (its newline stays)
    r"|/\*(?:.*?\*/|.*\Z)"                        # block comment, or an unterminated one to the end
    r'|"""(?:.*?"""|.*\Z)'                         # text block
    r"""|"(?:\\[\s\S]|[^"\\\n])*(?:\\\Z)?"?"""   # string literal: stops at its quote or the line's end
    r"""|'(?:\\[\s\S]|[^'\\\n])*(?:\\\Z)?'?""",  # char literal, likewise
    re.S,
)


def _blank(match: re.Match[str]) -> str:
    token = match.group()
    if token.startswith("//"):
        return ""
    if token.startswith("/*"):
        return "\n" * token.count("\n")
    if token.startswith('"""'):
        return '""' + "\n" * token.count("\n")
    return token[0] * 2  # a literal, even one continued by a backslash-newline, becomes two quotes


def strip_comments_and_literals(text: str) -> str:
    """Java-like source with comments, string/char literals and text blocks blanked (newlines kept)."""
    return _COMMENT_OR_LITERAL.sub(_blank, text)


_DOTS_BODY = re.compile(r"\{\s*\.\.\.\s*\}|^\s*\.\.\.\s*;?\s*$|\(\s*\.\.\.\s*\)", re.M)


def brace_elisions(text: str) -> list[str]:
    """`...` standing for a body or arguments, and braces left open at the end (a cut-off file)."""
    code = strip_comments_and_literals(text)
    found = [f"line {code.count(chr(10), 0, m.start()) + 1}: '...' in place of code"
             for m in _DOTS_BODY.finditer(code)]
    depth = code.count("{") - code.count("}")
    if depth > 0:
        found.append(f"end of file: {depth} unclosed brace{'s' if depth != 1 else ''} (cut off)")
    return found


# --- python ----------------------------------------------------------------------------------
def _stub_kind(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # docstring
    if len(body) != 1:
        return None if body else "docstring only"
    stmt = body[0]
    if isinstance(stmt, ast.Pass):
        return "pass"
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is Ellipsis:
        return "..."
    return None


def _functions(tree: ast.AST) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[prefix + child.name] = child
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def python_elisions(text: str, legacy: str | None) -> list[str]:
    """A file cut off inside a bracket or block, and functions emptied that had a body in the legacy file."""
    found = []
    try:
        list(tokenize.generate_tokens(io.StringIO(text).readline))
    except tokenize.TokenError as exc:
        found.append(f"end of file: {exc.args[0]} (cut off)")
    except (SyntaxError, IndentationError):
        pass
    code_lines = [ln.rstrip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if code_lines and code_lines[-1].endswith(":"):
        found.append(f"end of file: block opened by {code_lines[-1].strip()[:60]!r} has no body (cut off)")
    if legacy:
        try:
            now, before = _functions(pyast.parse(text)), _functions(pyast.parse(legacy))
        except (SyntaxError, ValueError):
            return found
        for name, fn in now.items():
            kind = _stub_kind(fn)
            old = before.get(name)
            if kind and old is not None and _stub_kind(old) is None:
                found.append(f"line {fn.lineno}: {name}() reduced to {kind} (the legacy file has its body)")
    return found


TRUNCATED_SHARE = 0.8
"""An output with fewer non-blank lines than this share of the legacy and expected files may be cut off."""


def _code_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


def structural_truncation(text: str, legacy: str | None, expected: str | None, language: str) -> list[str]:
    """Declarations (types, methods, fields) both the legacy and the expected file have that ``text`` lacks, in a
    text shorter than TRUNCATED_SHARE of the shorter of the two: a silent truncation (braces closed, no comment).
    A file of about the right length that renames or drops a method is not cut off (`migrated` fails it for
    not keeping the declaration). Nothing without both files, or for a language whose declarations are not
    read (evalkit.graders.declarations: Java, Python, TypeScript/JavaScript with tree-sitter, Go by a line scan)."""
    if legacy is None or expected is None or not supported(language):
        return []
    emptied = _emptied(text, legacy, expected, language)
    if _code_lines(text) >= TRUNCATED_SHARE * min(_code_lines(legacy), _code_lines(expected)):
        return emptied
    must = structure(legacy, language).declarations & structure(expected, language).declarations
    lost = sorted(must - structure(text, language).declarations)
    if not lost:
        return []
    more = f" and {len(lost) - 3} more" if len(lost) > 3 else ""
    return [f"declares no {', '.join(lost[:3])}{more} (the legacy and expected files both do: cut off?)", *emptied]


def _emptied(text: str, legacy: str, expected: str, language: str) -> list[str]:
    """Methods (Java, TypeScript, JavaScript) whose body does something in the legacy and the expected file and
    nothing in ``text`` (empty, ``return null;``, ``throw ...``): a stub in place of the code."""
    _, before = stubbed_bodies(legacy, language)
    _, after = stubbed_bodies(expected, language)
    now, _ = stubbed_bodies(text, language)
    stubs = sorted(now & before & after)
    if not stubs:
        return []
    more = f" and {len(stubs) - 3} more" if len(stubs) > 3 else ""
    return [f"{', '.join(s.split(' ', 1)[1] for s in stubs[:3])}{more}: body reduced to a stub (the legacy and "
            "expected files have its code)"]


def elisions(text: str, language: str, legacy: str | None = None, expected: str | None = None) -> list[str]:
    """Every place where ``text`` elides code (empty list: complete as far as we can tell); with both ``legacy``
    and ``expected``, also the declarations they share that ``text`` lacks (structural truncation)."""
    found = placeholder_comments(text, language)
    if language == "python":
        found += python_elisions(text, legacy)
    elif language in BRACE_LANGUAGES:
        found += brace_elisions(text)
    return found + structural_truncation(text, legacy, expected, language)


def assess(generated: str | None, legacy: str | None, language: str, expected: str | None = None) -> Assessment:
    """Empty, unchanged (against ``legacy`` when given) and complete, for one generated file (with ``expected``
    too, a declaration both files keep and the answer lacks makes it incomplete)."""
    if is_blank(generated):
        return Assessment(empty=True, unchanged=None if legacy is None else is_blank(legacy), complete=False,
                          elisions=[])
    assert generated is not None
    found = elisions(generated, language, legacy, expected)
    return Assessment(empty=False, unchanged=None if legacy is None else is_unchanged(generated, legacy),
                      complete=not found, elisions=found)


def empty_answer(sample: Sample, main_file: str | None) -> bool:
    """No answer to grade: the main file missing or blank (a file the system deletes is an answer),
    or, for answers without files, no patch, text, discovered task or file at all."""
    if main_file and main_file in (getattr(sample, "deleted_files", None) or []):
        return False
    if main_file and (sample.files or not (sample.patch or sample.text)):
        return is_blank(sample.files.get(main_file))
    return (all(is_blank(v) for v in sample.files.values()) and is_blank(sample.patch) and is_blank(sample.text)
            and not sample.tasks and not (getattr(sample, "deleted_files", None) or []))
