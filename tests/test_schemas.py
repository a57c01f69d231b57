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


def test_grades_schema_accepts_both_judge_outcome_shapes() -> None:
    """grades.json's judge is one file's outcome or a patch suite's changed files; the shipped schema must take
    both as the model does (a oneOf refused every one-file outcome: it is valid under both branches)."""
    from jsonschema import Draft202012Validator

    from evalkit.artifacts import GradesArtifact
    from evalkit.outcomes import ChangesJudgeOutcome, FileVerdict, JudgeOutcome

    schema = json.loads((SCHEMA_DIR / "grades.schema.json").read_text())
    validator = Draft202012Validator(schema)
    base = {"system": "s", "suite": "migration", "case_id": "c"}
    one_file = GradesArtifact(**base, judge=JudgeOutcome(status="judged", model="m", scores={"overall": 4.0})).model_dump(mode="json")
    changes = GradesArtifact(**base, judge=ChangesJudgeOutcome(status="judged", files=[
        FileVerdict(path="a.py", change="modified", changed_lines=3, judged=True, status="judged")])).model_dump(mode="json")
    for doc in (one_file, changes, GradesArtifact(**base).model_dump(mode="json")):
        assert not list(validator.iter_errors(doc)), list(validator.iter_errors(doc))
        assert GradesArtifact.model_validate(doc).model_dump(mode="json") == doc
    wrong = {**changes, "judge": {**changes["judge"], "files": [{"path": "a.py"}]}}  # a file verdict missing its keys
    assert list(validator.iter_errors(wrong))
