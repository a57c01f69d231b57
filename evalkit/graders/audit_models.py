"""What a consistency audit of the judge found (site/<release>/judge_audit.json, and report.json's
``judge_audit``): the spread of repeated verdicts per field and the pairwise judge's order-flip rate."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalkit.graders.audit_settings import AuditSettings
from evalkit.models import Model

AUDIT_SCHEMA_VERSION = 1


class Share(Model):
    """k of n, with its Wilson 95% interval."""

    k: int = Field(ge=0)
    """Cases (or pairs) counted."""
    n: int = Field(ge=0)
    """Cases (or pairs) looked at."""
    value: float | None = None
    """k / n (None when n is 0)."""
    ci_low: float | None = None
    """Lower end of the Wilson 95% interval."""
    ci_high: float | None = None
    """Upper end of the Wilson 95% interval."""


class RepeatedVerdicts(Model):
    """The answers of one (system, case) to the same judge request asked ``repeats`` times."""

    system: str
    """System under test."""
    case: str
    """Case key (suite/case)."""
    values: dict[str, list[int | float | bool]] = Field(default_factory=dict)
    """Field -> its value in each usable answer, in repeat order."""
    failed: int = 0
    """Answers that stayed unusable after their repair (left out of ``values``)."""
    error: str | None = None
    """Why the audit of this (system, case) stopped (API failure, budget), if it did."""
    same_output: list[str] = Field(default_factory=list)
    """Other systems whose output on this case is byte-identical: the same output, audited and counted once."""


class FieldConsistency(Model):
    """How one verdict field varies over repeats of the same request."""

    field: str
    """Verdict field (a judge rubric field)."""
    kind: Literal["ordinal", "boolean", "continuous"]
    """The rubric field's kind: ordinal (integer scale), boolean (yes/no) or continuous (0-1)."""
    n: int = 0
    """Distinct outputs (byte-identical outputs of several systems on a case count once) with two or more usable
    answers."""
    mean_spread: float | None = None
    """Ordinal and continuous fields: mean of max - min over the repeats (None for booleans)."""
    max_spread: float | None = None
    """Ordinal and continuous fields: the largest max - min (None for booleans)."""
    changed: Share = Share(k=0, n=0)
    """Cases whose verdict changes across repeats (any difference)."""
    changed_2: Share | None = None
    """Ordinal fields: cases whose values span 2 points or more (None for the others)."""


class RepeatAudit(Model):
    """Repeats of the judge's own request."""

    repeats: int
    """Times each request was asked."""
    cases: list[RepeatedVerdicts] = Field(default_factory=list)
    """Every audited (system, case)."""
    fields: list[FieldConsistency] = Field(default_factory=list)
    """Per field, in the judge's field order."""


class PairJudgement(Model):
    """One pair of systems' outputs on one case, asked in both orders."""

    case: str
    """Case key (suite/case)."""
    a: str
    """The system shown first in the first order."""
    b: str
    """The system shown first in the second order."""
    ab: Literal["first", "second", "tie"] | None = None
    """Answer when a's output came first (None: unusable or not asked)."""
    ba: Literal["first", "second", "tie"] | None = None
    """Answer when b's output came first."""
    preferred_ab: str | None = None
    """System preferred in the first order ('tie' for a tie)."""
    preferred_ba: str | None = None
    """System preferred in the second order ('tie' for a tie)."""
    flipped: bool | None = None
    """The preferred system changed when the order was swapped (None when an answer is missing)."""
    reasons: list[str] = Field(default_factory=list)
    """The judge's reasons, first order then second."""
    error: str | None = None
    """Why an answer is missing, if one is."""


class PairwiseAudit(Model):
    """The pairwise judge's order flips."""

    pairs: list[PairJudgement] = Field(default_factory=list)
    """Every compared pair, by case then systems."""
    flip_rate: Share = Share(k=0, n=0)
    """Pairs whose preferred system changes when the order is swapped, of pairs with both answers."""
    first_preferred: Share = Share(k=0, n=0)
    """Answers (both orders counted) that preferred whichever output came first: position bias above 0.5."""
    identical_skipped: int = 0
    """Pairs left out because both systems gave the same output (nothing to prefer)."""
    duplicates_skipped: int = 0
    """Pairs of systems left out because their two outputs are byte for byte a pair of files already compared on
    that case (each distinct pair of files counts once)."""


class JudgeAudit(Model):
    """judge_audit.json: a consistency audit of the judge for one release."""

    schema_version: int = AUDIT_SCHEMA_VERSION
    """Version of this file's shape."""
    release: str
    """Release audited."""
    model: str
    """Judge model."""
    settings: AuditSettings
    """judge.audit as configured."""
    status: Literal["done", "not_configured", "no_cases"]
    """done; not_configured (no API key: nothing asked); no_cases (no judged case in the sample)."""
    sampled_cases: list[str] = Field(default_factory=list)
    """Case keys in the sample (seeded), in order."""
    repeats: RepeatAudit | None = None
    """Repeats of the judge's request (None when judge.audit.repeats is 0)."""
    pairwise: PairwiseAudit | None = None
    """Pairwise order flips (None unless judge.audit.pairwise)."""
    incomplete: bool = False
    """Some requests failed for infrastructure reasons (API failure, budget): the audit is asked again next run
    (answers already received come from the response cache)."""
    requests: int = 0
    """Distinct requests the audit asked (repairs included), whether answered from the response cache or sent."""
    calls_sent: int = 0
    """Of those, requests sent to the API by this run (answers from the response cache not counted)."""
    cost_usd: float = 0.0
    """What those requests cost."""
    batch_requests: int = 0
    """judge.mode batch: the audit's requests the grade stage's Message Batch sent for it (its own requests, not the
    grade stage's answers it reuses), in the last batch step (<work>/batches/grade.json)."""
    batch_cost_usd: float = 0.0
    """What those cost (batch price): the audit's spend in batch mode, beside cost_usd's one-by-one requests."""
    notes: list[str] = Field(default_factory=list)
    """Remarks (skipped pairs, failures)."""
