"""What every model-graded outcome records about the calls behind it."""

from __future__ import annotations

from pydantic import Field

from evalkit.llm.pricing import Usage
from evalkit.models import Model


class GraderSpend(Model):
    """Tokens, cost, unusable answers and cache keys of the judge calls behind one outcome."""

    usage: Usage = Field(default_factory=Usage)
    """Tokens of every response used (repairs included)."""
    cost_usd: float = 0.0
    """USD cost of producing those responses (the same whether served from the cache or not)."""
    raw_answers: list[str] = Field(default_factory=list)
    """The judge's unusable answers, kept on judge_error."""
    error: str | None = None
    """Why there is no verdict or score (validation error, API error, budget)."""
    request_keys: list[str] = Field(default_factory=list)
    """Cache keys of the responses used."""
    notices: list[str] = Field(default_factory=list)
    """Deprecation notices of the provider about the model behind these responses."""
    fallback: bool = False
    """True when the fallback model (judge.fallback) gave these answers because the primary kept failing:
    a different judge, whose scores are counted apart from the primary's."""
