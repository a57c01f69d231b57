"""Which judge (if any) grades a case, and the shared model client of a run."""

from __future__ import annotations

import os
from typing import Any

from evalkit.artifacts import Sample
from evalkit.cases import Case
from evalkit.config import Config


def judge_case(cfg: Config, case: Case, sample: Sample, main_file: str | None) -> dict[str, Any] | None:
    """The judge outcome for a case, or None for suites without a model-graded part."""
    if case.kind not in ("migration", "generation", "rag"):
        return None
    if not os.environ.get("ANTHROPIC_API_KEY"):
        return {"status": "not_configured", "reason": "judge not configured: ANTHROPIC_API_KEY is not set"}
    return {"status": "not_configured", "reason": "judge not wired yet"}
