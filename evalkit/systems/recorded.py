"""`recorded`: outputs read from files instead of running anything.

Two layouts: a folder holding `<suite>/<case_id>.json` (a Sample, the command protocol's output
shape), or a SWE-bench predictions JSONL (`instance_id`, `model_name_or_path`, `model_patch`).
A case without a recorded output is `not_attempted`: left out of the system's rates and shown as
coverage (attempted / cases), never counted as a failure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from evalkit.artifacts import Sample
from evalkit.cases import Case
from evalkit.errors import InputError, Problem, rel
from evalkit.file_cache import StatKeyedCache
from evalkit.systems.base import RunContext, adapter
from evalkit.yamlio import read_input_text

if TYPE_CHECKING:
    from evalkit.config import RecordedSystem, System

_predictions: StatKeyedCache[dict[str, dict[str, Any]]] = StatKeyedCache()


PREDICTION_SHAPE = "a JSON object with instance_id and model_patch (a diff, empty or null)"


def _check_row(row: Any, shown: str, line: int | None, where: str) -> list[Problem]:
    if not isinstance(row, dict):
        return [Problem(shown, line, f"{where}: expected {PREDICTION_SHAPE}, got {type(row).__name__}")]
    out = []
    if not isinstance(row.get("instance_id"), str) or not row["instance_id"].strip():
        out.append(Problem(shown, line, f"{where}: instance_id missing or not a non-empty string (expected {PREDICTION_SHAPE})"))
    if "model_patch" not in row:
        out.append(Problem(shown, line, f"{where}: model_patch missing (expected {PREDICTION_SHAPE})"))
    elif row["model_patch"] is not None and not isinstance(row["model_patch"], str):
        out.append(Problem(shown, line, f"{where}: model_patch must be a string (a diff) or null, "
                                        f"not {type(row['model_patch']).__name__}"))
    return out


def load_predictions(path: Path, shown: str | None = None) -> dict[str, dict[str, Any]]:
    """instance_id -> prediction row of a SWE-bench predictions JSONL (or JSON list) file.

    Raises InputError naming file:line (the row number for a JSON list) for malformed JSON, a row
    that is not an object, or a row without a string instance_id or a model_patch.
    """
    return _predictions.get(path, lambda p: _read_predictions(p, shown or str(p)))


def _read_predictions(path: Path, shown: str) -> dict[str, dict[str, Any]]:
    text = read_input_text(path, shown)
    problems: list[Problem] = []
    rows: list[tuple[int | None, str, Any]] = []
    if path.suffix == ".json":
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(Problem(shown, exc.lineno, f"malformed JSON: {exc.msg} (column {exc.colno})")) from None
        if isinstance(loaded, dict):
            loaded = list(loaded.values())
        if not isinstance(loaded, list):
            raise InputError(Problem(shown, 1, f"expected a JSON list (or {{instance_id: row}} mapping) of predictions, "
                                               f"each {PREDICTION_SHAPE}"))
        rows = [(None, f"row {i}", r) for i, r in enumerate(loaded, 1)]
    else:
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append((n, "prediction", json.loads(line)))
            except json.JSONDecodeError as exc:
                problems.append(Problem(shown, n, f"malformed JSON: {exc.msg} (column {exc.colno}); "
                                                  f"expected one prediction per line, {PREDICTION_SHAPE}"))
    table: dict[str, dict[str, Any]] = {}
    for at, where, row in rows:
        bad = _check_row(row, shown, at, where)
        problems.extend(bad)
        if not bad:
            table[row["instance_id"]] = row
    if problems:
        raise InputError(problems)
    return table


def recorded_sources(system: System, case: Case, root: Path, sample_index: int = 0) -> list[Path]:
    """The files a recorded answer to ``case`` is read from (existing or not): the predictions file,
    or the case's ``<suite>/<case>.json`` (and its per-sample file). Editing one reruns that
    system's generate stage for the case: they are its task's dependencies and part of its cache key."""
    system = recorded_system(system)
    path = Path(system.path)
    path = path if path.is_absolute() else root / path
    grades = [root / system.grades] if system.grades else []  # a recorded judge's verdicts
    if path.is_file():
        return [path, *grades]
    found = [path / case.suite / f"{case.id}.json"]
    if sample_index:
        found.insert(0, path / case.suite / f"{case.id}.{sample_index}.json")
    return found + grades


def recorded_system(system: System) -> RecordedSystem:
    """``system`` as the recorded system it is: its ``adapter: recorded`` tag made it a RecordedSystem when
    evalkit.yaml was read (evalkit.config.System); nothing is checked here."""
    return cast("RecordedSystem", system)


@adapter("recorded", free=True)
def recorded(system: System, case: Case, sample_index: int, ctx: RunContext) -> Sample:
    system = recorded_system(system)
    path = Path(system.path)
    path = path if path.is_absolute() else ctx.root / path
    if path.is_file():
        try:
            table = load_predictions(path, rel(path, ctx.root))
        except InputError as exc:
            more = f" (and {len(exc.problems) - 3} more)" if len(exc.problems) > 3 else ""
            return Sample(status="error", reason="predictions file is not valid: "
                          + "; ".join(str(p) for p in exc.problems[:3]) + more)
        row = table.get(case.id)
        if row is None or (system.model_name and row.get("model_name_or_path") != system.model_name):
            return Sample(status="not_attempted", reason=f"no prediction for {case.id} in {path.name}")
        return Sample(patch=row.get("model_patch") or "")
    candidates = [path / case.suite / f"{case.id}.json"]
    if sample_index:
        candidates.insert(0, path / case.suite / f"{case.id}.{sample_index}.json")
    for c in candidates:
        if c.exists():
            shown = rel(c, ctx.root)
            try:
                return Sample.model_validate(json.loads(read_input_text(c, shown)))
            except InputError as exc:  # not UTF-8, or unreadable: the file and why, never a traceback
                return Sample(status="error", reason=f"recorded output {exc.problems[0]}")
            except json.JSONDecodeError as exc:
                return Sample(status="error", reason=f"recorded output {shown}:{exc.lineno}: malformed JSON: {exc.msg}")
            except ValidationError as exc:
                return Sample(status="error", reason=f"recorded output {shown} is not valid: {str(exc)[:300]}")
    return Sample(status="not_attempted", reason=f"no recorded output at {case.suite}/{case.id}.json")
