"""The providers: ``evalkit.providers`` entry points, each naming a class that follows ``base.Provider``.

evalkit's own (anthropic, openai) are declared in pyproject.toml like an outside package's;
``judge.provider`` and ``fallback.provider`` name one. A provider is imported only when used (the
Anthropic SDK takes a second to import): listing the names imports none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from evalkit.contracts import ProviderClass
from evalkit.plugins import registry

if TYPE_CHECKING:
    from evalkit.llm.providers.base import Provider
    from evalkit.llm.settings import JudgeSettings

def provider_names() -> tuple[str, ...]:
    """Names of the registered providers, sorted (without importing them)."""
    return registry("providers").names()


def provider_class(name: str) -> ProviderClass:
    """The class registered as provider ``name`` (KeyError naming the known ones when there is none)."""
    return cast(ProviderClass, registry("providers").get(name))  # the group's contract


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
