"""The base class of every serialized thing in evalkit."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict

FIELD_DOCS = os.environ.get("EVALKIT_FIELD_DOCS") == "1"
"""Field docstrings become field descriptions (pydantic's ``use_attribute_docstrings``) only in a process that
writes the JSON Schemas (evalkit.schemas.write_schemas starts one with EVALKIT_FIELD_DOCS=1): extracting them
reads the source of every model class at import, ~0.12 s of every evalkit process, and nothing else reads them."""


class Model(BaseModel):
    """Strict pydantic model: unknown keys are errors, field docstrings become descriptions (in the schemas)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=FIELD_DOCS, populate_by_name=True)


class OpenModel(BaseModel):
    """A model that keeps unknown keys (for data written by systems under test)."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=FIELD_DOCS, populate_by_name=True)
