"""JSON Schemas generated from the models, shipped in evalkit/schemas/."""

from __future__ import annotations

import json
from pathlib import Path

from evalkit.fsutil import atomic_write_text

SCHEMA_DIR = Path(__file__).parent / "schemas"


def models() -> dict[str, type]:
    from evalkit.casemodels import CaseFile, SuiteSpec
    from evalkit.config import Config
    from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact, Sample, ScoresArtifact
    from evalkit.report.models import CaseDetail, Report

    return {"suite": SuiteSpec, "case": CaseFile, "config": Config, "report": Report, "case-detail": CaseDetail,
            "output": OutputArtifact, "execution": ExecutionArtifact, "grades": GradesArtifact,
            "scores": ScoresArtifact, "command-output": Sample}


def write_schemas(out: Path | None = None) -> list[Path]:
    out = out or SCHEMA_DIR
    written = []
    for name, model in models().items():
        path = out / f"{name}.schema.json"
        atomic_write_text(path, json.dumps(model.model_json_schema(by_alias=True), indent=1, sort_keys=True) + "\n")
        written.append(path)
    return written
