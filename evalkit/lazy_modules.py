"""Modules a module names at its top and loads on first use: ``score = later("evalkit.kinds.migration.score")``.

Planning a run (``import evalkit.tasks`` and asking each kind its declarations) must stay cheap: a no-op rerun of
1,000 cases is mostly that. A stage's code (scorers, judges, the sandbox runner) holds many pydantic models whose
classes cost ~0.15 s of CPU to build, paid only where a task's action runs. Instead of an ``import`` inside each
function, a module declares the stage modules it uses once, at its top, beside an ``if TYPE_CHECKING:`` import of
the same module for the type checkers; the attribute is looked up in the real module at each use (after the first,
a ``sys.modules`` hit), so ``unittest.mock.patch`` on the real module is seen. tests/test_architecture.py counts
every ``later()`` reference as an import: it must name a module that exists, of the same layer or below, and no
cycle may go through one. Imports inside functions are left for heavy third-party modules (ragas, docker, jinja2).

The first use is often in one of a run's task threads, several at once. Loads take turns (one lock for the
process): a package whose ``__init__`` imports a submodule, loaded in one thread while another thread loads that
submodule, is an import deadlock, which CPython breaks by failing one of the two imports (``_DeadlockError``, or
"cannot import name ... from partially initialized module"); a validate task of a whole test run failed so. A load
that has waited `TURN_WAIT_S` for its turn goes ahead without it: the import system's own per-module locks, which a
thread may hold while it waits for this one, must never make two threads wait for each other for ever.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

__all__ = ["later"]

_loading = threading.RLock()  # reentrant: a module being loaded may load another that it names with later()
TURN_WAIT_S = 30.0


class Later(ModuleType):
    """A module loaded when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        super().__init__(name, f"{name}, loaded on first use (evalkit.lazy_modules)")
        self._real: ModuleType | None = None

    def __getattr__(self, attr: str) -> object:
        if attr.startswith("__"):  # copy, pickle and inspect probe dunders: not a use of the module
            raise AttributeError(attr)
        real = self._real
        if real is None:
            turn = _loading.acquire(timeout=TURN_WAIT_S)
            try:
                real = importlib.import_module(self.__name__)
            finally:
                if turn:
                    _loading.release()
            self._real = real
        return getattr(real, attr)


def later(name: str) -> ModuleType:
    """The module ``name`` (an absolute dotted name), imported when one of its attributes is first read."""
    return Later(name)
