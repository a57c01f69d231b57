"""The registry of suite kinds, below the engine: stages, graders, the report and the task graph reach a case's
kind only through ``kind(name)`` here, never by importing ``evalkit.kinds.<k>``.

Kinds are entry points of the ``evalkit.kinds`` group (evalkit's own in pyproject.toml, an outside package's in
its metadata), imported on first use by ``evalkit.plugins``; each is an instance of a subclass of
``evalkit.kinds.base.Kind``, whose root ``KindContract`` is defined here so that the registry can check what it
loads without importing the kinds layer.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from evalkit.errors import InputError, Problem
from evalkit.plugins import registry

if TYPE_CHECKING:
    from evalkit.cases import Case
    from evalkit.kinds.base import Kind
    from evalkit.models import Model

__all__ = ["UNKNOWN", "KindContract", "kind", "kinds", "known", "names", "template_dirs", "code_stamp", "main_file"]


class KindContract:
    """Root of every suite kind (``evalkit.kinds.base.Kind`` subclasses it): what the registry reads of a kind.
    The rest of the contract (stage chain, execute, grade, score, page) is ``evalkit.kinds.base.Kind``'s."""

    name: ClassVar[str] = ""
    """The name suite.yaml's `kind:` gives."""
    description: ClassVar[str] = ""
    """One sentence: what a case of this kind is."""
    inputs: ClassVar[type[Model] | None] = None
    """Model of a case's `inputs` (None: a free-form mapping)."""
    reference: ClassVar[type[Model] | None] = None
    """Model of a case's `reference` (None: a free-form mapping)."""
    templates: ClassVar[Path | None] = None
    """Folder holding the case page partial ``case_<name>.html.j2`` (None: evalkit's site templates)."""


UNKNOWN = "unknown"
"""The kind of a suite whose suite.yaml is broken (evalkit.cases.Suite.kind): its cases are recorded as
broken, and the stages treat them with the base `Kind`'s defaults."""

UNKNOWN_TARGET = "evalkit.kinds.base:Unknown"
"""The kind of ``UNKNOWN``, named as an entry point names its part (``module:attr``) and loaded on first use,
as every kind is: the registry sits below the kinds."""


def _unknown() -> Kind:
    module, _, attr = UNKNOWN_TARGET.partition(":")
    return getattr(importlib.import_module(module), attr)()


def kind(name: str) -> Kind:
    """The suite kind registered as ``name`` (KeyError naming the known ones when none is)."""
    if name == UNKNOWN and name not in registry("kinds"):
        return _unknown()
    found = registry("kinds").get(name)
    where = f"entry point evalkit.kinds {name!r} (from {registry('kinds').source(name)})"
    if not isinstance(found, KindContract):
        raise InputError(Problem(where, None, f"{found!r} is not a suite kind; expected an evalkit.kinds.base.Kind"))
    for role in ("inputs", "reference"):
        model = getattr(found, role)
        if model is not None and model.model_config.get("extra") != "forbid":
            raise InputError(Problem(where, None, (
                f"{type(found).__name__}.{role} is {model.__name__}, which accepts unknown keys: a misspelled key "
                "in a case file would be ignored in silence; expected a model that refuses them (subclass "
                "evalkit.models.Model, or set model_config = ConfigDict(extra='forbid'))")))
    return cast("Kind", found)  # a KindContract is a Kind: evalkit.kinds.base.Kind is the class kinds subclass


def main_file(case: Case) -> str | None:
    """The file a case is about (graded for syntax, compared by CodeBLEU): the kind says which."""
    return kind(case.kind).main_file(case)


def names() -> tuple[str, ...]:
    """Registered kind names, sorted (nothing imported)."""
    return registry("kinds").names()


def known(name: object) -> bool:
    """Is ``name`` a registered suite kind?"""
    return isinstance(name, str) and name in registry("kinds")


def kinds() -> dict[str, Kind]:
    """Every registered suite kind, by name."""
    return {n: kind(n) for n in names()}


def template_dirs() -> list[str]:
    """Folders holding the case page partials of kinds that ship their own (``Kind.templates``)."""
    return [str(k.templates) for k in kinds().values() if k.templates is not None]


def code_stamp() -> list[tuple[str, int]]:
    """(file, mtime) of every kind's module (each .py of its package) and own templates: what a cached case page depends on besides evalkit's."""
    files: list[Path] = []
    for k in kinds().values():
        module = sys.modules.get(type(k).__module__)
        if module is not None and getattr(module, "__file__", None):
            origin = Path(str(module.__file__))  # a package (evalkit's own kinds): every .py of it, its page part too
            files += sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]
        if k.templates is not None:
            files += sorted(p for p in Path(k.templates).rglob("*") if p.is_file())
    return [(str(p), p.stat().st_mtime_ns) for p in files if p.exists()]
