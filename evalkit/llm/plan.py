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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from evalkit.artifacts import Sample
from evalkit.llm.cache import ResponseCache
from evalkit.llm.calls import LLMRequest
from evalkit.llm.settings import JudgeSettings

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
    from evalkit.llm.providers import cache_scope

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


def planning_ragas_llm(cache: ResponseCache, settings: JudgeSettings, item_id: str) -> Any:
    """A ragas LLM that records the requests ragas would send instead of sending them."""
    from evalkit.llm.structured import AnswerError, parse_model, repair_request
    from evalkit.metrics.ragas_metrics import ANSWER_SUFFIX, EvalkitRagasLLM

    class PlanningRagasLLM(EvalkitRagasLLM):
        """Answers from the response cache; a missing answer is recorded and replaced by a placeholder."""

        planned: list[tuple[LLMRequest, bool]]

        def generate(self, prompt: str, response_model: type[Any]) -> Any:
            from evalkit.fsutil import digest

            full = prompt + ANSWER_SUFFIX
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
            self.planned.append((request, exact))
            return _placeholder(response_model, f"{PLACEHOLDER} {digest([full, index])[:12]})")

    llm = PlanningRagasLLM(client=cache, settings=settings.with_env(), item_id=item_id)
    llm.planned = []
    return llm


def _ragas_plan(cache: ResponseCache, settings: JudgeSettings, case: Any, answer: str) -> list[tuple[LLMRequest, bool]]:
    from evalkit.metrics.ragas_metrics import judge_rag

    from evalkit.casemodels import RagInputs

    inputs = case.inputs_as(RagInputs)
    llm = planning_ragas_llm(cache, settings, f"ragas:{case.key}")
    judge_rag(llm, inputs.question, list(inputs.contexts), answer)
    return llm.planned


def decided_without_model(item: Any) -> bool:
    """The migration judge decides ``item`` for free: the file does not parse, or it is degenerate."""
    from evalkit.graders import judge

    if judge._precheck(item)[0] == "failed":
        return True
    decide = getattr(judge, "decided_without_model", None)
    return bool(decide(item)) if decide is not None else False


def grade_requests(cfg: Any, case: Any, sample: Sample, system_name: str, cache: ResponseCache,
                   exact: bool) -> list[tuple[str, LLMRequest, bool]]:
    """(asker, request, exact) of the grade stage for one answer."""
    settings = cfg.judge.with_env()
    if case.judged_files:  # a patch or e2e suite with `judge:` (evalkit.graders.judge_changes)
        from evalkit.graders.judge_changes import planned_requests

        return [("changes judge", r, ok) for r, ok in planned_requests(cfg, case, sample, exact, system_name)]
    from evalkit.kinds import kind

    return kind(case.kind).grade_requests(cfg, case, sample, cache, exact, settings)  # judge, rubric, ragas


def _stand_in(system: Any, case: Any) -> Sample:
    """An answer unique to ``system`` where the real one is not known yet (same size as the legacy file)."""
    from evalkit.kinds import kind

    note = f"(answer of {system.name} to {case.key}: not generated yet)"
    return kind(case.kind).stand_in(case, note)  # e.g. migration: as large as the legacy file


def plan_run(loaded: Any, *, stages: Iterable[Stage] = ("generate", "grade"),
             selected: Callable[[str], bool] | None = None) -> Plan:
    """The calls of the next run over every participating (system, case) (``selected`` ones only)."""
    from evalkit.project import participating
    from evalkit.stages.generate import generate_key
    from evalkit.store import ContentStore
    from evalkit.systems.base import RunContext, is_free, planner, run_system

    cfg = loaded.config
    wanted = set(stages)
    judge = cfg.judge.with_env()
    cache = ResponseCache(cfg.work_path / "cache")
    generated = ContentStore(cfg.work_path / "cache", "generate")
    ctx = RunContext(root=Path(cfg.root), work=cfg.work_path, judge=cfg.judge)
    from evalkit.fsutil import digest
    from evalkit.stages.grade_retry import grade_current
    from evalkit.stages.slices import grade_slice

    grade_config = digest(grade_slice(cfg))
    plan = Plan()
    for system, case in participating(cfg, loaded.project):
        if not case.ok or (selected is not None and not selected(case.key)):
            continue
        first: Sample | None = None
        for index in range(system.samples):
            hit = generated.get(generated.key(generate_key(cfg, system, case, index)))
            sample = Sample.model_validate(hit) if hit is not None else None
            if sample is None and is_free(system.adapter):  # no model: computed instead of guessed
                sample = run_system(system, case, index, ctx)
            if sample is None and "generate" in wanted and (plan_call := planner(system.adapter)) is not None:
                request, settings = plan_call(system, case, index, ctx, judge)
                plan.calls.append(PlannedCall("generate", f"{system.adapter} system", system.name, case.suite,
                                              request, settings.model_copy(update={"use_cache": True})))
            if index == 0:
                first = sample
        if "grade" not in wanted:
            continue
        if first is not None and grade_current(cfg, system, case, grade_config):
            continue  # its grade task will not run: nothing asked (a judge_error stays until retried)
        exact = first is not None
        if first is None:
            first = _stand_in(system, case)
        elif first.status in ("error", "timeout", "infra_error"):
            continue  # the grade stage records the failure without a judge
        graded = grade_requests(cfg, case, first, system.name, cache, exact)
        plan.unknown_outputs += 1 if graded and not exact else 0
        for asker, request, is_exact in graded:
            plan.calls.append(PlannedCall("grade", asker, system.name, case.suite, request, judge, is_exact))
    if "grade" in wanted:  # judge.audit: repeats and pairwise questions, after the grade stage's own
        from evalkit.graders.audit import audit_plan

        plan.calls.extend(PlannedCall("grade", c.asker, c.system, c.suite, c.request, judge, c.exact)
                          for c in audit_plan(loaded))
    return plan


def key_selection() -> Callable[[str], bool] | None:
    """The run's case selection ($EVALKIT_SELECT), as a predicate on case keys."""
    from evalkit.tasks import selected, selection

    globs = selection()
    return (lambda key: selected(key, globs)) if globs else None


__all__ = ["Plan", "PlannedCall", "decided_without_model", "grade_requests", "key_selection", "plan_run",
           "planning_ragas_llm"]
