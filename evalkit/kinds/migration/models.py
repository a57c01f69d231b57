"""What a migration case's `inputs` and `reference` may say (the JSON Schema of case.yaml is generated from these)."""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from evalkit.casemodels import IncidentMatcher, LegacyFileInputs
from evalkit.models import Model


class SolvedExample(Model):
    """A solved example of the same rule, shown to the system and the judge: before/after files, or a
    text (filled from the suite's `solved_store` when the case has no example of its own)."""

    before_file: str | None = None
    """Code before the fix (path relative to the case)."""
    after_file: str | None = None
    """Code after the fix (path relative to the case)."""
    text: str | None = None
    """The example as text (a looked-up example: where the incident was solved, its message, its diff when known)."""
    source: dict[str, Any] | None = None
    """Where a looked-up example comes from (store, rule, app, file, line, similarity scores)."""

    @model_validator(mode="after")
    def _files_or_text(self) -> "SolvedExample":
        if (self.before_file is None) != (self.after_file is None):
            missing = "after_file" if self.after_file is None else "before_file"
            raise ValueError(f"{missing}: required key is missing (a solved example needs both before_file and "
                             "after_file, or a text)")
        if self.before_file is None and not self.text:
            raise ValueError("a solved example needs before_file and after_file, or text")
        return self


class MigrationInputs(LegacyFileInputs):
    """Inputs of a migration case: one legacy file and its incidents."""

    solved_example: SolvedExample | None = None
    """Optional solved example of the same rule."""
    matchers: dict[str, IncidentMatcher] = {}
    """Rule id -> how to re-check its incidents in the output (as in agentic suites; a suite's
    `defaults` can carry them for all its cases). A rule without one: its incident's line must be gone."""


class MigrationReference(Model):
    """Reference of a migration case."""

    expected_file: str | None = None
    """The migrated file as a person wrote it (path relative to the case); without it (e.g. a case
    imported from an analyzer report) reference-based metrics are not applicable."""
    deleted: bool = False
    """The file is deleted in the target: deleting it is the correct answer (no expected_file then)."""
    labels: dict[str, Any] = {}
    """People's labels of system outputs: labeller -> system -> values of the judge rubric's fields, as in
    a labels/<labeller>.yaml file (evalkit.labels; checked against the suite's rubric)."""

    @model_validator(mode="after")
    def _deleted_or_expected(self) -> "MigrationReference":
        if self.deleted and self.expected_file:
            raise ValueError("deleted: true and an expected_file contradict each other (a deleted file has no expected content)")
        return self
