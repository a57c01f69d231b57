"""YAML in with ruamel.yaml, keeping line numbers so every error can name file:line."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.composer import Composer, MaxDepthExceededError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent
from ruamel.yaml.nodes import Node

from evalkit.errors import InputError, Problem

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class YamlLimits:
    """What one YAML input file may hold. The defaults are far above any real case or config file (the
    largest shipped or imported case file is under 10 kB, nested under 10 deep); each is set by an
    environment variable, read when a file is loaded."""

    max_bytes: int = 1 << 20
    """File size (EVALKIT_YAML_MAX_BYTES): the pure-Python parser reads about 0.2 MB/s."""
    max_depth: int = 64
    """Nesting of mappings and sequences (EVALKIT_YAML_MAX_DEPTH)."""
    max_nodes: int = 200_000
    """Nodes once every alias is expanded (EVALKIT_YAML_MAX_NODES): an alias counts the whole tree it names,
    so nested aliases ("billion laughs") are refused while they are parsed, before they are expanded."""

    @classmethod
    def from_env(cls) -> YamlLimits:
        d = cls()
        values = {}
        for field, var in (("max_bytes", "EVALKIT_YAML_MAX_BYTES"), ("max_depth", "EVALKIT_YAML_MAX_DEPTH"),
                           ("max_nodes", "EVALKIT_YAML_MAX_NODES")):
            raw = os.environ.get(var, "").strip()
            try:
                values[field] = int(raw) if raw else getattr(d, field)
            except ValueError:
                raise InputError(Problem(var, None, f"expected a whole number, got {raw!r}")) from None
        return cls(**values)


class LimitExceeded(Exception):
    """A YAML file over one of its `YamlLimits`; ``line`` is 1-based."""

    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


class LimitedComposer(Composer):
    """ruamel's composer counting the nodes a file stands for with every alias expanded.

    Each node composed counts 1 and each alias counts the whole tree its anchor names (a node's weight:
    1 + its children's weights, summed as it is composed): linear in the file, so ten nested levels of
    nine aliases each are refused at the alias that passes the limit, without expanding anything. The
    depth limit is ruamel's own (`YAML.max_depth`), reached long before Python's recursion limit.
    """

    max_nodes = YamlLimits.max_nodes

    def __init__(self, loader: YAML | None = None) -> None:
        super().__init__(loader)
        self._weights: dict[int, int] = {}
        self._total = 0

    def _count(self, weight: int, line: int) -> None:
        self._total += weight
        if self._total > self.max_nodes:
            raise LimitExceeded(line, f"this file expands to more than {self.max_nodes:,} nodes once its aliases "
                                      f"are expanded (limit EVALKIT_YAML_MAX_NODES); expected a case or config "
                                      f"file without nested aliases")

    def compose_node(self, parent: Node | None, index: object) -> Node:
        if self.parser.check_event(AliasEvent):
            line = self.parser.peek_event().start_mark.line + 1
            node = super().compose_node(parent, index)  # the anchor's node, composed before
            self._count(self._weights.get(id(node), 1), line)
            return node
        line = self.parser.peek_event().start_mark.line + 1
        self._count(1, line)
        node = super().compose_node(parent, index)
        value = node.value
        if isinstance(value, list) and value:
            weights = self._weights
            weight = 1
            for child in value:
                if isinstance(child, tuple):
                    weight += weights.get(id(child[0]), 1) + weights.get(id(child[1]), 1)
                else:
                    weight += weights.get(id(child), 1)
            weights[id(node)] = weight
        return node


def _yaml(limits: YamlLimits | None = None) -> YAML:
    # A new instance per call: ruamel's YAML objects are not thread-safe.
    limits = limits or YamlLimits()
    y = YAML(typ="rt", pure=True)
    y.allow_duplicate_keys = False
    y.max_depth = limits.max_depth
    cap = limits.max_nodes

    class Composer(LimitedComposer):
        max_nodes = cap

    y.Composer = Composer
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


def load_yaml(path: Path, shown_as: str | None = None) -> object:
    """Parse a YAML file (round-trip nodes, so line numbers survive); raise InputError on bad YAML."""
    shown = shown_as or str(path)
    limits = YamlLimits.from_env()
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # read_input_text names the problem
    if size > limits.max_bytes:
        raise InputError(Problem(shown, 1, f"file is {size:,} bytes, over the limit of {limits.max_bytes:,} "
                                           f"(EVALKIT_YAML_MAX_BYTES); expected a case or config file, not data"))
    text = read_input_text(path, shown)
    try:
        return _yaml(limits).load(text)
    except LimitExceeded as exc:
        raise InputError(Problem(shown, exc.line, exc.message)) from None
    except MaxDepthExceededError as exc:
        mark = exc.problem_mark
        raise InputError(Problem(shown, mark.line + 1 if mark else None,
                                 f"nested more than {limits.max_depth} deep (limit EVALKIT_YAML_MAX_DEPTH); "
                                 f"expected a case or config file")) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = (exc.problem or exc.context or "malformed YAML").strip()
        raise InputError(Problem(shown, line, f"malformed YAML: {what}")) from None
    except YAMLError as exc:
        raise InputError(Problem(shown, None, f"malformed YAML: {exc}")) from None


def line_of(node: object, loc: tuple[Any, ...]) -> int | None:
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


@overload
def plain(node: dict[Any, Any]) -> dict[str, Any]: ...
@overload
def plain(node: list[Any]) -> list[Any]: ...
@overload
def plain(node: object) -> object: ...
def plain(node: object) -> object:
    """ruamel nodes to plain dict / list / scalars."""
    if isinstance(node, dict):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    if hasattr(node, "value") and type(node).__module__.startswith("ruamel"):
        return getattr(node, "value")  # noqa: B009  # pragma: no cover - scalar wrappers are rare with rt loader
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


def validate(model: type[M], node: object, shown_as: str, context: dict[str, Any] | None = None) -> M:
    """Validate parsed YAML against a model; every error gets its file:line."""
    try:
        return model.model_validate(plain(node), context=context)
    except ValidationError as exc:
        problems = [Problem(shown_as, line_of(node, _error_loc(e)), describe_error(e)) for e in exc.errors()]
        raise InputError(problems) from None
