"""Plug-in points: registries filled from entry points.

Each point is an entry-point group, ``evalkit.<point>``; an entry point ``name = "module:attr"``
names one part. evalkit's own parts are registered the same way, in ``pyproject.toml``'s
``[project.entry-points."evalkit.<point>"]`` tables, so an outside package adds a kind, an adapter,
an assertion type, a sandbox backend, a model provider or a stage executor by declaring one entry
point in its own metadata, with no edit here.

When evalkit runs from a source checkout (``pyproject.toml`` beside the package), its own entries
are read from that file rather than from installed metadata, so an editable install never serves a
stale list; outside packages always come from their metadata. A name two distributions both claim
is refused (exit 2, naming both); so is an entry point that does not import.

Parts are imported only when first used (``Registry.get``); ``Registry.names`` imports nothing.
``Registry.register`` adds a part in-process (``evalkit.api``, tests). What a part of each point must be is
its contract (evalkit.contracts); ``registry(point)`` gives the parts as ``object``s, and each point's own
module offers them typed by their contract (``evalkit.kinds.kind``, ``evalkit.systems.base.adapters``, ...).
"""

from __future__ import annotations

import importlib
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Callable, Generic, TypeVar, cast

from pydantic.config import JsonDict

from evalkit.errors import InputError, Problem

T = TypeVar("T")

POINTS = ("kinds", "adapters", "assertions", "sandbox_backends", "providers", "executors")
"""The plug-in points; group ``evalkit.<point>``."""

OWN = "evalkit"
"""evalkit's own distribution name."""


@dataclass(frozen=True)
class Entry:
    """One registered part: where it comes from, loaded on demand."""

    name: str
    target: str
    """``module:attr``."""
    dist: str
    """Distribution that declares it (``evalkit`` for our own parts, ``<in-process>`` for register())."""


def _source_pyproject() -> Path | None:
    """``pyproject.toml`` of a source checkout evalkit runs from, if any."""
    candidate = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if not candidate.is_file():
        return None
    try:
        data = tomllib.loads(candidate.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return candidate if data.get("project", {}).get("name") == OWN else None


@cache
def _own_from_source() -> dict[str, dict[str, str]] | None:
    path = _source_pyproject()
    if path is None:
        return None
    tables = tomllib.loads(path.read_text(encoding="utf-8"))["project"].get("entry-points", {})
    return {group: dict(entries) for group, entries in tables.items()}


@cache
def installed_entry_points() -> metadata.EntryPoints:
    """Every installed distribution's entry points, read once: each `entry_points(group=...)` reads every
    distribution's metadata again (~10 ms here, once per plug-in point on every run). Python 3.11 returns them
    as `SelectableGroups`, whose ``select(group=...)`` is EntryPoints' own."""
    return cast(metadata.EntryPoints, metadata.entry_points())


def _discovered(group: str) -> list[Entry]:
    """Every entry point of ``group``: evalkit's own (source checkout first) and other distributions'."""
    own = _own_from_source()
    found: list[Entry] = []
    if own is not None:
        found += [Entry(n, t, OWN) for n, t in own.get(group, {}).items()]
    for ep in installed_entry_points().select(group=group):
        dist = ep.dist.name if ep.dist is not None else "?"
        if own is not None and dist.lower() == OWN:
            continue  # the source checkout's table is authoritative for our own parts
        found.append(Entry(ep.name, ep.value, dist))
    return found


@dataclass
class Registry(Generic[T]):
    """The parts of one plug-in point, by name; ``T``: what the point's contract says a part is."""

    point: str
    _entries: dict[str, Entry] | None = field(default=None, repr=False)
    _loaded: dict[str, T] = field(default_factory=dict, repr=False)

    @property
    def group(self) -> str:
        return f"evalkit.{self.point}"

    def entries(self) -> dict[str, Entry]:
        if self._entries is None:
            entries: dict[str, Entry] = {}
            for entry in _discovered(self.group):
                seen = entries.get(entry.name)
                if seen is not None and seen.target != entry.target:
                    raise InputError(Problem(f"entry point group {self.group}", None,
                                             f"{entry.name!r} is registered by both {seen.dist} ({seen.target}) "
                                             f"and {entry.dist} ({entry.target}); expected one part per name"))
                entries[entry.name] = entry
            self._entries = entries
        return self._entries

    def names(self) -> tuple[str, ...]:
        """Registered names, sorted; nothing is imported."""
        return tuple(sorted(self.entries()))

    def __contains__(self, name: object) -> bool:
        return name in self.entries()

    def schema_enum(self, *extra: str) -> Callable[[JsonDict], None]:
        """A ``json_schema_extra`` listing the registered names (and ``extra`` ones) as the field's ``enum``:
        the shipped JSON Schemas let an editor reject a misspelled name too."""

        def put(schema: JsonDict) -> None:
            schema["enum"] = [*extra, *self.names()]

        return put

    def require(self, name: str, what: str, also: tuple[str, ...] = ()) -> str:
        """``name`` when it is registered (or one of ``also``, names accepted besides, e.g. the sandbox backend
        ``auto``); else a ValueError naming them all (for pydantic validators of config and case files:
        evalkit check then says file:line)."""
        if name not in also and name not in self.entries():
            known = [*also, *self.names()]
            raise ValueError(f"unknown {what} {name!r}; expected one of {', '.join(known) or 'none'}")
        return name

    def get(self, name: str) -> T:
        """The part registered as ``name``, imported on first use (what its entry point names: the point's
        contract is its author's promise, kept when the part is used)."""
        if name in self._loaded:
            return self._loaded[name]
        entry = self.entries().get(name)
        if entry is None:
            raise KeyError(f"unknown {self.point[:-1] if self.point.endswith('s') else self.point} {name!r}; "
                           f"known: {', '.join(self.names()) or 'none'}")
        module_name, _, attr = entry.target.partition(":")
        try:
            obj: object = importlib.import_module(module_name)
            for part in attr.split(".") if attr else []:
                obj = getattr(obj, part)
        except Exception as exc:  # noqa: BLE001 - whatever an outside part raises while it loads is its author's
            if entry.dist == OWN and not isinstance(exc, (ImportError, AttributeError)):
                raise  # evalkit's own part failing is evalkit's bug, reported as one
            raise InputError(Problem(f"entry point {self.group} {name!r}", None,
                                     f"{entry.target} (from {entry.dist}) does not load: "
                                     f"{type(exc).__name__}: {_first_line(exc)}")) from exc
        loaded = cast(T, obj)  # what the entry point names: its point's contract, as its author promises
        self._loaded[name] = loaded
        return loaded

    def load_all(self) -> dict[str, T]:
        """Every part, imported."""
        return {name: self.get(name) for name in self.names()}

    def register(self, name: str, obj: T, *, replace: bool = False) -> None:
        """Add a part in this process (``evalkit.api``, tests); refuses a taken name unless ``replace``."""
        entries = self.entries()
        if name in entries and not replace:
            raise ValueError(f"{self.group} {name!r} is already registered by {entries[name].dist}")
        entries[name] = Entry(name, f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', '?')}",
                              "<in-process>")
        self._loaded[name] = obj

    def source(self, name: str) -> str:
        """The distribution that registered ``name``."""
        return self.entries()[name].dist


def _first_line(exc: BaseException) -> str:
    """An exception's message without a pydantic error's URL lines and the like (the first 3 lines)."""
    lines = [line for line in str(exc).splitlines() if line.strip() and "errors.pydantic.dev" not in line]
    return " ".join(line.strip() for line in lines[:3])


_REGISTRIES: dict[str, Registry[object]] = {}


def registry(point: str) -> Registry[object]:
    """The registry of one plug-in point (one per process); its parts typed by the point's contract come from the
    point's module (e.g. ``evalkit.systems.base.adapters()``)."""
    if point not in POINTS:
        raise KeyError(f"unknown plug-in point {point!r}; known: {', '.join(POINTS)}")
    if point not in _REGISTRIES:
        _REGISTRIES[point] = Registry(point)
    return _REGISTRIES[point]


def forget() -> None:
    """Drop what was discovered (tests that install a distribution mid-process)."""
    _REGISTRIES.clear()
    _own_from_source.cache_clear()
    installed_entry_points.cache_clear()
