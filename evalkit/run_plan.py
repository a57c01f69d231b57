"""The model calls of the next run over the whole project (``evalkit estimate`` prices them, ``judge.mode: batch``
sends the grade ones ahead), and the run's case selection; the per-answer planning is evalkit.llm.plan's."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from evalkit.artifacts import Sample
from evalkit.fsutil import digest
from evalkit.graders.audit import audit_plan
from evalkit.llm.cache import ResponseCache
from evalkit.llm.plan import Plan, PlannedCall, Stage, grade_requests, stand_in
from evalkit.project import Loaded, participating
from evalkit.selection import selected, selection
from evalkit.stages.generate import generate_key
from evalkit.stages.grade_retry import grade_current
from evalkit.stages.slices import grade_slice
from evalkit.store import ContentStore
from evalkit.systems.base import RunContext, is_free, planner, run_system


def plan_run(loaded: Loaded, *, stages: Iterable[Stage] = ("generate", "grade"),
             selected: Callable[[str], bool] | None = None) -> Plan:
    """The calls of the next run over every participating (system, case) (``selected`` ones only)."""

    cfg = loaded.config
    wanted = set(stages)
    judge = cfg.judge.with_env()
    cache = ResponseCache(cfg.work_path / "cache")
    generated = ContentStore(cfg.work_path / "cache", "generate")
    ctx = RunContext(root=Path(cfg.root), work=cfg.work_path, judge=cfg.judge)

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
            first = stand_in(system, case)
        elif first.status in ("error", "timeout", "infra_error"):
            continue  # the grade stage records the failure without a judge
        graded = grade_requests(cfg, case, first, system.name, cache, exact)
        plan.unknown_outputs += 1 if graded and not exact else 0
        for asker, request, is_exact in graded:
            plan.calls.append(PlannedCall("grade", asker, system.name, case.suite, request, judge, is_exact))
    if "grade" in wanted:  # judge.audit: repeats and pairwise questions, after the grade stage's own

        plan.calls.extend(PlannedCall("grade", c.asker, c.system, c.suite, c.request, judge, c.exact)
                          for c in audit_plan(loaded))
    return plan


def key_selection() -> Callable[[str], bool] | None:
    """The run's case selection ($EVALKIT_SELECT), as a predicate on case keys."""

    globs = selection()
    return (lambda key: selected(key, globs)) if globs else None
