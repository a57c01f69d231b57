"""Model prices (USD per million tokens) and the cost of one call's usage."""

from __future__ import annotations

import sys

from pydantic import AliasChoices, Field

from evalkit.models import Model

BATCH_DISCOUNT = 0.5
"""Message Batches are billed at half the standard price."""


class ModelPrice(Model):
    """Per-million-token prices of one model, in USD."""

    input: float
    """Uncached input tokens."""
    output: float
    """Output tokens."""
    cache_read: float
    """Input tokens read from the prompt cache."""
    cache_write: float
    """Input tokens written to the prompt cache (5-minute ephemeral cache)."""


class Usage(Model):
    """Tokens and money of one call or run: the one usage model of the LLM client, its providers and the artifacts.

    The cache counts are stored as ``cache_read_tokens``/``cache_write_tokens``; the Messages API's names
    (``cache_read_input_tokens``/``cache_creation_input_tokens``, kept in grades.json before this model was
    shared) are read too."""

    input_tokens: int = 0
    """Uncached input (prompt) tokens."""
    output_tokens: int = 0
    """Generated (completion) tokens."""
    cache_read_tokens: int = Field(default=0, validation_alias=AliasChoices("cache_read_tokens", "cache_read_input_tokens"))
    """Input tokens served from the prompt cache."""
    cache_write_tokens: int = Field(default=0,
                                    validation_alias=AliasChoices("cache_write_tokens", "cache_creation_input_tokens"))
    """Input tokens written to the prompt cache."""
    cost_usd: float = 0.0
    """USD price of those tokens, where known (0 where the cost is kept beside the usage)."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


def default_prices() -> dict[str, ModelPrice]:
    """List prices of a few Claude models; ``default`` answers for any other model."""
    sonnet = ModelPrice(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75)
    return {
        "claude-sonnet-4-6": sonnet,
        "claude-sonnet-4-5": sonnet,
        "claude-sonnet-4": sonnet,
        "claude-opus-4-6": ModelPrice(input=5.0, output=25.0, cache_read=0.50, cache_write=6.25),
        "claude-opus-4-5": ModelPrice(input=5.0, output=25.0, cache_read=0.50, cache_write=6.25),
        "claude-opus-4-1": ModelPrice(input=15.0, output=75.0, cache_read=1.50, cache_write=18.75),
        "claude-opus-4": ModelPrice(input=15.0, output=75.0, cache_read=1.50, cache_write=18.75),
        "claude-haiku-4-5": ModelPrice(input=1.0, output=5.0, cache_read=0.10, cache_write=1.25),
        "claude-3-5-haiku": ModelPrice(input=0.80, output=4.0, cache_read=0.08, cache_write=1.0),
        "default": sonnet,
    }


def price_for(model: str, prices: dict[str, ModelPrice]) -> ModelPrice:
    """The exact entry, else the longest name that prefixes ``model`` (dated ids), else ``default``, else
    ``UNPRICED`` with a warning (once per model): a model missing from a user's table is an unknown cost."""
    if model in prices:
        return prices[model]
    prefixes = [name for name in prices if name != "default" and model.startswith(name)]
    if prefixes:
        return prices[max(prefixes, key=len)]
    if "default" not in prices:
        if model not in _unpriced:
            _unpriced.add(model)
            print(f"evalkit: warning: no price for model {model!r} in prices: (and no 'default' entry): its cost "
                  "is unknown and counted as $0, so budget_usd does not limit it; add it to prices: to count it",
                  file=sys.stderr, flush=True)
        return UNPRICED
    return prices["default"]


UNPRICED = ModelPrice(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0)
"""The price of a model the table does not list (a warning, never an error: the cost is unknown)."""

_unpriced: set[str] = set()


def unpriced_models() -> list[str]:
    """Models priced at ``UNPRICED`` in this process (their cost is unknown, not zero)."""
    return sorted(_unpriced)


def cost_usd(usage: Usage, price: ModelPrice, *, batch: bool = False) -> float:
    """USD cost of ``usage`` at ``price``; batch calls at half price."""
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000
    return total * (BATCH_DISCOUNT if batch else 1.0)
