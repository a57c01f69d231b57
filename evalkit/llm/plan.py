"""Every model call the next run would make, found without making one.

`evalkit estimate` counts and prices them; ``judge.mode: batch`` sends the grade stage's as Message
Batches (evalkit.stages.grade_batch). The plan walks each (system, case) the way the run does:

- **generate**: a sample already in the generate cache costs nothing; an ``anthropic`` system's
  missing sample is one request (the adapter's own, ``anthropic_adapter.request_for``); ``gold``,
  ``empty`` and ``recorded`` samples are computed here (free, no model); a ``command`` system's
  answer is unknown until it runs.
- **grade**, on the first sample as the grade stage does: the migration judge (``judge.samples``
  requests, none when the parser pre-check or the degenerate-output check decides the file), the
  rubric of a generation case with criteria (``judge.samples`` requests; none for an empty or
  incomplete main file, decided without a model), and ragas' metrics of a
  rag case, found by running ragas itself against the response cache with a planning LLM
  (``PlanningRagasLLM``): each prompt ragas sends is looked up; a cached answer is used, so the
  prompts that depend on it (faithfulness' verification after its statements) are exact too; a
  missing one is counted and answered with a placeholder so that ragas goes on to its next prompt.
  In ragas 0.4.3 that is, per answer: faithfulness 2 prompts (statements, then their verification),
  context relevance 2 (two judges; the same for every system, since it reads only the question and
  the contexts), answer relevancy 3 (strictness 3: the same prompt, sample indexes 0-2); no call
  for an empty answer or no retrieved context.

A (system, case) whose grades.json is current (same inputs and grade slice as recorded, no retry
marker) asks nothing: its grade task will not run, so a judge_error there is not asked again by a
plain run. Where the answer graded is not known yet (a ``command`` or ``anthropic`` system not generated yet)
a stand-in answer unique to the system is planned: the same number of requests, marked inexact
(``exact=False``); identical answers of two systems would share a cached verdict, so the run can
make fewer calls than such an estimate. Repair requests (after an unusable answer) cannot be
known in advance and are not counted.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from evalkit.artifacts import Sample
from evalkit.llm.cache import ResponseCache
from evalkit.llm.calls import LLMRequest
from evalkit.llm.settings import JudgeSettings
from evalkit.fsutil import digest
from evalkit.graders.judge_changes import planned_requests
from evalkit.kind_registry import kind
from evalkit.llm.providers import cache_scope
from evalkit.llm.structured import AnswerError, parse_model, repair_request
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.cases import Case
    from evalkit.config import Config, System
    from evalkit.metrics import ragas_metrics as ragas_metrics_code
    from evalkit.metrics.ragas_metrics import EvalkitRagasLLM
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    ragas_metrics_code = later("evalkit.metrics.ragas_metrics")

Stage = Literal["generate", "grade"]
PLACEHOLDER = "(answer not known yet"
"""Starts every placeholder value the planning ragas LLM hands back to ragas."""


@dataclass(frozen=True)
class PlannedCall:
    """One request the next run would send (unless its answer is cached)."""

    stage: Stage
    """generate (an anthropic system under test) or grade (a judge)."""
    asker: str
    """What sends it: 'anthropic system', 'migration judge', 'rubric', 'ragas', 'judge audit', 'pairwise judge'."""
    system: str
    """System under test the call is about."""
    suite: str
    """Suite of the case."""
    request: LLMRequest
    """The request as it would be sent (a stand-in where ``exact`` is False)."""
    settings: JudgeSettings
    """Settings of the client that sends it (judge or the system's)."""
    exact: bool = True
    """False when the request stands in for one that depends on an answer not known yet."""


@dataclass
class Plan:
    """Every planned call of a run."""

    calls: list[PlannedCall] = field(default_factory=list)
    """In run order: generate before grade per (system, case)."""
    unknown_outputs: int = 0
    """(system, case) pairs whose graded answer is not known yet (stand-ins planned)."""


def _lookup(cache: ResponseCache, settings: JudgeSettings, request: LLMRequest) -> Any:
    return cache.get(cache.key(request, cache_scope(settings))) if settings.use_cache else None


def _placeholder(model: type[BaseModel], marker: str) -> BaseModel:
    """A value of ragas' ``model`` that lets the metric go on to its next prompt (never sent anywhere)."""
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        ann = info.annotation
        origin, args = typing.get_origin(ann), typing.get_args(ann)
        if ann is str:
            values[name] = marker
        elif ann in (int, float):
            values[name] = 0
        elif ann is bool:
            values[name] = False
        elif origin in (list, typing.List):
            values[name] = [marker] if args and args[0] is str else []
        else:
            values[name] = None
    return model.model_construct(**values)


def _never_asked(prompt: str) -> tuple[str, dict[str, float]]:
    raise AssertionError("a planning ragas LLM answers from the response cache: it never asks a model")


def planning_ragas_llm(cache: ResponseCache, settings: JudgeSettings, item_id: str,
                       planned: list[tuple[LLMRequest, bool]]) -> EvalkitRagasLLM:
    """A ragas LLM that records the requests ragas would send, with whether each is exact, in ``planned``
    instead of sending them."""

    class PlanningRagasLLM(ragas_metrics_code.EvalkitRagasLLM):
        """Answers from the response cache; a missing answer is recorded and replaced by a placeholder."""

        def generate(self, prompt: str, response_model: type[Any]) -> Any:
            full = prompt + ragas_metrics_code.ANSWER_SUFFIX
            index = self.next_index(full)
            request = self.request_for(full, index, response_model)
            exact = PLACEHOLDER not in full  # else it depends on an answer not known yet
            hit = _lookup(cache, settings, request)
            if hit is not None:
                try:
                    return parse_model(response_model, hit.text)[0]
                except AnswerError as exc:  # a repair followed: it is the answer ragas got
                    request = repair_request(request, hit.text, str(exc))
                    hit = _lookup(cache, settings, request)
                    if hit is not None:
                        try:
                            return parse_model(response_model, hit.text)[0]
                        except AnswerError:
                            pass
            planned.append((request, exact))
            return _placeholder(response_model, f"{PLACEHOLDER} {digest([full, index])[:12]})")

    return PlanningRagasLLM(_never_asked, settings=settings.with_env(), item_id=item_id)


def grade_requests(cfg: Config, case: Case, sample: Sample, system_name: str, cache: ResponseCache,
                   exact: bool) -> list[tuple[str, LLMRequest, bool]]:
    """(asker, request, exact) of the grade stage for one answer."""
    settings = cfg.judge.with_env()
    if case.judged_files:  # a patch or e2e suite with `judge:` (evalkit.graders.judge_changes)
        return [("changes judge", r, ok) for r, ok in planned_requests(cfg, case, sample, exact, system_name)]
    return kind(case.kind).grade_requests(cfg, case, sample, cache, exact, settings)  # judge, rubric, ragas


def stand_in(system: System, case: Case) -> Sample:
    """An answer unique to ``system`` where the real one is not known yet (same size as the legacy file)."""

    note = f"(answer of {system.name} to {case.key}: not generated yet)"
    return kind(case.kind).stand_in(case, note)  # e.g. migration: as large as the legacy file


__all__ = ["Plan", "PlannedCall", "grade_requests", "planning_ragas_llm", "stand_in"]
