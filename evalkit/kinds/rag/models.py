"""What a rag case's `inputs` and `reference` may say (the JSON Schema of case.yaml is generated from these)."""

from __future__ import annotations

from evalkit.models import Model


class RagInputs(Model):
    """Inputs of a rag case."""

    question: str
    """The incident or question the hint answers."""
    contexts: list[str] = []
    """Retrieved context strings, most relevant first."""


class RagReference(Model):
    """Reference of a rag case."""

    answer: str | None = None
    """A reference hint (optional; what the `gold` system answers)."""
    contexts: list[str] = []
    """Contexts a good retriever would return (optional; enables context recall)."""
