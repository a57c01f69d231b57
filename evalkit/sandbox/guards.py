"""Switches for evalkit's guards against a system's patch, so the red-team tests can show each attack
flips the verdict without its guard. Every guard is on; only tests switch one off, with ``disabled``.

``test_files``: test files put back to base (evalkit.sandbox.tamper); ``infrastructure``: test
infrastructure refused or reverted; ``patch_safety``: compiled files, binary patches and non-regular
file modes refused (evalkit.sandbox.patchcheck); ``sentinel``: evalkit's own pytest plugin decides
the results (evalkit.sandbox.sentinel_plugin); ``local_uid``: the local backend refuses a system's
patch when it cannot run the tests as a user of their own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

GUARDS = ("test_files", "infrastructure", "patch_safety", "sentinel", "local_uid")
_off: set[str] = set()


def on(name: str) -> bool:
    """Whether guard ``name`` is on (always, outside the red-team tests)."""
    return name not in _off


@contextlib.contextmanager
def disabled(*names: str) -> Iterator[None]:
    """Switch guards off for the ``with`` block (tests only); all of them when no name is given."""
    unknown = set(names) - set(GUARDS)
    if unknown:
        raise ValueError(f"unknown guard(s): {sorted(unknown)}")
    chosen = set(names or GUARDS) - _off
    _off.update(chosen)
    try:
        yield
    finally:
        _off.difference_update(chosen)
