"""The JSON Schemas shipped in evalkit/schemas/ are the ones the models generate."""

from __future__ import annotations

import json
from pathlib import Path

from evalkit.schemas import SCHEMA_DIR, models, write_schemas


def test_shipped_schemas_are_current(tmp_path: Path) -> None:
    write_schemas(tmp_path)
    for name in models():
        fresh = json.loads((tmp_path / f"{name}.schema.json").read_text())
        shipped = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
        assert fresh == shipped, f"{name}.schema.json is stale: run `evalkit schema`"


def test_case_schema_names_field_docs() -> None:
    for name in ("case", "case-migration"):  # the union's branches, and each kind's own schema
        schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
        branches = [schema["$defs"][b["then"]["$ref"].rsplit("/", 1)[-1]] for b in schema.get("allOf", [])] or [schema]
        for branch in branches:
            assert "Unique id within the suite" in branch["properties"]["id"]["description"]
