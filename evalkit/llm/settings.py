"""The judge's slice of the config: provider, model, limits, mode, budget, prices, rate limits, fallback.

API keys are never settings: they come from the environment only (``ANTHROPIC_API_KEY`` or
``ANTHROPIC_API_KEYS``, ``OPENAI_API_KEY`` or ``OPENAI_API_KEYS``: evalkit.llm.keys), so they
cannot end up in a config dump, an artifact or a doit ``config_changed`` value.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, field_validator, model_validator

from evalkit.graders.audit_settings import AuditSettings
from evalkit.graders.calibration_settings import CalibrationSettings
from evalkit.llm.keys import env_keys, env_names
from evalkit.llm.pricing import ModelPrice, default_prices
from evalkit.models import Model
from evalkit.plugins import registry

API_KEY_ENV = "ANTHROPIC_API_KEY"
MODEL_ENV = "EVALKIT_JUDGE_MODEL"
DEFAULT_MODEL = "claude-sonnet-4-6"
"""A current model (claude-sonnet-4-5 reaches its end of life on 2026-11-30; the SDK's table says so)."""


def _known_provider(name: str) -> str:
    return registry("providers").require(name, "provider")


PROVIDER_ENUM = registry("providers").schema_enum()
"""The JSON Schema of a ``provider`` field lists the registered providers."""


class RateLimit(Model):
    """Requests and tokens per window (a minute) allowed to one provider endpoint, across the run's threads."""

    rpm: int | None = Field(default=None, ge=1)
    """Requests per window; None means no limit."""
    tpm: int | None = Field(default=None, ge=1)
    """Tokens (input and output) per window; a request reserves its estimated input plus max_tokens until
    its usage is known; None means no limit."""
    window_s: float = Field(default=60.0, gt=0)
    """Length of the window in seconds: 60 for per-minute limits (shorter only to test the limiter)."""


class FallbackSettings(Model):
    """A second model asked when the primary keeps failing (its circuit is open or its retries are spent)."""

    provider: str = Field(default="anthropic", json_schema_extra=PROVIDER_ENUM)
    """Provider of the fallback (anthropic, openai)."""
    model: str
    """Model id of the fallback."""
    base_url: str | None = None
    """Base URL of the fallback's API; None means the provider's default."""

    _provider = field_validator("provider")(_known_provider)


class JudgeSettings(Model):
    """How model-graded steps call the model."""

    provider: str = Field(default="anthropic", json_schema_extra=PROVIDER_ENUM)
    """Which API is called: anthropic (Messages API) or openai (any OpenAI-compatible Chat Completions
    endpoint: OpenAI, vLLM, Ollama, gateways; set base_url). Keys come from the environment only."""
    model: str = DEFAULT_MODEL
    """Model id; the environment variable EVALKIT_JUDGE_MODEL overrides it (see ``with_env``)."""
    rubric: str | None = None
    """Migration judge rubric: a shipped name (codejudge, kai_ci, kai_eval) or a rubric .yaml path relative to
    the config file (evalkit.graders.rubric_config); None: codejudge. A suite's own ``rubric`` wins."""
    max_tokens: int = Field(default=2048, ge=1)
    """Upper bound on generated tokens per call."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Per-attempt HTTP timeout in seconds."""
    max_retries: int = Field(default=4, ge=0)
    """Retries after a rate limit, overload, server error or timeout (so up to max_retries + 1 attempts)."""
    circuit_after: int = Field(default=3, ge=0)
    """Consecutive transport failures of the endpoint (refused, reset, timeout, 5xx, malformed body) after
    which the rest of the run's calls fail at once as infrastructure errors; 0 never gives up."""
    concurrency: int = Field(default=4, ge=1)
    """Requests in flight at once, per client."""
    base_url: str | None = None
    """API base URL; None means the provider's default (for openai, e.g. http://localhost:8000/v1 for vLLM)."""
    api_key: Literal["env", "none"] = "env"
    """env: the provider's keys from the environment (<PROVIDER>_API_KEY[S]); none: the endpoint takes no key
    (a local vLLM or Ollama without auth): the judge is configured without one and sends none."""
    samples: int = Field(default=1, ge=1)
    """Self-consistency: ask this many times per item and report the spread."""
    mode: Literal["sync", "batch"] = "sync"
    """sync: one request per call; batch: uncached requests go out as one Message Batch (half price)."""
    budget_usd: float | None = Field(default=None, ge=0)
    """Stop making uncached calls once this much has been spent in one run; None means no limit."""
    use_cache: bool = True
    """Serve identical requests from the response cache; False always calls (and refreshes the cache)."""
    prices: dict[str, ModelPrice] = Field(default_factory=default_prices)
    """USD per million tokens by model id (prefix match for dated ids); 'default' for the rest."""
    batch_poll_s: float = Field(default=5.0, gt=0)
    """Seconds between polls of a Message Batch."""
    rate_limits: dict[str, RateLimit] = Field(default_factory=dict)
    """Per provider name (anthropic, openai): requests and tokens per minute, shared by every client of
    that provider endpoint in the process (judge and systems under test alike)."""
    fallback: FallbackSettings | None = None
    """Asked when the primary keeps failing; its verdicts name its model and are counted apart."""

    _provider = field_validator("provider")(_known_provider)

    @field_validator("rate_limits")
    @classmethod
    def _limits_of_known_providers(cls, limits: dict[str, RateLimit]) -> dict[str, RateLimit]:
        for name in limits:
            _known_provider(name)
        return limits

    @model_validator(mode="after")
    def _batch_needs_anthropic(self) -> JudgeSettings:
        if self.mode == "batch" and self.provider != "anthropic":
            raise ValueError(f"mode batch needs provider anthropic (Message Batches), not {self.provider!r}")
        return self
    audit: AuditSettings | None = None
    """Consistency audit of the judge (evalkit.graders.audit): repeats and the pairwise order flip; None: none."""
    calibration: CalibrationSettings = Field(default_factory=CalibrationSettings)
    """The bar a field's agreement with people's labels must reach (evalkit.report.calibration)."""

    def with_env(self) -> JudgeSettings:
        """These settings with the model taken from EVALKIT_JUDGE_MODEL when it is set."""
        model = os.environ.get(MODEL_ENV, "").strip()
        return self.model_copy(update={"model": model}) if model else self


def api_key() -> str | None:
    """The first Anthropic key (ANTHROPIC_API_KEYS, else ANTHROPIC_API_KEY), or None when unset or empty."""

    keys = env_keys("anthropic")
    return keys[0] if keys else None


def missing_key(settings: JudgeSettings | None = None) -> str:
    """What to set for the settings' provider: 'ANTHROPIC_API_KEY is not set' (or OPENAI_..., ...)."""

    _many, one = env_names(settings.provider if settings is not None else "anthropic")
    return f"{one} is not set"


def configured(settings: JudgeSettings | None = None) -> bool:
    """True when a key of the settings' provider (Anthropic by default) is present in the environment, or the
    endpoint takes none (``api_key: none``)."""

    if settings is not None and settings.api_key == "none":
        return True
    return bool(env_keys(settings.provider if settings is not None else "anthropic"))
