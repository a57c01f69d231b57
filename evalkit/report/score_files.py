"""Reading the run's scores.json artifacts, one per participating (system, case)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from evalkit.artifacts import ARTIFACT_FILES, ScoresArtifact
from evalkit.cases import Case
from evalkit.config import Config

Scores = dict[tuple[str, str], ScoresArtifact]
"""(system name, case key) -> that pair's scores."""


def read_scores(cfg: Config, pairs: list[tuple[Any, Case]]) -> tuple[Scores, dict[str, list[tuple[str, ScoresArtifact]]]]:
    """The scores of every pair that has a scores.json, and per system name its (case key, scores) in pair order."""
    work, score_file = str(cfg.work_path), ARTIFACT_FILES["score"]
    scores: Scores = {}
    by_system: dict[str, list[tuple[str, ScoresArtifact]]] = defaultdict(list)
    for system, case in pairs:
        # the same path as artifact_path(), built as a plain string: this runs once per (system, case)
        try:
            with open(f"{work}/artifacts/{system.name}/{case.suite}/{case.id}/{score_file}", "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            continue
        key = case.key
        s = scores[(system.name, key)] = ScoresArtifact.model_validate_json(data)
        by_system[system.name].append((key, s))
    return scores, by_system
