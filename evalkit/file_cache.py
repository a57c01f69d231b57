"""Values read from a file, kept for the life of the process while the file's path, mtime and size stay the same."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class StatKeyedCache(Generic[T]):
    """One value per (path, mtime_ns, size): a file edited (or replaced) in place is read again.

    For input files a run reads once per case (recorded predictions, recorded grades, a solved-incident
    store): parsing and validating them once per process instead of once per case. A load that raises
    stores nothing, so a file that is fixed is read again. Thread-safe (doit's `-n` runs tasks in threads).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, int, int], T] = {}

    def get(self, path: Path, load: Callable[[Path], T],
            missing: Callable[[], BaseException] | None = None) -> T:
        """``load(path)``, or the value it returned for the same path, mtime and size.

        When ``path`` cannot be stat'ed, raises ``missing()`` if given (e.g. an InputError naming the
        file and what was expected), else the OSError itself."""
        try:
            st = path.stat()
        except OSError:
            if missing is None:
                raise
            raise missing() from None
        key = (str(path), st.st_mtime_ns, st.st_size)
        with self._lock:
            if key in self._values:
                return self._values[key]
        value = load(path)
        with self._lock:
            self._values[key] = value
        return value

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._values.clear()
