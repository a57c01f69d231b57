"""Case health's inputs of each case, kept between summarize runs: a rerun reads only the changed cases' files.

The badge of a case (evalkit.report.health) reads three things per case: its validation file, its health file and
the keys a near-duplicate would share (its test ids, and the digests of its gold patch and legacy file, read in
full). With 1,000 cases that is 3,000 files read and parsed on every summarize, the same whatever changed.
`HealthInputsCache` keeps what was read, per case, with the stat (modification and change time in ns, size, inode)
of each file it came from and the case's digest (`Case.digest`: its fields and files): a case whose stats and digest
are those recorded takes its inputs from the cache; any other is read as before. The file
(``<work>/cache/health-inputs-<release>.pickle``) is salted by evalkit's code (`code_digest`), pydantic's and
Python's versions: a file of other code, or one that does not load, is ignored (and rewritten), never trusted.
"""

from __future__ import annotations

import os
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path

import pydantic

from evalkit.cases import Case
from evalkit.code_digest import code_digest
from evalkit.config import Config
from evalkit.fsutil import atomic_write_bytes
from evalkit.health_models import CaseHealth

HEALTH_CACHE_VERSION = 1
DUPLICATE_REFS = ("reference.patch_file", "inputs.legacy_file")
"""The file references whose content a near-duplicate shares (evalkit.report.health.duplicate_keys)."""

Stat = tuple[int, int, int, int] | None
"""(st_mtime_ns, st_ctime_ns, st_size, st_ino) of a file; None: no such file."""


@dataclass(frozen=True)
class HealthInputs:
    """What case health reads of one case."""

    status: tuple[str, str] | None
    """Its validation's (status, reason) (evalkit.stages.validate.validation_status); None: not validated."""
    health: CaseHealth | None
    """Its health file (evalkit.report.health.read_health); None: none, or one that does not parse."""
    duplicate_keys: tuple[tuple[str, str], ...]
    """(what, digest) a near-duplicate would share (evalkit.report.health.duplicate_keys)."""


def _stat(path: str) -> Stat:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino


def _salt() -> tuple[object, ...]:
    return HEALTH_CACHE_VERSION, code_digest(), pydantic.VERSION, sys.version


class HealthInputsCache:
    """Each case's `HealthInputs` from the last summarize, reused while its files' stats and digest are unchanged."""

    def __init__(self, cfg: Config) -> None:
        self.path = cfg.work_path / "cache" / f"health-inputs-{cfg.release}.pickle"
        self.work = str(cfg.work_path)
        self.salt = _salt()
        self.old: dict[str, tuple[tuple[object, ...], HealthInputs]] = _load(self.path, self.salt)
        self.new: dict[str, tuple[tuple[object, ...], HealthInputs]] = {}
        self.hits = self.misses = 0

    def signature(self, case: Case) -> tuple[object, ...]:
        """What the case's inputs are a function of: its digest and file references, and the stats of the files
        read (validation, health, the duplicate keys' files). Taken before they are read: a file written after the
        stat has another stat next time."""
        refs = tuple((dotted, case.refs.get(dotted)) for dotted in DUPLICATE_REFS)
        return (case.digest, case.key, case.ok, refs,
                _stat(f"{self.work}/validation/{case.suite}/{case.id}.json"),
                _stat(f"{self.work}/health/{case.suite}/{case.id}.json"),
                tuple(_stat(path) if path else None for _dotted, path in refs))

    def get(self, case: Case, signature: tuple[object, ...]) -> HealthInputs | None:
        """The case's inputs recorded under ``signature`` (kept for the next run), or None."""
        hit = self.old.get(case.key)
        if hit is not None and hit[0] == signature:
            self.hits += 1
            self.new[case.key] = hit
            return hit[1]
        self.misses += 1
        return None

    def put(self, case: Case, signature: tuple[object, ...], inputs: HealthInputs) -> None:
        self.new[case.key] = (signature, inputs)

    def save(self) -> None:
        """Write the cases seen this run, when anything differs from the file read."""
        if self.misses or self.new.keys() != self.old.keys():
            atomic_write_bytes(self.path, pickle.dumps({"salt": self.salt, "entries": self.new},
                                                       protocol=pickle.HIGHEST_PROTOCOL))


def _load(path: Path, salt: tuple[object, ...]) -> dict[str, tuple[tuple[object, ...], HealthInputs]]:
    """The entries of the cache file, or none: a missing file, one that does not unpickle (truncated, corrupted:
    pickle raises many kinds of error for those), of another salt or of another shape is not used."""
    try:
        with open(path, "rb") as fh:
            data = pickle.load(fh)
    except Exception:  # noqa: BLE001 - any unreadable cache is a cold cache
        return {}
    if not isinstance(data, dict) or data.get("salt") != salt or not isinstance(data.get("entries"), dict):
        return {}
    entries = data["entries"]
    if not all(isinstance(k, str) and isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], tuple)
               and isinstance(v[1], HealthInputs) for k, v in entries.items()):
        return {}
    return entries
