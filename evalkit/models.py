"""The base class of every serialized thing in evalkit."""

from __future__ import annotations

import os
import threading
from typing import Any

from pydantic import BaseModel, ConfigDict

FIELD_DOCS = os.environ.get("EVALKIT_FIELD_DOCS") == "1"
"""Field docstrings become field descriptions (pydantic's ``use_attribute_docstrings``) only in a process that
writes the JSON Schemas (evalkit.schemas.write_schemas starts one with EVALKIT_FIELD_DOCS=1): extracting them
reads the source of every model class at import, ~0.12 s of every evalkit process, and nothing else reads them."""


_REBUILD = threading.RLock()
"""Held while a model's validator is built. pydantic's own `model_rebuild` is not thread-safe before its
2.14 (pydantic#13438, which puts this same lock inside it): two threads using a deferred model for the first
time would both build it, and one may validate with a half-built class meanwhile (python-genai#2991)."""


class _Deferred(BaseModel):
    """A model whose validator and serializer are built on first use, not at import (pydantic's ``defer_build``).

    evalkit defines ~140 models and a process uses a few of them: building all at import was ~0.1 s of every
    `evalkit` process (a no-op `evalkit run` on 1,000 cases x 4 systems: 1.39 -> 1.21 s of CPU, medians of 8
    alternated runs). First uses may come from several threads (the judge's, doit's), so the build is under
    `_REBUILD` (tests/test_models_deferred.py)."""

    model_config = ConfigDict(defer_build=True)

    @classmethod
    def model_rebuild(cls, *, force: bool = False, raise_errors: bool = True, _parent_namespace_depth: int = 2,
                      _types_namespace: Any = None) -> bool | None:
        with _REBUILD:  # one frame deeper than pydantic expects: the caller's namespace is one more up
            depth = _parent_namespace_depth + 1 if _parent_namespace_depth > 0 else _parent_namespace_depth
            return super().model_rebuild(force=force, raise_errors=raise_errors, _parent_namespace_depth=depth,
                                         _types_namespace=_types_namespace)


class Model(_Deferred):
    """Strict pydantic model: unknown keys are errors, field docstrings become descriptions (in the schemas)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=FIELD_DOCS, populate_by_name=True)


class OpenModel(_Deferred):
    """A model that keeps unknown keys (for data written by systems under test)."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=FIELD_DOCS, populate_by_name=True)
