"""Suite kinds: one module each (patch, migration, generation, rag, agentic, e2e), registered through the
``evalkit.kinds`` entry-point group (evalkit's own in pyproject.toml), each exporting ``KIND``, a
``evalkit.kinds.base.Kind``. ``kind(name)`` is the one way code outside this package learns what a suite
kind does."""

from __future__ import annotations

from evalkit.errors import InputError, Problem
from evalkit.kinds.base import Kind

__all__ = ["UNKNOWN", "Kind", "kind", "kinds", "known", "names", "template_dirs", "code_stamp"]


UNKNOWN = "unknown"
"""The kind of a suite whose suite.yaml is broken (evalkit.cases.Suite.kind): its cases are recorded as
broken, and the stages treat them with the base `Kind`'s defaults."""


class _Unknown(Kind):
    name = UNKNOWN
    description = "a suite whose suite.yaml is broken: its cases are recorded as broken"


def kind(name: str) -> Kind:
    """The suite kind registered as ``name`` (KeyError naming the known ones when none is)."""
    from evalkit.plugins import registry

    if name == UNKNOWN and name not in registry("kinds"):
        return _Unknown()
    found = registry("kinds").get(name)
    where = f"entry point evalkit.kinds {name!r} (from {registry('kinds').source(name)})"
    if not isinstance(found, Kind):
        raise InputError(Problem(where, None, f"{found!r} is not a suite kind; expected an evalkit.kinds.base.Kind"))
    for role in ("inputs", "reference"):
        model = getattr(found, role)
        if model is not None and model.model_config.get("extra") != "forbid":
            raise InputError(Problem(where, None, (
                f"{type(found).__name__}.{role} is {model.__name__}, which accepts unknown keys: a misspelled key "
                "in a case file would be ignored in silence; expected a model that refuses them (subclass "
                "evalkit.models.Model, or set model_config = ConfigDict(extra='forbid'))")))
    return found


def names() -> tuple[str, ...]:
    """Registered kind names, sorted (nothing imported)."""
    from evalkit.plugins import registry

    return registry("kinds").names()


def known(name: object) -> bool:
    """Is ``name`` a registered suite kind?"""
    from evalkit.plugins import registry

    return isinstance(name, str) and name in registry("kinds")


def kinds() -> dict[str, Kind]:
    """Every registered suite kind, by name."""
    return {n: kind(n) for n in names()}


def template_dirs() -> list[str]:
    """Folders holding the case page partials of kinds that ship their own (``Kind.templates``)."""
    return [str(k.templates) for k in kinds().values() if k.templates is not None]


def code_stamp() -> list[tuple[str, int]]:
    """(file, mtime) of every kind's module and own templates: what a cached case page depends on besides evalkit's."""
    import sys
    from pathlib import Path

    files: list[Path] = []
    for k in kinds().values():
        module = sys.modules.get(type(k).__module__)
        if module is not None and getattr(module, "__file__", None):
            files.append(Path(str(module.__file__)))
        if k.templates is not None:
            files += sorted(p for p in Path(k.templates).rglob("*") if p.is_file())
    return [(str(p), p.stat().st_mtime_ns) for p in files if p.exists()]
