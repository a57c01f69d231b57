"""Which judge (if any) grades a case, and the one model client a run shares.

The client is built once per process from the config's judge settings (model overridable by
EVALKIT_JUDGE_MODEL, key from ANTHROPIC_API_KEY only) with one Budget for the whole run, so
`judge.budget_usd` caps this run's spend across every grade task.
"""

from __future__ import annotations

import threading
from typing import Any

from evalkit.artifacts import ExecutionArtifact, Sample
from evalkit.casemodels import GenerationInputs, MigrationInputs
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.contracts import JudgeContext, JudgeResult, judge_with
from evalkit.outcomes import JudgeOutcome, RubricOutcome
from evalkit.graders.degenerate import assess, empty_answer
from evalkit.graders.migration_judge import Incident, MigrationJudgeInput, judge_migration
from evalkit.graders.judge_changes import judge_changes
from evalkit.graders.rubric_config import rubric_for
from evalkit.kinds.generation.judge import Criterion, CriterionResult, GeneratedFile, RubricInput, grade_rubric
from evalkit.kind_registry import kind, main_file
from evalkit.llm.client import Budget, make_client
from evalkit.llm.settings import configured
from evalkit.solved_store import solved_example_text

_lock = threading.Lock()
_clients: dict[str, Any] = {}

NOT_CONFIGURED = JudgeOutcome(status="not_configured", error="judge not configured: ANTHROPIC_API_KEY is not set")
"""The outcome of a model-graded case without a judge key (copy it: ``NOT_CONFIGURED.model_copy()``)."""


def client_for(cfg: Config) -> Any | None:
    """The run's shared model client, or None when no API key is set."""

    if not configured(cfg.judge):  # a key of judge.provider (ANTHROPIC_API_KEY[S], OPENAI_API_KEY[S])
        return None

    settings = cfg.judge.with_env()
    key = f"{cfg.path}:{settings.model_dump_json()}"
    with _lock:
        if key not in _clients:
            _clients[key] = make_client(settings, cfg.work_path / "cache", budget=Budget(settings.budget_usd))
        return _clients[key]


def migration_input(case: Case, sample: Sample, main_file: str | None) -> Any:
    inputs = case.inputs_as(MigrationInputs)
    solved = solved_example_text(case)  # the case's own example, or the one looked up in its suite's store
    return MigrationJudgeInput(
        item_id=f"{case.key}",
        source_technology=inputs.source_technology, target_technology=inputs.target_technology,
        language=case.language, legacy_code=case.read("inputs.legacy_file") or "",
        incidents=[Incident(rule_id=i.rule_id, description=i.description, message=i.message, line=i.line)
                   for i in inputs.incidents],
        solved_example=solved, generated_code=sample.files.get(main_file or "", ""))


def rubric_judged(case: Case) -> bool:
    """The rubric judge grades the case's outputs: a migration case, or a patch or e2e case whose suite says `judge:`."""

    return kind(case.kind).judging.always_judged or bool(case.judged_files)


def judge_case(cfg: Config, case: Case, sample: Sample, main_file: str | None,
               execution: ExecutionArtifact | None = None) -> JudgeResult:
    """The judge outcome for a case (a rubric outcome for a generation case), or None for suites without a
    model-graded part."""
    if case.judged_files:  # a patch or e2e suite with `judge:`: the files the answer changed (evalkit.graders.judge_changes)

        return judge_changes(cfg, case, sample, execution, client_for(cfg), rubric_for(cfg, case))

    ctx = JudgeContext(config=cfg, case=case, sample=sample, main_file=main_file, execution=execution)
    return judge_with(kind(case.kind).judge, ctx)  # migration: CodeJudge; generation: its criteria


def migration_case(cfg: Config, case: Case, sample: Sample, main_file: str | None) -> JudgeOutcome:
    """The rubric judge's outcome of a migration answer."""

    return judge_migration(migration_input(case, sample, main_file), client_for(cfg), cfg.judge,
                           rubric_for(cfg, case))


def unconfigured(cfg: Config) -> JudgeOutcome | None:
    """The outcome of a model-graded case without a judge key, None with one."""
    return NOT_CONFIGURED.model_copy() if client_for(cfg) is None else None


def rubric_input(case: Case, sample: Sample) -> Any:
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
