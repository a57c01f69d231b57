"""Python's cycle collector held off while evalkit builds a large object graph that lives on.

Reading a 10,000-case report.json, summarizing a run or writing a release's pages allocates hundreds of thousands of
objects that stay alive and hold no cycles: each full collection meanwhile scanned them all again (a third of the
time of reading a previous release's report and diffing it with this one's). Refcounting frees garbage as usual; a
cycle made meanwhile waits for the next collection after.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The cycle collector off inside, back on after if it was on before (nested pauses keep it off until the outer
    one ends)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


__all__ = ["paused"]
