"""Rubric grading for the ``generation`` suite: a model decides, per criterion, met or not met.

The case score is the weighted fraction of criteria met (0-1). The answer discipline is the
judge's: strict JSON, one repair, then ``judge_error`` with the raw answer kept. With
``samples: k`` each criterion is decided by majority and the score is the mean over samples.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the SDK takes a second to import: only when a client exists
    from evalkit.llm.client import ModelClient

from collections.abc import Callable

from pydantic import Field, ValidationError, field_validator, model_validator

from evalkit.artifacts import Sample
from evalkit.kinds.generation.models import GenerationInputs
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.graders.degenerate import assess, empty_answer
from evalkit.graders.judge_dispatch import client_for
from evalkit.kind_registry import main_file
from evalkit.llm.calls import BudgetExceeded, LLMRequest, system_blocks
from evalkit.llm.prompts import render, template_digest
from evalkit.llm.settings import JudgeSettings, missing_key
from evalkit.llm.structured import AnswerError, ask_samples, last_json_object, reasoning_before, validation_message
from evalkit.outcomes import CriterionResult, RubricOutcome
from evalkit.models import Model

SYSTEM_TEMPLATE = "rubric_judge_system.md.j2"
USER_TEMPLATE = "rubric_judge.md.j2"
ID_PATTERN = r"^[A-Za-z0-9_.\-]{1,64}$"


class Criterion(Model):
    """One evaluation criterion of a generation case."""

    id: str = Field(pattern=ID_PATTERN)
    """Stable id (letters, digits, '_', '.', '-')."""
    text: str
    """What the generated files must do, in plain words."""
    weight: float = Field(default=1.0, gt=0)
    """Relative weight in the case score."""


class GeneratedFile(Model):
    """One file the service under test produced."""

    path: str
    """Path relative to the output root."""
    content: str
    """File text."""


class RubricInput(Model):
    """What the rubric judge sees for one case."""

    item_id: str
    """Stable id of this (system, case)."""
    task: str | None = None
    """The request the service was given, when the case states it."""
    files: list[GeneratedFile]
    """The generated files."""
    criteria: list[Criterion] = Field(min_length=1)
    """The case's evaluation_criteria."""

    @field_validator("criteria")
    @classmethod
    def _unique_ids(cls, criteria: list[Criterion]) -> list[Criterion]:
        ids = [c.id for c in criteria]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate criterion ids: {duplicates}")
        return criteria


class CriterionVerdict(Model):
    """The judge's decision on one criterion."""

    id: str
    """Criterion id."""
    met: bool
    """Whether the files meet the criterion."""
    reason: str = ""
    """Why."""

    @field_validator("met", mode="before")
    @classmethod
    def _strict_bool(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, got {value!r}")
        return value


class RubricAnswer(Model):
    """One judge answer: a decision for every criterion."""

    criteria: list[CriterionVerdict]
    """One entry per criterion."""

    @model_validator(mode="before")
    @classmethod
    def _drop_unknown_keys(cls, value: object) -> object:
        if isinstance(value, dict):
            criteria = value.get("criteria")
            if isinstance(criteria, list):
                criteria = [
                    {k: v for k, v in entry.items() if k in CriterionVerdict.model_fields}
                    if isinstance(entry, dict) else entry
                    for entry in criteria
                ]
            return {"criteria": criteria} if "criteria" in value else value
        return value


def prompt_version() -> str:
    """Digest of the rubric templates: part of the grade stage's config slice."""
    return template_digest(SYSTEM_TEMPLATE, USER_TEMPLATE)


def parser_for(criteria: list[Criterion]) -> Callable[[str], tuple[RubricAnswer, str]]:
    """A parse function that also checks the answer covers exactly these criterion ids."""
    expected = [c.id for c in criteria]

    def parse(text: str) -> tuple[RubricAnswer, str]:
        obj, start = last_json_object(text)
        try:
            answer = RubricAnswer.model_validate(obj)
        except ValidationError as exc:
            raise AnswerError(validation_message(exc)) from None
        got = [v.id for v in answer.criteria]
        problems = []
        missing = [i for i in expected if i not in got]
        unknown = sorted({i for i in got if i not in expected})
        repeated = sorted({i for i in got if got.count(i) > 1})
        if missing:
            problems.append(f"missing criteria: {missing}")
        if unknown:
            problems.append(f"unknown criterion ids: {unknown}")
        if repeated:
            problems.append(f"criteria answered more than once: {repeated}")
        if problems:
            raise AnswerError("; ".join(problems))
        return answer, reasoning_before(text, start)

    return parse


def rubric_requests(item: RubricInput, settings: JudgeSettings) -> list[LLMRequest]:
    """The first-round requests for ``item``, one per sample."""
    settings = settings.with_env()
    user = render(
        USER_TEMPLATE,
        task=item.task,
        files=[(f.path, f.content) for f in item.files],
        criteria=item.criteria,
    )
    return [
        LLMRequest(
            model=settings.model,
            system=system_blocks(render(SYSTEM_TEMPLATE)),
            messages=[{"role": "user", "content": user}],
            max_tokens=settings.max_tokens,
            sample_index=index,
            item_id=item.item_id,
        )
        for index in range(settings.samples)
    ]


def weighted_score(criteria: list[Criterion], met: dict[str, bool]) -> float:
    """Weighted fraction of ``criteria`` met."""
    total = sum(c.weight for c in criteria)
    return sum(c.weight for c in criteria if met[c.id]) / total


def grade_rubric(item: RubricInput, client: ModelClient | None, settings: JudgeSettings) -> RubricOutcome:
    """Grade one generation case against its criteria."""
    settings = settings.with_env()
    base = RubricOutcome(status="judged", model=settings.model)
    if client is None:
        return base.model_copy(update={"status": "not_configured", "error": missing_key(settings)})
    parse = parser_for(item.criteria)
    got = ask_samples(client, rubric_requests(item, settings), parse)
    answers: list[RubricAnswer] = got.values
    if got.stopped is not None:
        status = "not_judged_budget" if isinstance(got.stopped, BudgetExceeded) else "infra_error"
        return base.model_copy(update={"status": status, "error": str(got.stopped), "usage": got.usage,
                                       "cost_usd": got.cost_usd, "request_keys": got.request_keys,
                                       "notices": got.notices})
    spent = {"usage": got.usage, "cost_usd": got.cost_usd, "request_keys": got.request_keys, "reasoning": got.reasoning,
             "notices": got.notices, **got.named()}
    if got.errors:
        return base.model_copy(update={"status": "judge_error", "error": "; ".join(got.errors),
                                       "raw_answers": got.raw, **spent})

    decisions = [{v.id: v for v in answer.criteria} for answer in answers]
    sample_scores = [weighted_score(item.criteria, {i: v.met for i, v in d.items()}) for d in decisions]
    results = []
    for criterion in item.criteria:
        votes = [d[criterion.id].met for d in decisions]
        results.append(CriterionResult(
            id=criterion.id, weight=criterion.weight, met=sum(votes) * 2 > len(votes),
            met_fraction=sum(votes) / len(votes), reason=decisions[0][criterion.id].reason,
        ))
    return base.model_copy(update={
        "score": sum(sample_scores) / len(sample_scores),
        "sample_scores": sample_scores,
        "results": results,
        "unstable": any(0 < r.met_fraction < 1 for r in results),
        **spent,
    })


def rubric_input(case: Case, sample: Sample) -> RubricInput:
    criteria = [Criterion(id=c.id or f"c{i}", text=c.text, weight=c.weight) for i, c in enumerate(case.criteria, start=1)]
    files = [GeneratedFile(path=p, content=sample.files[p]) for p in sorted(sample.files)]
    if sample.text:
        files.append(GeneratedFile(path="(answer text)", content=sample.text))
    return RubricInput(item_id=case.key, task=case.inputs_as(GenerationInputs).instructions, files=files, criteria=criteria)


def rubric_case(cfg: Config, case: Case, sample: Sample) -> RubricOutcome | None:
    """The rubric outcome of a generation case, or None when it has no criteria."""
    if not case.criteria:
        return None

    decided = rubric_without_model(case, sample)
    if decided is not None:
        return decided
    return grade_rubric(rubric_input(case, sample), client_for(cfg), cfg.judge)


def rubric_without_model(case: Case, sample: Sample) -> RubricOutcome | None:
    """An empty or incomplete main file meets no criterion: score 0, decided without a model (no call)."""

    mf = main_file(case)
    if mf is None:  # files named by the system (e.g. LLMService's): only an empty answer is decided here

        if not empty_answer(sample, None):
            return None
        reason = "decided without a model: empty answer (no output file and no text)"
    else:
        found = assess(sample.files.get(mf), None, case.language)
        if not found.decided:
            return None
        reason = f"decided without a model: {found.reason()}"
    results = [CriterionResult(id=c.id or f"c{i}", weight=c.weight, met=False, met_fraction=0.0,
                               reason=reason) for i, c in enumerate(case.criteria, start=1)]
    return RubricOutcome(status="parser", score=0.0, results=results, error=reason)
