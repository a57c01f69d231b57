"""What a case page shows, as one model: ``site/<release>/cases/<suite>/<case>.json``.

In the core layer because both sides read it: the report writes it (evalkit.report.case_pages) and each kind's page
part reads it (``Kind.detail``, evalkit/kinds/<kind>/page.py). evalkit.report.models re-exports it.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError, model_validator

from evalkit.artifacts import SystemArtifacts
from evalkit.casemodels import Criterion
from evalkit.models import Model

REPORT_SCHEMA_VERSION = 1
"""Version of the report's JSON files (report.json and the case JSON)."""


class CaseDetailFields(Model):
    """The fields of `CaseDetail`, without its fill-in of an artifact's system, suite and case: what `CaseDetail.read`
    validates the case JSON as first (straight from JSON, about twice as fast as through a before-validator)."""

    schema_version: int = REPORT_SCHEMA_VERSION
    """Version of this file's shape."""
    release: str
    """Release label."""
    suite: str
    """Suite name."""
    kind: str
    """Suite kind."""
    language: str
    """Language of the suite's code."""
    case_id: str
    """Case id."""
    description: str = ""
    """What the case checks."""
    tags: list[str] = []
    """Case tags."""
    problems: list[str] = []
    """Why the case is broken, if it is."""
    inputs: dict[str, Any] = {}
    """The case's inputs as given to systems (its kind's inputs model as JSON; the page reads them back through that
    model, evalkit.kinds.<kind>.page)."""
    input_files: dict[str, str] = {}
    """Text of the input files (key: dotted reference)."""
    reference_files: dict[str, str] = {}
    """Text of the reference files."""
    primary_file: str | None = None
    """Name of the file systems are expected to produce."""
    reference: dict[str, Any] = {}
    """The case's reference data as graders use it (e.g. expected tasks and their tests; its kind's reference model
    as JSON)."""
    criteria: list[Criterion] = []
    """Rubric criteria (id, text, weight) a judge checks (generation suites)."""
    systems: dict[str, SystemArtifacts] = {}
    """System -> its {output, execution, grades, scores} artifacts, as their models (validated once, when the case
    JSON is read)."""


class CaseDetail(CaseDetailFields):
    """site/<release>/cases/<suite>/<case>.json: everything a case page shows."""

    @classmethod
    def read(cls, data: bytes | str) -> CaseDetail:
        """A case JSON's model: `model_validate_json`, faster for a case JSON whose artifacts name their system,
        suite and case (every one evalkit writes). A model-level before-validator makes pydantic turn the whole JSON
        into Python objects first; so the JSON is validated as `CaseDetailFields` (no validator) and only when that
        fails (an older case JSON, or one that is not valid at all) through this model, whose error is raised."""
        try:
            fields = CaseDetailFields.model_validate_json(data)
        except ValidationError:
            return cls.model_validate_json(data)
        return cls.model_construct(fields.model_fields_set, **fields.__dict__)

    @model_validator(mode="before")
    @classmethod
    def _artifacts_know_where(cls, data: Any) -> Any:
        """An artifact in a case JSON need not repeat its system, suite and case (the JSON holds it under them):
        a field it lacks is taken from where it is, as the artifact's own fields are."""
        systems = data.get("systems") if isinstance(data, dict) else None
        if not isinstance(systems, dict):
            return data
        fixed: dict[str, Any] = {}
        for name, arts in systems.items():
            if isinstance(arts, dict) and any(isinstance(a, dict) and not {"system", "suite", "case_id"} <= a.keys()
                                              for a in arts.values()):
                where = {"system": name, "suite": data.get("suite"), "case_id": data.get("case_id")}
                arts = {k: {**where, **a} if isinstance(a, dict) else a for k, a in arts.items()}
            fixed[name] = arts
        return {**data, "systems": fixed}
