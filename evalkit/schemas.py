"""JSON Schemas generated from the models, shipped in evalkit/schemas/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalkit.fsutil import atomic_write_text

SCHEMA_DIR = Path(__file__).parent / "schemas"
SCHEMA_NAMES = ("suite", "case", "config", "report", "case-detail", "output", "execution", "grades", "scores",
                "command-output", "judge-audit", "rubric", "judge-outcome")
"""The schemas shipped (and copied into every site), in the order of `models()`; then one case schema per suite
kind (``case-<kind>``)."""


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
    return {**dict(zip(SCHEMA_NAMES, classes, strict=True)), **kind_case_models()}


def kind_case_models(own_only: bool = True) -> dict[str, type]:
    """``case-<kind>``: a case file of each registered suite kind, its `inputs` and `reference` typed by the kind's
    models (evalkit.kinds), so an editor rejects a misspelled key; evalkit's own kinds unless ``own_only`` is False."""
    from pydantic import Field, create_model

    from evalkit.casemodels import CaseFile
    from evalkit.kinds import kinds
    from evalkit.plugins import OWN, registry

    out: dict[str, type] = {}
    for name, k in kinds().items():
        if own_only and registry("kinds").source(name) != OWN:
            continue
        fields: dict[str, Any] = {}
        for part, model in (("inputs", k.inputs), ("reference", k.reference)):
            if model is None:
                continue
            required = any(f.is_required() for f in model.model_fields.values())
            doc = CaseFile.model_fields[part].description
            fields[part] = (model, Field(description=doc) if required else Field(default_factory=model, description=doc))
        title = "".join(p.title() for p in name.replace("-", "_").split("_"))
        out[f"case-{name}"] = create_model(f"{title}CaseFile", __base__=CaseFile,
                                           __doc__=f"A case file of a {name} suite: {k.description}", **fields)
    return out


def write_schemas(out: Path | None = None) -> list[Path]:
    out = out or SCHEMA_DIR
    written = []
    for name, model in models().items():
        path = out / f"{name}.schema.json"
        atomic_write_text(path, json.dumps(model.model_json_schema(by_alias=True), indent=1, sort_keys=True) + "\n")
        written.append(path)
    return written
