"""JSON Schemas generated from the models, shipped in evalkit/schemas/."""

from __future__ import annotations

import json
from pathlib import Path

from evalkit.fsutil import atomic_write_text

SCHEMA_DIR = Path(__file__).parent / "schemas"
SCHEMA_NAMES = ("suite", "case", "config", "report", "case-detail", "output", "execution", "grades", "scores",
                "command-output", "judge-audit", "rubric", "judge-outcome")
"""The schemas shipped (and copied into every site), in the order of `models()`."""


def models() -> dict[str, type]:
    from evalkit.casemodels import CaseFile, SuiteSpec
    from evalkit.config import Config
    from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact, Sample, ScoresArtifact
    from evalkit.graders.audit_models import JudgeAudit
    from evalkit.graders.judge import JudgeOutcome
    from evalkit.graders.judge_rubric import JudgeRubric
    from evalkit.report.models import CaseDetail, Report

    classes = (SuiteSpec, CaseFile, Config, Report, CaseDetail, OutputArtifact, ExecutionArtifact, GradesArtifact,
               ScoresArtifact, Sample, JudgeAudit, JudgeRubric, JudgeOutcome)
    return dict(zip(SCHEMA_NAMES, classes, strict=True))


def write_schemas(out: Path | None = None) -> list[Path]:
    out = out or SCHEMA_DIR
    written = []
    for name, model in models().items():
        path = out / f"{name}.schema.json"
        atomic_write_text(path, json.dumps(model.model_json_schema(by_alias=True), indent=1, sort_keys=True) + "\n")
        written.append(path)
    return written
