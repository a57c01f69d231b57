"""``judge.calibration``: the bar a judge field's agreement with people must reach.

Kept out of the grade stage's config slice (evalkit.stages.slices): changing it re-summarizes and
re-renders, never re-judges.
"""

from __future__ import annotations

from pydantic import Field

from evalkit.models import Model


class CalibrationSettings(Model):
    """How the report judges a judge field's agreement with people's labels."""

    min_kappa: float = Field(default=0.6, ge=-1, le=1)
    """A field whose kappa against people is below this is marked uncalibrated wherever it appears and is
    never a suite's headline metric (quadratic-weighted kappa for ordinal fields, Cohen's for booleans)."""
    require_labels: bool = False
    """Also mark uncalibrated a field nobody has labelled (or whose kappa is undefined); by default such a
    field is 'unmeasured': said on the release page, not marked."""
    high_from_top: int = Field(default=2, ge=1)
    """Against tests, an ordinal verdict counts as a pass when it is among the scale's top this many points
    (2 on a 1-5 scale: rated 4 or 5)."""
