"""``judge.audit``: which cases a consistency audit of the judge asks about again, and how.

Kept apart from the judge's own settings in the grade stage's config slice (evalkit.stages.slices):
changing the audit reruns the audit only, never a verdict.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from evalkit.models import Model


class AuditSettings(Model):
    """A consistency audit of the judge on a sample of judged cases."""

    sample: int | float = 10
    """How many cases: an integer is a count (1 or more), a number below 1 a fraction of the cases (1.0 = all)."""
    seed: int = 0
    """Seed of the sample (the same seed, the same cases)."""
    repeats: int = Field(default=0, ge=0, le=20)
    """Ask the judge's request this many times per sampled (system, case) (0: no repeat audit; at least 2 to
    see a spread). The first ``judge.samples`` of them are the grade stage's own answers (already paid)."""
    pairwise: bool = False
    """Ask which of two systems' outputs is better, for every pair of systems on a sampled case, in both orders."""
    systems: list[str] = Field(default_factory=list)
    """Systems audited (empty: every system of the suite)."""

    @field_validator("sample")
    @classmethod
    def _sample(cls, value: int | float) -> int | float:
        if isinstance(value, bool):
            raise ValueError("must be a count (1, 2, ...) or a fraction (0 < f <= 1), not a boolean")
        if isinstance(value, int):
            if value < 1:
                raise ValueError(f"a count of cases must be 1 or more, got {value}")
            return value
        if not 0 < value <= 1:
            raise ValueError(f"a fraction of the cases must be above 0 and at most 1, got {value}")
        return value

    @field_validator("repeats")
    @classmethod
    def _repeats(cls, value: int) -> int:
        if value == 1:
            raise ValueError("1 repeat shows no spread: use 0 (no repeat audit) or 2 or more")
        return value

    @property
    def active(self) -> bool:
        """Something to audit: repeats or the pairwise question."""
        return self.repeats >= 2 or self.pairwise
