"""Every Python parse in evalkit holds one process-wide lock (evalkit.pyast: CPython 3.11's AST constructor
keeps its recursion depth interpreter-wide, and parses in two threads at once failed a sandbox run in CI with
`SystemError: AST constructor recursion depth mismatch`)."""

from __future__ import annotations

import ast
import threading
import time

from evalkit import pyast
from helpers import REPO


def test_no_module_parses_python_outside_pyast() -> None:
    calls = []
    for path in sorted((REPO / "evalkit").rglob("*.py")):
        if path.name == "pyast.py" and path.parent.name == "evalkit":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "parse" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "ast":
                calls.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not calls, f"ast.parse outside evalkit.pyast (use evalkit.pyast.parse): {calls}"


def test_a_parse_waits_while_another_holds_the_lock() -> None:
    done: list[float] = []
    with pyast._LOCK:
        worker = threading.Thread(target=lambda: done.append(time.monotonic()) if pyast.parse("x = 1") else None)
        worker.start()
        worker.join(0.3)
        assert worker.is_alive() and not done  # blocked on the lock, not parsing beside the holder
        released = time.monotonic()
    worker.join(5)
    assert done and done[0] >= released
    assert isinstance(pyast.parse("def f():\n    return 1\n").body[0], ast.FunctionDef)
