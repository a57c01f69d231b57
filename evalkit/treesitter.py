"""Tree-sitter parsing for the languages evalkit understands: syntax errors and enclosing functions.

Parsers are not thread-safe, so each thread gets its own parser per language; the compiled
``Language`` objects are shared (they are immutable).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import tree_sitter

from evalkit.models import Model

SUPPORTED = {"java", "python"}
"""Languages with everything: syntax errors, enclosing functions, CodeBLEU."""
PARSEABLE = SUPPORTED | {"typescript", "tsx", "javascript"}
"""Languages whose syntax is checked (TypeScript and JavaScript: syntax errors and enclosing functions only)."""
EXTENSIONS: dict[str, str] = {
    ".java": "java", ".py": "python",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
}
"""File extension -> the grammar that parses it (JSX is part of tree-sitter-javascript's grammar)."""
ALIASES = {"ts": "typescript", "js": "javascript", "jsx": "javascript", "node": "javascript"}
"""Other names a suite's `language` may use for a parseable language."""

_local = threading.local()


class UnsupportedLanguage(ValueError):
    """The language has no tree-sitter grammar installed in evalkit."""


class SyntaxIssue(Model):
    """One place where the parser found an error or had to invent a missing token."""

    line: int
    """1-based line of the issue."""
    column: int
    """1-based column (in characters) of the issue."""
    message: str
    """What the parser found: an unexpected span (ERROR) or a token it had to assume (MISSING)."""


def canonical(language: str) -> str:
    """``language`` with its aliases resolved (``ts`` -> ``typescript``); unknown names unchanged."""
    return ALIASES.get(language, language)


def language_of_path(path: str) -> str | None:
    """The parseable language of a file name by its extension (``.ts``, ``.jsx``, ...), or None."""
    dot = path.rfind(".")
    return EXTENSIONS.get(path[dot:].lower()) if dot > path.rfind("/") else None


def _check(language: str) -> str:
    language = canonical(language)
    if language not in PARSEABLE:
        raise UnsupportedLanguage(
            f"unsupported language {language!r}: expected one of {sorted(PARSEABLE)}"
        )
    return language


@cache
def language_for(language: str) -> tree_sitter.Language:
    """The compiled tree-sitter ``Language`` for ``language`` (shared between threads)."""
    language = _check(language)
    if language == "java":
        import tree_sitter_java  # deferred: a tree-sitter grammar, only for files of its language

        return tree_sitter.Language(tree_sitter_java.language())
    if language in ("typescript", "tsx"):
        import tree_sitter_typescript  # deferred: a tree-sitter grammar, only for files of its language

        fn = tree_sitter_typescript.language_tsx if language == "tsx" else tree_sitter_typescript.language_typescript
        return tree_sitter.Language(fn())
    if language == "javascript":
        import tree_sitter_javascript  # deferred: a tree-sitter grammar, only for files of its language

        return tree_sitter.Language(tree_sitter_javascript.language())
    import tree_sitter_python  # deferred: a tree-sitter grammar, only for files of its language

    return tree_sitter.Language(tree_sitter_python.language())


def parser_for(language: str) -> tree_sitter.Parser:
    """A parser for ``language`` owned by the calling thread (parsers are not thread-safe)."""
    language = _check(language)
    parsers: dict[str, tree_sitter.Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = {}
        _local.parsers = parsers
    parser = parsers.get(language)
    if parser is None:
        parser = tree_sitter.Parser(language_for(language))
        parsers[language] = parser
    return parser


def parse(source: str, language: str) -> tree_sitter.Tree:
    """Parse ``source`` (UTF-8 encoded) with this thread's parser for ``language``."""
    return parser_for(language).parse(source.encode("utf-8"))


def _column(source_lines: list[bytes], row: int, byte_col: int) -> int:
    """1-based character column from tree-sitter's 0-based byte column."""
    if row >= len(source_lines):
        return byte_col + 1
    return len(source_lines[row][:byte_col].decode("utf-8", errors="replace")) + 1


def syntax_errors(source: str, language: str) -> list[SyntaxIssue]:
    """ERROR and MISSING nodes of ``source``, in document order; empty when it parses cleanly.

    The inside of an ERROR node is not searched further, so one broken span is one issue.
    """
    tree = parse(source, language)
    lines = source.encode("utf-8").split(b"\n")
    issues: list[SyntaxIssue] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if not node.has_error:
            continue
        row, col = node.start_point
        if node.is_missing:
            message = f"missing {node.type!r}"
        elif node.is_error:
            text = (node.text or b"").decode("utf-8", errors="replace").strip()
            snippet = text.splitlines()[0][:40] if text else ""
            message = f"unexpected {snippet!r}" if snippet else "syntax error"
        else:
            stack.extend(reversed(node.children))
            continue
        issues.append(SyntaxIssue(line=row + 1, column=_column(lines, row, col), message=message))
    return issues


_JS_FUNCTIONS = {"function_declaration", "generator_function_declaration", "method_definition"}
_JS_CLASSES = {"class_declaration", "abstract_class_declaration", "interface_declaration"}
_FUNCTIONS = {
    "java": {"method_declaration", "constructor_declaration", "compact_constructor_declaration"},
    "python": {"function_definition"},
    "typescript": _JS_FUNCTIONS, "tsx": _JS_FUNCTIONS, "javascript": _JS_FUNCTIONS,
}
_CLASSES = {
    "java": {
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
    },
    "python": {"class_definition"},
    "typescript": _JS_CLASSES, "tsx": _JS_CLASSES, "javascript": _JS_CLASSES,
}


@dataclass(frozen=True)
class _Span:
    first: int
    last: int
    depth: int
    name: str


def _function_spans(tree: tree_sitter.Tree, language: str) -> list[_Span]:
    language = canonical(language)
    functions, classes = _FUNCTIONS[language], _CLASSES[language]
    spans: list[_Span] = []
    # (node, enclosing qualified-name parts, depth)
    stack: list[tuple[tree_sitter.Node, tuple[str, ...], int]] = [(tree.root_node, (), 0)]
    while stack:
        node, prefix, depth = stack.pop()
        parts = prefix
        if node.type in functions or node.type in classes:
            name_node = node.child_by_field_name("name")
            name = (name_node.text or b"").decode("utf-8", errors="replace") if name_node else "?"
            parts = prefix + (name,)
            if node.type in functions:
                # A decorator belongs to the function it decorates.
                start = node.parent if node.parent and node.parent.type == "decorated_definition" else node
                spans.append(
                    _Span(start.start_point[0] + 1, node.end_point[0] + 1, depth, ".".join(parts))
                )
        for child in reversed(node.children):
            stack.append((child, parts, depth + 1))
    return spans


def function_spans(source: str, language: str) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every function or method of ``source`` that holds no
    other function, in source order (1-based lines; a decorator or annotation belongs to its function)."""
    spans = sorted(_function_spans(parse(source, language), language), key=lambda s: (s.first, s.last))
    leaves = [s for s in spans if not any(o is not s and s.first <= o.first and o.last <= s.last for o in spans)]
    return [(s.first, s.last, s.name) for s in leaves]


def functions_at_lines(source: str, language: str, lines: Iterable[int]) -> list[str]:
    """Qualified names of the innermost functions enclosing any of the 1-based ``lines``.

    Names are dotted chains of the enclosing named classes and functions (``Outer.Inner.method``,
    ``Class.method``, ``func``, ``func.helper`` for a nested def); a Java constructor is named
    after its class (``Class.Class``). Results are in the order the lines are given, without
    duplicates; lines outside any function contribute nothing.
    """
    spans = _function_spans(parse(source, language), language)
    seen: dict[str, None] = {}
    for line in lines:
        best: _Span | None = None
        for span in spans:
            if span.first <= line <= span.last and (best is None or span.depth > best.depth):
                best = span
        if best is not None and best.name not in seen:
            seen[best.name] = None
    return list(seen)


_IMPORTS = {"import_statement", "import_from_statement", "future_import_statement", "import_declaration",
            "package_declaration"}


def statement_spans(source: str, language: str) -> list[tuple[int, int, str]]:
    """(first line, last line, label) of each top-level statement or declaration of ``source`` but its
    imports and comments, in source order (1-based lines; the comments right above a statement belong to
    it; the label is its first line, shortened)."""
    root = parse(source, language).root_node
    spans: list[tuple[int, int, str]] = []
    pending: int | None = None  # first line of the comments right above the next statement
    last_end = -2
    for node in root.named_children:
        first, last = node.start_point[0], node.end_point[0]
        if node.type == "comment":
            pending = first if pending is None or first > last_end + 1 else pending
            last_end = last
            continue
        start = pending if pending is not None and first <= last_end + 1 else first
        pending, last_end = None, last
        if node.type in _IMPORTS:
            continue
        label = (node.text or b"").decode("utf-8", errors="replace").splitlines()[0].strip()
        spans.append((start + 1, last + 1, label[:60] + ("…" if len(label) > 60 else "")))
    return spans
