"""Which evalkit code is running: a digest of the package's own Python files (and its version).

A stage that raised an unexpected exception (status ``bug``) is redone when this changes: the code
that failed was fixed, or at least replaced; a plain rerun on the same code would fail the same way.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache

from evalkit import __version__
from evalkit.config import PACKAGE_DIR


@cache
def code_digest() -> str:
    """sha256 over evalkit's version and every ``.py`` file of the package (path and bytes), read once per process."""
    h = hashlib.sha256(f"evalkit {__version__}\n".encode())
    for dirpath, dirnames, filenames in os.walk(PACKAGE_DIR):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                h.update(os.path.relpath(path, PACKAGE_DIR).encode() + b"\0")
                with open(path, "rb") as fh:
                    h.update(fh.read())
                h.update(b"\0")
    return h.hexdigest()
