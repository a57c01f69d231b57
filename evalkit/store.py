"""Content-addressed store for expensive results (system runs, model calls, container runs).

Lives outside doit's database, so a killed run or a lost ``.doit.db`` never pays twice:
the key is a digest of everything the result depends on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalkit.fsutil import atomic_write_json, digest


class ContentStore:
    """A folder of JSON blobs addressed by the digest of their inputs."""

    def __init__(self, root: str | Path, namespace: str) -> None:
        self.root = Path(root) / namespace

    def key(self, inputs: Any) -> str:
        """The address of a result computed from ``inputs``."""
        return digest(inputs)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        """The stored value, or None when absent (a corrupt entry counts as absent)."""
        try:
            with open(self.path(key), encoding="utf-8") as fh:
                return json.load(fh)
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def put(self, key: str, value: Any) -> None:
        atomic_write_json(self.path(key), value)

    def __contains__(self, key: str) -> bool:
        return self.path(key).exists()
