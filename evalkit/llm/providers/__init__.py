"""The provider registry: every module of this package defining ``PROVIDER`` is one, by its module name.

Adding a provider is adding one module (see ``base.Provider``); ``judge.provider`` and
``fallback.provider`` name it. Modules are imported only when used (the Anthropic SDK takes a
second to import).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalkit.llm.providers.base import Provider
    from evalkit.llm.settings import JudgeSettings

NOT_PROVIDERS = frozenset({"base"})


@cache
def provider_names() -> tuple[str, ...]:
    """Names of the providers, sorted (module names, without importing them)."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)
                        if not m.name.startswith("_") and m.name not in NOT_PROVIDERS))


def provider_class(name: str) -> Any:
    """The ``PROVIDER`` class of provider ``name``."""
    if name not in provider_names():
        raise KeyError(f"unknown provider {name!r}; known: {', '.join(provider_names())}")
    return importlib.import_module(f"{__name__}.{name}").PROVIDER


def make_provider(settings: JudgeSettings) -> Provider:
    """The provider the settings name, set up with their base URL and timeout."""
    return provider_class(settings.provider)(settings)


def base_url(settings: JudgeSettings) -> str:
    """The base URL the settings' provider calls (its default when the settings give none)."""
    return (settings.base_url or provider_class(settings.provider).default_base_url).rstrip("/")


def cache_scope(settings: JudgeSettings) -> dict[str, str] | None:
    """What besides the request an answer depends on (provider and base URL), or None for anthropic,
    whose cache keys are the request's alone (as they always were)."""
    if not provider_class(settings.provider).cache_scoped:
        return None
    return {"provider": settings.provider, "base_url": base_url(settings)}
