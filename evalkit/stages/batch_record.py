"""``<work>/batches/grade.json``: what the batch step of a run (evalkit.stages.grade_batch) sent, per batch and
per asker. Its own module so the judge audit reads its share without importing the batch step (which plans the
run, and the run's plan includes the audit)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from evalkit.models import Model


class BatchRound(Model):
    """One Message Batch of a run."""

    requests: int
    """Requests sent (or resumed) in this batch."""
    answered: int
    """Requests the batch answered."""
    failed: dict[str, str] = Field(default_factory=dict)
    """Request cache key -> why the batch did not answer it (the grade task sends it alone)."""


class AskerSpend(Model):
    """What the batches sent for one asker (the migration judge, the judge audit, the pairwise judge ...)."""

    requests: int = 0
    """Requests sent in a batch (each distinct request once)."""
    answered: int = 0
    """Of those, answered by the batch."""
    cost_usd: float = 0.0
    """What the answered ones cost (batch price)."""


class GradeBatchRecord(Model):
    """``<work>/batches/grade.json``: what the batch step of the last run sent."""

    rounds: list[BatchRound] = Field(default_factory=list)
    """Batches, in order (empty: every request was already answered)."""
    by_asker: dict[str, AskerSpend] = Field(default_factory=dict)
    """Asker -> what the batches sent for it (a request two askers share counts for the first planned)."""


def record_path(work: Path) -> Path:
    return Path(work) / "batches" / "grade.json"


__all__ = ["AskerSpend", "BatchRound", "GradeBatchRecord", "record_path"]
