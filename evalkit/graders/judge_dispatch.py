"""Which judge (if any) grades a case, and the one model client a run shares.

The client is built once per process from the config's judge settings (model overridable by
EVALKIT_JUDGE_MODEL, key from ANTHROPIC_API_KEY only) with one Budget for the whole run, so
`judge.budget_usd` caps this run's spend across every grade task.
"""

from __future__ import annotations

import threading

from evalkit.artifacts import ExecutionArtifact, Sample
from evalkit.casemodels import LegacyFileInputs
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.contracts import JudgeContext, JudgeResult, judge_with
from evalkit.outcomes import JudgeOutcome
from evalkit.graders.migration_judge import Incident, MigrationJudgeInput, judge_migration
from evalkit.graders.judge_changes import judge_changes
from evalkit.graders.rubric_config import rubric_for
from evalkit.kind_registry import kind
from evalkit.llm.client import Budget, ModelClient, make_client
from evalkit.llm.settings import configured
from evalkit.solved_store import solved_example_text

_lock = threading.Lock()
_clients: dict[str, ModelClient | None] = {}

NOT_CONFIGURED = JudgeOutcome(status="not_configured", error="judge not configured: ANTHROPIC_API_KEY is not set")
"""The outcome of a model-graded case without a judge key (copy it: ``NOT_CONFIGURED.model_copy()``)."""


def client_for(cfg: Config) -> ModelClient | None:
    """The run's shared model client, or None when no API key is set."""

    if not configured(cfg.judge):  # a key of judge.provider (ANTHROPIC_API_KEY[S], OPENAI_API_KEY[S])
        return None

    settings = cfg.judge.with_env()
    key = f"{cfg.path}:{settings.model_dump_json()}"
    with _lock:
        if key not in _clients:
            _clients[key] = make_client(settings, cfg.work_path / "cache", budget=Budget(settings.budget_usd))
        return _clients[key]


def migration_input(case: Case, sample: Sample, main_file: str | None) -> MigrationJudgeInput:
    inputs = case.inputs_as(LegacyFileInputs)  # a migration case's MigrationInputs
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
