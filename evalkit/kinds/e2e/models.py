"""What an end-to-end case's `inputs` and `reference` may say (the JSON Schema of case.yaml is generated from these)."""

from __future__ import annotations

from pydantic import Field

from evalkit.casemodels import SandboxInputs
from evalkit.models import Model


class E2EInputs(SandboxInputs):
    """Inputs of an end-to-end case: a whole application to migrate until its tests pass."""

    max_iterations: int = Field(default=3, ge=1, le=20)
    """How many times the system may be re-invoked with the failing tests' output."""


class E2EReference(Model):
    """Reference of an end-to-end case."""

    tests: list[str] = Field(min_length=1)
    """Test ids the final pass rate is counted over (an id absent from the results counts as failed)."""
    patch_file: str | None = None
    """A migration a person made (unified diff against the tree): what the `gold` system answers."""
