"""The base class of every serialized thing in evalkit."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """Strict pydantic model: unknown keys are errors, field docstrings become descriptions."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, populate_by_name=True)


class OpenModel(BaseModel):
    """A model that keeps unknown keys (for data written by systems under test)."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True, populate_by_name=True)
