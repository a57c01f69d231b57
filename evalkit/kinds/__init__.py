"""Suite kinds: one module each (patch, migration, generation, rag, agentic, e2e), registered through the
``evalkit.kinds`` entry-point group (evalkit's own in pyproject.toml), each exporting ``KIND``, a
``evalkit.kinds.base.Kind``. ``kind(name)`` is the one way code outside this package learns what a suite
kind does."""

from __future__ import annotations

from evalkit.kinds.base import Kind

__all__ = ["Kind", "kind", "kinds", "known", "names"]


def kind(name: str) -> Kind:
    """The suite kind registered as ``name`` (KeyError naming the known ones when none is)."""
    from evalkit.plugins import registry

    found = registry("kinds").get(name)
    if not isinstance(found, Kind):
        raise TypeError(f"entry point evalkit.kinds {name!r} is {found!r}; expected an evalkit.kinds.base.Kind")
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
