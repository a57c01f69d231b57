"""YAML in with ruamel.yaml, keeping line numbers so every error can name file:line."""

from __future__ import annotations

import json
from pathlib import Path
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from evalkit.errors import InputError, Problem

M = TypeVar("M", bound=BaseModel)


def _yaml() -> YAML:
    # A new instance per call: ruamel's YAML objects are not thread-safe.
    y = YAML(typ="rt", pure=True)
    y.allow_duplicate_keys = False
    return y


def read_input_text(path: Path, shown: str) -> str:
    """A user's input file as text; InputError naming the file when it is unreadable or not UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1  # the line holding the first bad byte
        raise InputError(Problem(shown, line, f"not UTF-8 text ({exc.reason} at byte {exc.start}); "
                                              f"expected a UTF-8 text file")) from None
    except OSError as exc:
        raise InputError(Problem(shown, None, f"cannot read: {exc.strerror or exc}")) from None


def load_json(path: Path, shown: str) -> tuple[str, Any]:
    """A user's JSON file: its text and the parsed value; InputError naming file:line when it is unreadable,
    not UTF-8 or malformed."""
    text = read_input_text(path, shown)
    try:
        return text, json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(Problem(shown, exc.lineno, f"malformed JSON: {exc.msg} (column {exc.colno})")) from None


def load_yaml(path: Path, shown_as: str | None = None) -> Any:
    """Parse a YAML file (round-trip nodes, so line numbers survive); raise InputError on bad YAML."""
    shown = shown_as or str(path)
    text = read_input_text(path, shown)
    try:
        return _yaml().load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = (exc.problem or exc.context or "malformed YAML").strip()
        raise InputError(Problem(shown, line, f"malformed YAML: {what}")) from None
    except YAMLError as exc:
        raise InputError(Problem(shown, None, f"malformed YAML: {exc}")) from None


def line_of(node: Any, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the deepest node along ``loc`` that the YAML file has."""
    line: int | None = None
    cur = node
    for i, part in enumerate(loc):
        nxt = loc[i + 1] if i + 1 < len(loc) else None
        if (isinstance(cur, CommentedMap) and isinstance(nxt, str) and nxt in cur
                and not (isinstance(cur.get(part), CommentedMap) and nxt in cur[part])):
            continue  # a tagged union's tag (`systems.0.command.timeout_s`): not a key of the YAML
        if isinstance(cur, CommentedMap) and part in cur:
            ln, _col = cur.lc.key(part)
            line = ln + 1
            cur = cur[part]
        elif isinstance(cur, CommentedSeq) and isinstance(part, int) and 0 <= part < len(cur):
            ln, _col = cur.lc.item(part)
            line = ln + 1
            cur = cur[part]
        else:
            break
    if line is None and isinstance(cur, (CommentedMap, CommentedSeq)) and cur.lc.line is not None:
        line = cur.lc.line + 1
    return line


def plain(node: Any) -> Any:
    """ruamel nodes to plain dict / list / scalars."""
    if isinstance(node, dict):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    if hasattr(node, "value") and type(node).__module__.startswith("ruamel"):
        return node.value  # pragma: no cover - scalar wrappers are rare with rt loader
    return node


def describe_error(err: Mapping[str, Any]) -> str:
    """A pydantic error dict as a plain sentence: where, and what was expected."""
    loc = ".".join(str(p) for p in err.get("loc", ()) if not str(p).startswith("function-"))
    msg = err.get("msg", "invalid value")
    typ = err.get("type", "")
    if typ == "union_tag_not_found":
        key = str((err.get("ctx") or {}).get("discriminator", "")).strip("'\"")
        msg = f"{key}: required key is missing"
    elif typ == "extra_forbidden":
        msg = "unknown key"
    elif typ == "missing":
        msg = "required key is missing"
    return f"{loc}: {msg}" if loc else msg


def _error_loc(err: Mapping[str, Any]) -> tuple[Any, ...]:
    """Where an error points; a bad discriminator (e.g. `adapter:`) points at its own key."""
    loc = tuple(p for p in err.get("loc", ()) if not str(p).startswith("function-"))
    if err.get("type") in ("union_tag_invalid", "union_tag_not_found"):
        key = str((err.get("ctx") or {}).get("discriminator", "")).strip("'\"")
        if key:
            loc += (key,)
    return loc


def validate(model: type[M], node: Any, shown_as: str, context: dict[str, Any] | None = None) -> M:
    """Validate parsed YAML against a model; every error gets its file:line."""
    try:
        return model.model_validate(plain(node), context=context)
    except ValidationError as exc:
        problems = [Problem(shown_as, line_of(node, _error_loc(e)), describe_error(e)) for e in exc.errors()]
        raise InputError(problems) from None
