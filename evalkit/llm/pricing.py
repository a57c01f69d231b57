"""Model prices (USD per million tokens) and the cost of one call's usage."""

from __future__ import annotations

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
    """Token counts of one call, as the API reports them."""

    input_tokens: int = 0
    """Uncached input tokens."""
    output_tokens: int = 0
    """Generated tokens."""
    cache_read_input_tokens: int = 0
    """Input tokens served from the prompt cache."""
    cache_creation_input_tokens: int = 0
    """Input tokens written to the prompt cache."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
        )


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
    """The exact entry, else the longest name that prefixes ``model`` (dated ids), else ``default``."""
    if model in prices:
        return prices[model]
    prefixes = [name for name in prices if name != "default" and model.startswith(name)]
    if prefixes:
        return prices[max(prefixes, key=len)]
    if "default" not in prices:
        raise KeyError(f"no price for model {model!r} and no 'default' entry in the price table")
    return prices["default"]


def cost_usd(usage: Usage, price: ModelPrice, *, batch: bool = False) -> float:
    """USD cost of ``usage`` at ``price``; batch calls at half price."""
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_input_tokens * price.cache_read
        + usage.cache_creation_input_tokens * price.cache_write
    ) / 1_000_000
    return total * (BATCH_DISCOUNT if batch else 1.0)
