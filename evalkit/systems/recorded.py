"""`recorded`: outputs read from files instead of running anything.

Two layouts: a folder holding `<suite>/<case_id>.json` (a Sample, the command protocol's output
shape), or a SWE-bench predictions JSONL (`instance_id`, `model_name_or_path`, `model_patch`).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalkit.artifacts import Sample
from evalkit.cases import Case
from evalkit.systems.base import RunContext, adapter

_lock = threading.Lock()
_predictions: dict[tuple[str, float], dict[str, dict[str, Any]]] = {}


def load_predictions(path: Path) -> dict[str, dict[str, Any]]:
    """instance_id -> prediction row of a SWE-bench predictions JSONL (or JSON list) file."""
    key = (str(path), path.stat().st_mtime)
    with _lock:
        if key in _predictions:
            return _predictions[key]
    text = path.read_text(encoding="utf-8")
    rows: list[dict[str, Any]]
    if path.suffix == ".json":
        loaded = json.loads(text)
        rows = list(loaded.values()) if isinstance(loaded, dict) else loaded
    else:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    table = {r["instance_id"]: r for r in rows}
    with _lock:
        _predictions[key] = table
    return table


@adapter("recorded")
def recorded(system: Any, case: Case, sample_index: int, ctx: RunContext) -> Sample:
    path = Path(system.path)
    path = path if path.is_absolute() else ctx.root / path
    if path.is_file():
        table = load_predictions(path)
        row = table.get(case.id)
        if row is None or (system.model_name and row.get("model_name_or_path") != system.model_name):
            return Sample(status="error", reason=f"no prediction for {case.id} in {path.name}")
        return Sample(patch=row.get("model_patch") or "")
    candidates = [path / case.suite / f"{case.id}.json"]
    if sample_index:
        candidates.insert(0, path / case.suite / f"{case.id}.{sample_index}.json")
    for c in candidates:
        if c.exists():
            try:
                return Sample.model_validate(json.loads(c.read_text(encoding="utf-8")))
            except (json.JSONDecodeError, ValidationError) as exc:
                return Sample(status="error", reason=f"recorded output {c.name} is not valid: {str(exc)[:300]}")
    return Sample(status="error", reason=f"no recorded output at {case.suite}/{case.id}.json")
