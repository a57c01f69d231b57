"""Modules loaded on first use (evalkit.lazy_modules) from a run's task threads at once.

`evalkit run` runs its tasks in threads, and each stage's code is loaded by the first task that uses it. A
package whose ``__init__`` imports a submodule, loaded in one thread while another loads that submodule, is an
import deadlock that CPython breaks by raising ``_DeadlockError`` in one of them: a validate task of a whole test
run failed so ("deadlock detected by _ModuleLock('evalkit.executors.call')"). The loads take turns.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from evalkit.lazy_modules import later

PACKAGE_INIT = """
import time
time.sleep(0.3)  # the other thread starts loading the submodule meanwhile
from {pkg}.sub import VALUE as SUB_VALUE
VALUE = "package"
"""
SUBMODULE = """
import {pkg}  # waits for the package, which waits for this module
VALUE = "sub"
"""


@pytest.fixture
def package(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    name = f"lazy_pkg_{request.node.name.replace('[', '_').replace(']', '')}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text(PACKAGE_INIT.format(pkg=name))
    (tmp_path / name / "sub.py").write_text(SUBMODULE.format(pkg=name))
    sys.path.insert(0, str(tmp_path))
    yield name
    sys.path.remove(str(tmp_path))
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


def test_a_package_and_its_submodule_loaded_from_two_threads_at_once(package: str) -> None:
    pkg, sub = later(package), later(f"{package}.sub")
    got: dict[str, object] = {}

    def read(key: str, module: object) -> None:
        try:
            got[key] = module.VALUE  # type: ignore[attr-defined]
        except BaseException as exc:  # what the thread would die of
            got[key] = exc

    threads = [threading.Thread(target=read, args=("pkg", pkg)),
               threading.Thread(target=read, args=("sub", sub))]
    threads[0].start()
    time.sleep(0.1)
    threads[1].start()  # while the first sleeps in the package's __init__
    for t in threads:
        t.join(timeout=30)
    assert got == {"pkg": "package", "sub": "sub"}, got


def test_a_module_loaded_later_is_the_real_module(package: str) -> None:
    sub = later(f"{package}.sub")
    assert sub.VALUE == "sub"  # type: ignore[attr-defined]
    assert sys.modules[f"{package}.sub"].VALUE == "sub"
    with pytest.raises(AttributeError):
        sub.__wrapped__  # noqa: B018 (dunders are not a use of the module)


def test_a_load_that_waits_too_long_for_its_turn_goes_ahead(package: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread holding the turn while it waits on the import system's lock of a module another thread loads
    (which then waits for the turn) would hang both: after `TURN_WAIT_S` the load goes ahead without its turn."""
    from evalkit import lazy_modules

    monkeypatch.setattr(lazy_modules, "TURN_WAIT_S", 0.2)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lazy_modules._loading:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        held.wait(30)
        started = time.monotonic()
        assert later(f"{package}.sub").VALUE == "sub"  # type: ignore[attr-defined]
        assert 0.2 <= time.monotonic() - started < 10
    finally:
        release.set()
        holder.join(30)
