"""What an agentic case's `inputs` and `reference` may say (the JSON Schema of case.yaml is generated from these)."""

from __future__ import annotations

from pydantic import Field

from evalkit.casemodels import IncidentMatcher, SandboxInputs
from evalkit.models import Model


class ExpectedTask(Model):
    """A task a migration assistant should discover: one incident to fix."""

    rule_id: str
    """Rule that fired."""
    file: str
    """File of the incident, relative to the source tree."""
    line: int | None = Field(default=None, ge=1)
    """1-based line of the incident (None: anywhere in the file)."""
    tests: list[str] = []
    """Test ids that must pass for the incident to count as resolved (optional)."""


class AgenticInputs(SandboxInputs):
    """Inputs of an agentic case: a source tree, its analysis incidents, how to re-check them."""

    matchers: dict[str, IncidentMatcher] = {}
    """Rule id -> how to re-check its incidents after the system's changes."""


class AgenticReference(Model):
    """Reference of an agentic case."""

    expected_tasks: list[ExpectedTask] = Field(min_length=1)
    """The tasks a complete analysis of the incidents yields."""
    line_tolerance: int = Field(default=2, ge=0)
    """A discovered task matches an expected one on the same rule and file within this many lines."""
    patch_file: str | None = None
    """A migration a person made (unified diff against the tree): what the `gold` system answers."""
