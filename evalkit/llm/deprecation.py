"""Deprecation notices from the model provider, shown in the run and kept with the answers.

Two sources:
- the anthropic SDK's own table of deprecated models and their end-of-life dates (the SDK emits a
  ``DeprecationWarning`` from it, which Python hides outside tests: evalkit says it instead);
- response headers the API may send: ``Deprecation`` (RFC 9745), ``Sunset`` (RFC 8594), any
  ``*-deprecation*`` header, and ``Warning: 299`` (a persistent warning).
Each distinct notice is printed once per process on stderr.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping

_lock = threading.Lock()
_announced: set[str] = set()


def sdk_table() -> dict[str, str]:
    """Model id -> end-of-life date, from the installed SDK (empty when it has no such table)."""
    try:
        from anthropic._data import DEPRECATED_MODELS  # deferred: the anthropic SDK (heavy), only when a model is called
    except ImportError:
        try:
            from anthropic.resources.messages.messages import DEPRECATED_MODELS  # type: ignore[no-redef]  # deferred: the anthropic SDK (heavy), only when a model is called
        except ImportError:
            return {}
    return dict(DEPRECATED_MODELS)


def model_notice(model: str) -> str | None:
    """The notice for ``model`` when the SDK lists it as deprecated, else None."""
    end = sdk_table().get(model)
    if end is None:
        return None
    return (f"model {model} is deprecated by Anthropic and reaches its end of life on {end}: "
            "set judge.model to a current model")


def header_notices(model: str, headers: Mapping[str, str] | None) -> list[str]:
    """Deprecation notices in an answer's headers (names compared without case)."""
    if not headers:
        return []
    found: list[str] = []
    for name, value in headers.items():
        lower = name.lower()
        if "deprecat" in lower or lower == "sunset" or (lower == "warning" and value.strip().startswith("299")):
            found.append(f"model {model}: the API says {lower}: {value.strip()[:300]}")
    return found


def announce(notices: list[str]) -> None:
    """Print each notice not printed yet by this process."""
    with _lock:
        new = [n for n in notices if n not in _announced]
        _announced.update(new)
    for notice in new:
        print(f"evalkit: deprecation notice: {notice}", file=sys.stderr, flush=True)
