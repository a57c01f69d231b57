"""The scenario section: every configuration matrix's scenarios against its all-off scenario."""

from __future__ import annotations

from evalkit.artifacts import ScoresArtifact
from evalkit.cases import Project
from evalkit.config import Config
from evalkit.report.models import ScenarioGroup


def scenario_groups(cfg: Config, project: Project, scores: dict[tuple[str, str], ScoresArtifact]) -> list[ScenarioGroup]:
    """One group per system entry that declared a `matrix` (none yet: filled in with the matrix)."""
    return []
