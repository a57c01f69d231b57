"""Rows of a SWE-bench instances or predictions file: JSON list or mapping, JSONL or parquet, each with the line
it starts on (the importer and the grading harness read them alike)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from evalkit.errors import InputError, Problem


def _parquet_rows(path: Path) -> list[tuple[int | None, Any]]:
    """Rows of a parquet file (the Hugging Face dataset's `data/*.parquet`); no line numbers."""
    shown = str(path)
    try:
        import pyarrow.parquet as pq  # deferred: heavy, and only for parquet files
    except ImportError:
        raise InputError(Problem(shown, None, "reading parquet needs pyarrow (pip install 'evalkit[swebench]'), "
                                              "or give the rows as JSON / JSONL")) from None
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise InputError(Problem(shown, None, "file not found (expected SWE-bench instances as .json, .jsonl or .parquet)")) from None
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for a file that is not parquet
        raise InputError(Problem(shown, None, f"not a readable parquet file: {exc}")) from None
    return [(None, row) for row in table.to_pylist()]


_JSON_WS = re.compile(r"[ \t\r\n]*")


def _skip_ws(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not JSON whitespace."""
    m = _JSON_WS.match(text, pos)
    return m.end() if m else pos


def _json_list_rows(text: str, shown: str) -> list[tuple[int | None, Any]] | None:
    """(line where the element starts, element) of a JSON list, or None when the text is not one."""
    decoder = json.JSONDecoder()
    pos = len(text) - len(text.lstrip())
    if not text.startswith("[", pos):
        return None
    pos += 1
    out: list[tuple[int | None, Any]] = []
    while True:
        pos = _skip_ws(text, pos)
        if text.startswith("]", pos) and not out:
            return out
        value, end = decoder.raw_decode(text, pos)  # JSONDecodeError: the caller reports it
        out.append((text.count("\n", 0, pos) + 1, value))
        pos = _skip_ws(text, end)
        if text.startswith(",", pos):
            pos += 1
            continue
        if text.startswith("]", pos) and not text[pos + 1:].strip():
            return out
        raise json.JSONDecodeError("expected ',' or ']' after a row", text, pos)


def read_rows(path: Path) -> list[tuple[int | None, Any]]:
    """(line, raw row) of a JSON list (or `{id: row}` mapping), a JSONL file or a parquet file; line
    is where the row starts (None for parquet and mappings)."""
    shown = str(path)
    if path.suffix == ".parquet":
        return _parquet_rows(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(Problem(shown, None, "file not found (expected SWE-bench instances as .json or .jsonl)")) from None
    except UnicodeDecodeError as exc:
        raise InputError(Problem(shown, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})")) from None
    except OSError as exc:
        raise InputError(Problem(shown, None, f"cannot read: {exc.strerror}")) from None
    if path.suffix == ".jsonl" or (path.suffix != ".json" and not text.lstrip().startswith("[")):
        rows: list[tuple[int | None, Any]] = []
        problems = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append((n, json.loads(line)))
            except json.JSONDecodeError as exc:
                problems.append(Problem(shown, n, f"malformed JSON: {exc.msg} (column {exc.colno})"))
        if problems:
            raise InputError(problems)
        return rows
    try:
        listed = _json_list_rows(text, shown)
        if listed is not None:
            return listed
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(Problem(shown, exc.lineno, f"malformed JSON: {exc.msg} (column {exc.colno})")) from None
    if isinstance(loaded, dict):
        loaded = list(loaded.values())
    if not isinstance(loaded, list):
        raise InputError(Problem(shown, 1, "expected a JSON list of SWE-bench instances"))
    return [(None, r) for r in loaded]


def test_list(value: object) -> list[str] | None:
    """FAIL_TO_PASS / PASS_TO_PASS: a list of ids, or that list JSON-encoded in a string."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            return None
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return value
    return None
