"""What a source file declares, imports and annotates: the structure a migration must keep.

``structure(text, language)`` lists a file's declared types, methods/functions and fields (qualified by
their enclosing type), its imports and its annotations/decorators. Java, Python, TypeScript/TSX and
JavaScript are read with tree-sitter; Go (no tree-sitter grammar is installed with evalkit) with a
line scan of its top-level ``func``/``type``/``var``/``const`` declarations, struct fields and imports
(gofmt-formatted source; comments and string literals blanked first).

``missing_structure(answer, legacy, expected, language)`` is what the answer lacks of what a migration
must keep: every declaration the legacy file has and the expected file keeps, and every import and
annotation the expected file adds over the legacy file (the replacements of what was removed). An
import is also satisfied by a wildcard import of its package or by the fully qualified name in the
code; an annotation by the same simple name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from evalkit.treesitter import PARSEABLE, canonical, parse

GO = "go"


@dataclass
class Structure:
    """The declarations, imports and annotations of one file."""

    declarations: set[str] = field(default_factory=set)
    """``type Foo``, ``method Foo.bar``, ``field Foo.x``, ``function bar`` (top-level), ``variable x``."""
    imports: set[str] = field(default_factory=set)
    """Imported names as written (``jakarta.inject.Inject``, ``os.path``, ``./util``, ``fmt``)."""
    annotations: set[str] = field(default_factory=set)
    """Simple names of annotations/decorators (``ApplicationScoped``, ``dataclass``)."""


def supported(language: str) -> bool:
    """Is the structure of ``language`` read (tree-sitter, or the Go scan)?"""
    return canonical(language) in PARSEABLE or canonical(language) == GO


def _text(node: Node | None) -> str:
    raw = node.text if node is not None else None
    return (raw or b"").decode("utf-8", errors="replace")


def _name(node: Node) -> str:
    child = node.child_by_field_name("name")
    return _text(child) if child is not None else ""


_JAVA_TYPES = {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
               "annotation_type_declaration"}
_JS_TYPES = {"class_declaration", "abstract_class_declaration", "interface_declaration", "class",
             "type_alias_declaration", "enum_declaration"}


def _java(root: Node, out: Structure) -> None:
    stack: list[tuple[Node, str]] = [(root, "")]
    while stack:
        node, owner = stack.pop()
        t = node.type
        inner = owner
        if t in _JAVA_TYPES:
            name = _name(node)
            inner = f"{owner}.{name}" if owner else name
            out.declarations.add(f"type {inner}")
        elif t in ("method_declaration", "constructor_declaration", "compact_constructor_declaration"):
            out.declarations.add(f"method {owner}.{_name(node)}")
        elif t == "field_declaration":
            for child in node.children:
                if child.type == "variable_declarator":
                    out.declarations.add(f"field {owner}.{_name(child)}")
        elif t == "import_declaration":
            body = _text(node).removeprefix("import").strip().rstrip(";").strip()
            out.imports.add(body.removeprefix("static").strip())
            continue
        elif t in ("marker_annotation", "annotation"):
            out.annotations.add(_name(node).rsplit(".", 1)[-1])
        stack.extend((c, inner) for c in reversed(node.children))


def _python(root: Node, out: Structure) -> None:
    stack: list[tuple[Node, str, bool]] = [(root, "", True)]
    while stack:
        node, owner, at_top = stack.pop()
        t = node.type
        inner, top = owner, at_top
        if t == "class_definition":
            name = _name(node)
            inner = f"{owner}.{name}" if owner else name
            out.declarations.add(f"type {inner}")
            top = True  # assignments directly in the class body are its fields
        elif t == "function_definition":
            name = _name(node)
            out.declarations.add(f"method {owner}.{name}" if owner else f"function {name}")
            inner, top = (f"{owner}.{name}" if owner else name), False
        elif t == "assignment" and at_top:
            left = node.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                out.declarations.add(f"field {owner}.{_text(left)}" if owner else f"variable {_text(left)}")
        elif t in ("import_statement", "import_from_statement"):
            module = node.child_by_field_name("module_name")
            prefix = _text(module) + "." if t == "import_from_statement" and module is not None else ""
            for child in node.children_by_field_name("name"):
                target = child.child_by_field_name("name") if child.type == "aliased_import" else child
                out.imports.add(prefix + _text(target))
            if t == "import_from_statement" and any(c.type == "wildcard_import" for c in node.children):
                out.imports.add(prefix + "*")
            continue
        elif t == "decorator":
            expr = _text(node).lstrip("@").split("(", 1)[0].strip()
            out.annotations.add(expr.rsplit(".", 1)[-1])
        if t in ("block", "expression_statement", "decorated_definition", "module") or t in (
                "class_definition", "function_definition"):
            stack.extend((c, inner, top) for c in reversed(node.children))
        else:
            stack.extend((c, inner, False) for c in reversed(node.children))


def _js(root: Node, out: Structure) -> None:
    stack: list[tuple[Node, str, int]] = [(root, "", 0)]
    while stack:
        node, owner, depth = stack.pop()
        t = node.type
        inner = owner
        if t in _JS_TYPES and _name(node):
            inner = f"{owner}.{_name(node)}" if owner else _name(node)
            out.declarations.add(f"type {inner}")
        elif t in ("function_declaration", "generator_function_declaration") and not owner:
            out.declarations.add(f"function {_name(node)}")
        elif t in ("method_definition", "method_signature", "abstract_method_signature") and owner:
            out.declarations.add(f"method {owner}.{_name(node)}")
        elif t in ("public_field_definition", "field_definition", "property_signature") and owner:
            name = node.child_by_field_name("name") or node.child_by_field_name("property")
            if name is not None:
                out.declarations.add(f"field {owner}.{_text(name)}")
        elif t == "variable_declarator" and not owner and depth <= 4:
            out.declarations.add(f"variable {_name(node)}")
        elif t == "import_statement":
            source = node.child_by_field_name("source")
            module = _text(source).strip("'\"`") if source is not None else ""
            names = [_text(c) for c in _walk(node) if c.type in ("import_specifier", "namespace_import")]
            default = [_text(c) for c in node.children if c.type == "import_clause"]
            out.imports.add(module)
            out.imports.update(f"{module}:{n.split(' as ')[0].strip()}" for n in names)
            if default and not names:
                out.imports.add(f"{module}:default")
            continue
        elif t == "decorator":
            expr = _text(node).lstrip("@").split("(", 1)[0].strip()
            out.annotations.add(expr.rsplit(".", 1)[-1])
        stack.extend((c, inner, depth + 1) for c in reversed(node.children))


def _walk(node: Node) -> list[Node]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n.children)
    return out


_GO_LITERAL = re.compile(r"//[^\n]*|/\*[\s\S]*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"|`[^`]*`", re.S)
_GO_FUNC = re.compile(r"^func\s*(?:\(\s*(?:\w+\s+)?\*?\s*(\w+)(?:\[[^\]]*\])?\s*\)\s*)?(\w+)", re.M)
_GO_TYPE = re.compile(r"^type\s+(\w+)(?:\[[^\]]*\])?\s+(struct|interface)?", re.M)
_GO_TOP = re.compile(r"^(?:var|const)\s+(\w+)", re.M)
_GO_IMPORT_ONE = re.compile(r"^import\s+(?:[\w.]+\s+)?\"([^\"]+)\"", re.M)
_GO_IMPORT_BLOCK = re.compile(r"^import\s*\(([^)]*)\)", re.M)
_GO_FIELD = re.compile(r"^\s*(\w+(?:\s*,\s*\w+)*)\s+\S")


def _go_blank(match: re.Match[str]) -> str:
    token = match.group()
    if token.startswith(("\"", "`")):
        return '""' + "\n" * token.count("\n")
    return "\n" * token.count("\n")


def _go(text: str, out: Structure) -> None:
    """Go by a line scan of gofmt-formatted source: top-level funcs (methods named by their receiver's type),
    types, the fields of struct types, top-level vars/consts, and imports. No grammar is installed for Go."""
    out.imports.update(_GO_IMPORT_ONE.findall(text))  # before blanking: import paths are string literals
    for block in _GO_IMPORT_BLOCK.findall(text):
        out.imports.update(re.findall(r"\"([^\"]+)\"", block))
    code = _GO_LITERAL.sub(_go_blank, text)
    for m in _GO_FUNC.finditer(code):
        out.declarations.add(f"method {m.group(1)}.{m.group(2)}" if m.group(1) else f"function {m.group(2)}")
    out.declarations.update(f"variable {name}" for name in _GO_TOP.findall(code))
    struct: str | None = None  # the struct type whose body the scan is in
    depth = 0
    for line in code.splitlines():
        if depth == 0:
            t = _GO_TYPE.match(line)
            if t:
                out.declarations.add(f"type {t.group(1)}")
                struct = t.group(1) if t.group(2) == "struct" else None
        elif depth == 1 and struct is not None and not line.strip().startswith("}"):
            f = _GO_FIELD.match(line)
            if f:
                out.declarations.update(f"field {struct}.{n.strip()}" for n in f.group(1).split(","))
        depth = max(0, depth + line.count("{") - line.count("}"))
        if depth == 0:
            struct = None


_METHODS = {"method_declaration", "constructor_declaration", "method_definition", "function_declaration"}
_TRIVIAL_RETURN = {"null_literal", "true", "false", "null", "undefined", "decimal_integer_literal", "number", "string",
                   "string_literal", "this", "identifier", "character_literal", "decimal_floating_point_literal"}


def _trivial(body: Node) -> bool:
    """A body that does nothing: empty, ``return <literal>;`` or ``throw ...;`` alone (comments aside)."""
    statements = [c for c in body.named_children if "comment" not in c.type]
    if not statements:
        return True
    if len(statements) > 1:
        return False
    only = statements[0]
    if only.type == "throw_statement":
        return True
    if only.type == "return_statement":
        values = [c for c in only.named_children if "comment" not in c.type]
        return not values or (len(values) == 1 and values[0].type in _TRIVIAL_RETURN)
    return False


def stubbed_bodies(text: str, language: str) -> tuple[set[str], set[str]]:
    """(methods whose body does nothing, methods whose body does something) of a Java/TypeScript/JavaScript file,
    named as ``structure`` names them (``method Type.name``, ``function name``); empty sets for other languages."""
    language = canonical(language)
    if language not in PARSEABLE or language == "python" or not text.strip():
        return set(), set()
    trivial: set[str] = set()
    real: set[str] = set()
    stack: list[tuple[Node, str]] = [(parse(text, language).root_node, "")]
    while stack:
        node, owner = stack.pop()
        t = node.type
        inner = owner
        if t in _JAVA_TYPES or t in _JS_TYPES:
            name = _name(node)
            inner = f"{owner}.{name}" if owner and name else name or owner
        elif t in _METHODS:
            body = node.child_by_field_name("body")
            if body is not None:
                key = f"method {owner}.{_name(node)}" if owner else f"function {_name(node)}"
                (trivial if _trivial(body) else real).add(key)
        stack.extend((c, inner) for c in reversed(node.children))
    return trivial, real


def structure(text: str, language: str) -> Structure:
    """The declarations, imports and annotations of ``text`` (empty for a language not read)."""
    language = canonical(language)
    out = Structure()
    if not text.strip():
        return out
    if language == GO:
        _go(text, out)
        return out
    if language not in PARSEABLE:
        return out
    root = parse(text, language).root_node
    if language == "java":
        _java(root, out)
    elif language == "python":
        _python(root, out)
    else:
        _js(root, out)
    out.declarations.discard("")
    return out


def _simple(name: str) -> str:
    return re.split(r"[.:/]", name)[-1]


def _package(name: str) -> str:
    return re.split(r"[.:/](?=[^.:/]*$)", name)[0] if re.search(r"[.:/]", name) else name


def _import_satisfied(name: str, answer: Structure, code: str) -> bool:
    """``name`` is imported by the answer: the same import, its package's wildcard, or (for a wildcard)
    any import from that package; or the fully qualified name is used in the code."""
    if name in answer.imports:
        return True
    package = _package(name)
    if _simple(name) == "*":
        return any(i.startswith(package) and i != name for i in answer.imports)
    if f"{package}.*" in answer.imports:
        return True
    return "." in name and re.search(rf"\b{re.escape(name)}\b", code) is not None  # a fully qualified use


def missing_structure(answer: str, legacy: str | None, expected: str | None, language: str) -> list[str]:
    """What ``answer`` lacks of what the migration must keep and add (empty: nothing found missing).

    - kept: every declaration of ``legacy`` that ``expected`` also declares;
    - renamed imports: an import ``expected`` adds in place of a removed one with the same simple name
      (``javax.inject.Inject`` -> ``jakarta.inject.Inject``, ``javax.ws.rs.*`` -> ``jakarta.ws.rs.*``);
    - replaced annotations: where ``expected`` removes annotations of ``legacy`` and adds others
      (``@Stateless`` -> ``@ApplicationScoped``), the answer adds at least one annotation the legacy file
      does not have (which one is the migrator's choice; deleting the old one alone is no migration).

    Without both files, or for a language whose structure is not read, nothing is required.
    """
    if not supported(language) or legacy is None or expected is None:
        return []
    before, after, now = structure(legacy, language), structure(expected, language), structure(answer, language)
    missing = [f"keeps no {d}" for d in sorted((before.declarations & after.declarations) - now.declarations)]
    removed = before.imports - after.imports
    removed_simple = {_simple(i) for i in removed}
    for name in sorted(after.imports - before.imports):
        if _simple(name) in removed_simple and not _import_satisfied(name, now, answer):
            missing.append(f"lacks import {name} (in place of the legacy file's)")
    gone, added = before.annotations - after.annotations, after.annotations - before.annotations
    if gone and added and not (now.annotations - before.annotations):
        missing.append(f"replaces no @{', @'.join(sorted(gone))} (the expected file adds @{', @'.join(sorted(added))})")
    return missing
