"""The judge's slice of the config: model, limits, mode, budget, prices.

The API key is never a setting: it comes from the environment (``ANTHROPIC_API_KEY``) only,
so it cannot end up in a config dump, an artifact or a doit ``config_changed`` value.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field

from evalkit.llm.pricing import ModelPrice, default_prices
from evalkit.models import Model

API_KEY_ENV = "ANTHROPIC_API_KEY"
MODEL_ENV = "EVALKIT_JUDGE_MODEL"
DEFAULT_MODEL = "claude-sonnet-4-6"
"""A current model (claude-sonnet-4-5 reaches its end of life on 2026-11-30; the SDK's table says so)."""


class JudgeSettings(Model):
    """How model-graded steps call the model."""

    model: str = DEFAULT_MODEL
    """Model id; the environment variable EVALKIT_JUDGE_MODEL overrides it (see ``with_env``)."""
    max_tokens: int = Field(2048, ge=1)
    """Upper bound on generated tokens per call."""
    timeout_s: float = Field(60.0, gt=0)
    """Per-attempt HTTP timeout in seconds."""
    max_retries: int = Field(4, ge=0)
    """Retries after a rate limit, overload, server error or timeout (so up to max_retries + 1 attempts)."""
    circuit_after: int = Field(3, ge=0)
    """Consecutive transport failures of the endpoint (refused, reset, timeout, 5xx, malformed body) after
    which the rest of the run's calls fail at once as infrastructure errors; 0 never gives up."""
    concurrency: int = Field(4, ge=1)
    """Requests in flight at once, per client."""
    base_url: str | None = None
    """API base URL; None means the SDK default."""
    samples: int = Field(1, ge=1)
    """Self-consistency: ask this many times per item and report the spread."""
    mode: Literal["sync", "batch"] = "sync"
    """sync: one request per call; batch: uncached requests go out as one Message Batch (half price)."""
    budget_usd: float | None = Field(None, ge=0)
    """Stop making uncached calls once this much has been spent in one run; None means no limit."""
    use_cache: bool = True
    """Serve identical requests from the response cache; False always calls (and refreshes the cache)."""
    prices: dict[str, ModelPrice] = Field(default_factory=default_prices)
    """USD per million tokens by model id (prefix match for dated ids); 'default' for the rest."""
    batch_poll_s: float = Field(5.0, gt=0)
    """Seconds between polls of a Message Batch."""

    def with_env(self) -> JudgeSettings:
        """These settings with the model taken from EVALKIT_JUDGE_MODEL when it is set."""
        model = os.environ.get(MODEL_ENV, "").strip()
        return self.model_copy(update={"model": model}) if model else self


def api_key() -> str | None:
    """The API key from ANTHROPIC_API_KEY, or None when unset or empty."""
    key = os.environ.get(API_KEY_ENV, "").strip()
    return key or None


def configured() -> bool:
    """True when an API key is present in the environment."""
    return api_key() is not None
