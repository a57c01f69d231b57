"""Temporary files of atomic writes that a killed run left behind, swept by the next run.

Every write goes to ``.<name>.<random>.tmp`` beside its target and is renamed over it
(evalkit.fsutil.atomic_write_bytes): a kill -9 between the two leaves the temporary file. A run
leaves a marker stamped with its pid (``<work>/running/evalkit-run-<pid>.<start>-marker``) while it
runs and removes it when it ends; a marker whose owner is gone means that run was killed, and the
next run removes every such temporary file under the work folder and the site folder (unless
another run of the project is still going). A normal run costs one folder listing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evalkit import tempdirs

MARKERS = "running"


def _tmp_files(root: Path) -> Iterator[Path]:
    if not root.is_dir():
        return
    for folder, _dirs, files in os.walk(root):
        for name in files:
            if name.startswith(".") and name.endswith(".tmp"):
                yield Path(folder) / name


def sweep(work: Path, site: Path) -> list[Path]:
    """Remove the temporary files of killed runs (when no other run is going); the files removed."""
    markers = work / MARKERS
    try:
        names = [entry.name for entry in os.scandir(markers)]
    except OSError:
        return []
    dead = [name for name in names if tempdirs.owner_alive(name) is False]
    if not dead or len(dead) < len(names):  # nothing was killed, or another run still writes
        return []
    removed = []
    for root in (work, site):
        for path in _tmp_files(root):
            try:
                path.unlink()
                removed.append(path)
            except OSError:
                continue
    for name in dead:
        (markers / name).unlink(missing_ok=True)
    return removed


@contextmanager
def run_marker(work: Path, site: Path) -> Iterator[list[Path]]:
    """Sweep what killed runs left, then mark this run as going until the block ends."""
    removed = sweep(work, site)
    marker = work / MARKERS / f"{tempdirs.prefix('evalkit-run-')}marker"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    try:
        yield removed
    finally:
        marker.unlink(missing_ok=True)
