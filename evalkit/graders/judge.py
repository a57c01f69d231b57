"""The migration judge: a model reviews one migrated file the way Konveyor Kai's evaluation does.

The reviewer sees the source and target technology, the legacy file, the incidents, the solved
example if any, and the generated file; it reasons in four steps (semantic equivalence, rule
adherence, faithfulness to context, code quality with minimal changes) and ends with a JSON
verdict. Before any call, a free tree-sitter pre-check fails files that do not parse. With
``samples: k`` the judge is asked k times and the spread is reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from evalkit.llm.calls import BudgetExceeded, LLMError, LLMRequest, system_blocks
from evalkit.llm.prompts import render, template_digest
from evalkit.llm.settings import JudgeSettings
from evalkit.llm.structured import ask_samples, parse_model
from evalkit.graders.spend import GraderSpend
from evalkit.models import Model
if TYPE_CHECKING:  # the SDK takes a second to import: only when a client exists
    from evalkit.llm.client import ModelClient
from evalkit.treesitter import SyntaxIssue, UnsupportedLanguage, syntax_errors

SYSTEM_TEMPLATE = "migration_judge_system.md.j2"
USER_TEMPLATE = "migration_judge.md.j2"
SCORE_NAMES = ("semantic_equivalence_score", "rule_adherence_score", "faithfulness_score", "code_quality_score")
UNSTABLE_SPREAD = 2
"""A score whose samples span this many points or more makes the outcome unstable."""


class Incident(Model):
    """One static-analysis finding in the legacy file."""

    rule_id: str
    """Id of the rule that fired."""
    description: str = ""
    """What the rule is about."""
    message: str = ""
    """The incident's own message."""
    line: int | None = None
    """1-based line of the incident in the legacy file."""


class MigrationJudgeInput(Model):
    """Everything the judge sees about one migrated file."""

    item_id: str
    """Stable id of this (system, case, file): keys the cache's miss explanations."""
    source_technology: str
    """What the code is migrated from (e.g. 'Java EE')."""
    target_technology: str
    """What the code is migrated to (e.g. 'Quarkus')."""
    language: str
    """Programming language of the files (for the parser pre-check)."""
    legacy_code: str
    """The file before migration."""
    incidents: list[Incident] = Field(default_factory=list)
    """Findings the migration was meant to resolve."""
    solved_example: str | None = None
    """How a similar incident was solved, when the case gives one."""
    generated_code: str
    """The system under test's migrated file."""


class MigrationVerdict(Model):
    """One judge answer, strictly validated."""

    semantic_equivalence_score: int = Field(ge=1, le=5)
    """Same behaviour as the legacy file apart from what the migration requires (1-5)."""
    rule_adherence_score: int = Field(ge=1, le=5)
    """Incidents resolved the way the rules ask (1-5)."""
    faithfulness_score: int = Field(ge=1, le=5)
    """Change supported by the context; nothing invented (1-5)."""
    code_quality_score: int = Field(ge=1, le=5)
    """Idiomatic, correct target code changed no more than needed (1-5)."""
    is_compilable: bool
    """The judge expects the file to compile (or load)."""
    detailed_notes: str = ""
    """The judge's key reasons."""

    @field_validator(*SCORE_NAMES, mode="before")
    @classmethod
    def _integer_score(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("must be an integer from 1 to 5, not a boolean")
        if isinstance(value, str):
            text = value.strip()
            if not text.isdigit():
                raise ValueError(f"must be an integer from 1 to 5, got {value!r}")
            return int(text)
        return value

    @field_validator("is_compilable", mode="before")
    @classmethod
    def _strict_bool(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, got {value!r}")
        return value


def parse_verdict(text: str) -> tuple[MigrationVerdict, str]:
    """The verdict in ``text`` (its last JSON object; unknown keys ignored) and the reasoning before it."""
    return parse_model(MigrationVerdict, text)


Status = Literal["judged", "parser", "judge_error", "not_configured", "not_judged_budget", "infra_error"]


class JudgeOutcome(GraderSpend):
    """The judge's result for one migrated file (the grade stage records this)."""

    status: Status
    """judged; parser (failed the syntax pre-check, no call); judge_error (unusable answer after one
    repair); not_configured (no API key); not_judged_budget; infra_error (API failure)."""
    source: Literal["judge", "parser"] | None = None
    """Who produced the scores."""
    model: str | None = None
    """Judge model id."""
    samples: int = 0
    """Verdicts asked for."""
    verdicts: list[MigrationVerdict] = Field(default_factory=list)
    """Valid verdicts, one per sample."""
    scores: dict[str, float] | None = None
    """Mean of each score over the verdicts (all 0 when the parser failed the file)."""
    spread: dict[str, int] = Field(default_factory=dict)
    """Max minus min of each score over the verdicts."""
    is_compilable: bool | None = None
    """Majority of the verdicts (a tie counts as false); false when the parser failed the file."""
    unstable: bool = False
    """A score spans two points or more across samples, or the samples disagree on is_compilable."""
    reasoning: list[str] = Field(default_factory=list)
    """The judge's reasoning before each verdict."""
    syntax_issues: list[SyntaxIssue] = Field(default_factory=list)
    """Parser findings of the pre-check."""
    precheck: Literal["passed", "failed", "skipped"] = "skipped"
    """Tree-sitter pre-check result; skipped for languages without a grammar."""
    decided: Literal["syntax", "empty", "unchanged", "incomplete"] | None = None
    """Why the verdict was decided without a model (status parser): the file does not parse, is empty,
    is the legacy file unchanged, or elides code (evalkit.graders.degenerate); None otherwise."""


def prompt_version() -> str:
    """Digest of the judge's templates: part of the grade stage's config slice."""
    return template_digest(SYSTEM_TEMPLATE, USER_TEMPLATE)


def migration_requests(item: MigrationJudgeInput, settings: JudgeSettings) -> list[LLMRequest]:
    """The first-round requests for ``item``, one per sample (repairs are not known in advance)."""
    settings = settings.with_env()
    system = system_blocks(render(SYSTEM_TEMPLATE))
    user = render(
        USER_TEMPLATE,
        source_technology=item.source_technology,
        target_technology=item.target_technology,
        language=item.language,
        legacy_code=item.legacy_code,
        incidents=item.incidents,
        solved_example=item.solved_example,
        generated_code=item.generated_code,
    )
    return [
        LLMRequest(
            model=settings.model,
            system=system,
            messages=[{"role": "user", "content": user}],
            max_tokens=settings.max_tokens,
            sample_index=index,
            item_id=item.item_id,
        )
        for index in range(settings.samples)
    ]


def _degenerate(item: MigrationJudgeInput) -> Any:
    from evalkit.graders.degenerate import assess

    return assess(item.generated_code, item.legacy_code or None, item.language)


def _precheck(item: MigrationJudgeInput) -> tuple[Literal["passed", "failed", "skipped"], list[SyntaxIssue]]:
    """Free checks before any call: an empty, unchanged or incomplete file, or one that does not parse, fails."""
    degenerate = bool(_degenerate(item).decided)
    try:
        issues = syntax_errors(item.generated_code, item.language)
    except UnsupportedLanguage:
        return ("failed" if degenerate else "skipped"), []
    return ("failed" if issues or degenerate else "passed"), issues


def _aggregate(outcome: JudgeOutcome) -> JudgeOutcome:
    verdicts = outcome.verdicts
    values = {name: [getattr(v, name) for v in verdicts] for name in SCORE_NAMES}
    compilable = [v.is_compilable for v in verdicts]
    spread = {name: max(vals) - min(vals) for name, vals in values.items()}
    return outcome.model_copy(
        update={
            "scores": {name: sum(vals) / len(vals) for name, vals in values.items()},
            "spread": spread,
            "is_compilable": sum(compilable) * 2 > len(compilable),
            "unstable": any(s >= UNSTABLE_SPREAD for s in spread.values()) or len(set(compilable)) > 1,
        }
    )


def judge_migration(
    item: MigrationJudgeInput, client: ModelClient | None, settings: JudgeSettings
) -> JudgeOutcome:
    """Judge one migrated file: parser pre-check, then ``settings.samples`` judge calls."""
    settings = settings.with_env()
    precheck, issues = _precheck(item)
    if precheck == "failed":
        # Kai's judge prompt: such a file gets every score 0 and is not compilable; decided here, no call
        found = _degenerate(item)
        decided = found.decided if found.decided in ("empty", "unchanged") or not issues else "syntax"
        syntax = f"generated file does not parse: {len(issues)} syntax issue(s)"
        return JudgeOutcome(
            status="parser",
            source="parser",
            scores={name: 0.0 for name in SCORE_NAMES},
            spread={name: 0 for name in SCORE_NAMES},
            is_compilable=False,
            syntax_issues=issues,
            precheck=precheck,
            decided=decided,
            error="decided without a model: " + "; ".join(filter(None, [found.reason(), syntax if issues else ""])),
        )
    base = JudgeOutcome(status="judged", model=settings.model, samples=settings.samples,
                        precheck=precheck, syntax_issues=issues)
    if client is None:
        return base.model_copy(update={"status": "not_configured", "error": "ANTHROPIC_API_KEY is not set"})

    got = ask_samples(client, migration_requests(item, settings), parse_verdict)
    spent = {"verdicts": got.values, "usage": got.usage, "cost_usd": got.cost_usd, "request_keys": got.request_keys,
             "notices": got.notices}
    if got.stopped is not None:
        status = "not_judged_budget" if isinstance(got.stopped, BudgetExceeded) else "infra_error"
        return base.model_copy(update={"status": status, "error": str(got.stopped), **spent})
    outcome = base.model_copy(update={"source": "judge", "reasoning": got.reasoning, "raw_answers": got.raw, **spent})
    if got.errors:
        return outcome.model_copy(update={"status": "judge_error", "error": "; ".join(got.errors)})
    return _aggregate(outcome)


def judge_many(
    items: Sequence[MigrationJudgeInput], client: ModelClient | None, settings: JudgeSettings
) -> list[JudgeOutcome]:
    """Judge ``items`` with ``settings.concurrency`` threads, in order.

    In batch mode the first-round requests of every item go out as one Message Batch first; the
    per-item judging then reads them from the cache (repairs, if any, are sent one by one).
    """
    settings = settings.with_env()
    failed: dict[int, LLMError] = {}
    if client is not None and settings.mode == "batch":
        failed = _prefetch_batch(items, client, settings)

    def judge_one(index: int) -> JudgeOutcome:
        if index in failed:
            return _failed(items[index], settings, failed[index])
        return judge_migration(items[index], client, settings)

    with ThreadPoolExecutor(max_workers=settings.concurrency) as pool:
        return list(pool.map(judge_one, range(len(items))))


def _failed(item: MigrationJudgeInput, settings: JudgeSettings, error: LLMError) -> JudgeOutcome:
    precheck, issues = _precheck(item)
    return JudgeOutcome(
        status="not_judged_budget" if isinstance(error, BudgetExceeded) else "infra_error",
        model=settings.model, samples=settings.samples, precheck=precheck, syntax_issues=issues,
        error=str(error),
    )


def _prefetch_batch(
    items: Sequence[MigrationJudgeInput], client: ModelClient, settings: JudgeSettings
) -> dict[int, LLMError]:
    """Send every item's first-round requests as one batch; the items the batch failed, by index.

    Items whose answers arrived are judged from the cache afterwards; failed ones are recorded as
    infrastructure errors rather than re-sent one by one at full price.
    """
    owners: list[int] = []
    requests: list[LLMRequest] = []
    for index, item in enumerate(items):
        if _precheck(item)[0] == "failed":
            continue
        for request in migration_requests(item, settings):
            owners.append(index)
            requests.append(request)
    if not requests:
        return {}
    try:
        from evalkit.llm.batch import run_batch

        answers = run_batch(client, requests)
    except LLMError as exc:
        return {index: exc for index in set(owners)}
    failed: dict[int, LLMError] = {}
    for index, answer in zip(owners, answers):
        if isinstance(answer, LLMError):
            failed.setdefault(index, answer)
    return failed
