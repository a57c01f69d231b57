"""What a generation case's `inputs` and `reference` may say (the JSON Schema of case.yaml is generated from these)."""

from __future__ import annotations

from evalkit.models import Model


class GenerationInputs(Model):
    """Inputs of a generation case: instructions and the files they refer to."""

    instructions: str
    """What to generate, in plain words."""
    input_files: list[str] = []
    """Files the system gets (paths relative to the case): an API definition, a model, seed tests."""
    output_path: str | None = None
    """The output file that matters most: checked for syntax and, by default, by assertions."""


class GenerationReference(Model):
    """Reference of a generation case (optional)."""

    files: dict[str, str] = {}
    """Expected output files: output path -> file with the expected content (relative to the case)."""
