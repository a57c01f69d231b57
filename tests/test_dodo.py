"""`doit` (README's main command) loads dodo.py: every task group evalkit runs by default must be there."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from evalkit.api import _run_environment

REPO = Path(__file__).resolve().parents[1]


def test_dodo_defines_every_default_task_group() -> None:
    spec = importlib.util.spec_from_file_location("dodo_under_test", REPO / "dodo.py")
    dodo = importlib.util.module_from_spec(spec)
    with _run_environment():  # as a run in this process (evalkit.api): the graph dropped, the heap unfrozen after
        spec.loader.exec_module(dodo)  # type: ignore[union-attr]
    defaults = dodo.DOIT_CONFIG["default_tasks"]
    groups = {name[len("task_"):] for name in vars(dodo) if name.startswith("task_")}
    assert "audit" in defaults and set(defaults) <= groups, sorted(set(defaults) - groups)
    assert all(callable(vars(dodo)[f"task_{g}"]) for g in groups)
