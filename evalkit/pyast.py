"""Python's ``ast.parse``, one call at a time in a process.

CPython 3.11 and 3.12 keep the AST constructor's recursion depth in interpreter-wide state, not per thread.
A collection or a thread switch in the middle of one thread's ``ast.parse`` lets another thread's parse move it,
and the first then fails with ``SystemError: AST constructor recursion depth mismatch`` on valid source
(python/cpython#106905). `evalkit run` runs its tasks in threads, and two of them parse Python at once: the
tamper screen of a patch's files (evalkit.sandbox.tamper) and the degenerate-answer check of a generated file
(evalkit.graders.degenerate). One of CI's runs lost a sandbox run to it. Every parse in evalkit goes through
`parse`, which holds one lock for the call (a parse takes well under a millisecond for the files evalkit
reads)."""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str | bytes) -> ast.Module:
    """``ast.parse(source)`` under the process's parse lock; raises what ``ast.parse`` raises."""
    with _LOCK:
        return ast.parse(source)
