"""The migration judge: a model reviews one migrated file the way Konveyor Kai's evaluation does.

The reviewer sees the source and target technology, the legacy file, the incidents, the solved
example if any, and the generated file; it reasons in four steps (semantic equivalence, rule
adherence, faithfulness to context, code quality with minimal changes) and ends with a JSON
verdict. Before any call, a free tree-sitter pre-check fails files that do not parse. With
``samples: k`` the judge is asked k times and the spread is reported.

What the judge scores is a rubric (evalkit.graders.rubric_config): its fields, their scales and the
prompt templates that ask for them. CodeJudge's (``codejudge``: the four 1-5 scores above and
is_compilable) is the default; a suite's ``rubric`` or ``judge.rubric`` names another.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from evalkit.llm.calls import BudgetExceeded, LLMError, LLMRequest, system_blocks
from evalkit.llm.settings import JudgeSettings, missing_key
from evalkit.llm.structured import ask_samples, parse_model
from evalkit.graders.rubric_config import JudgeRubric, as_recorded, shipped_unregistered, verdict_model
from evalkit.outcomes import JudgeOutcome, JudgeStatus
from evalkit.models import Model
if TYPE_CHECKING:  # the SDK takes a second to import: only when a client exists
    from evalkit.llm.client import ModelClient
from evalkit.treesitter import SyntaxIssue, UnsupportedLanguage, syntax_errors
from evalkit.graders.degenerate import assess
from evalkit.llm.batch import run_batch

CODEJUDGE: JudgeRubric = shipped_unregistered("codejudge")  # evalkit.metrics.registry registers its metrics
"""The default rubric (evalkit/rubrics/codejudge.yaml)."""
SYSTEM_TEMPLATE = CODEJUDGE.system_template
USER_TEMPLATE = CODEJUDGE.user_template
SCORE_NAMES = tuple(f.name for f in CODEJUDGE.numeric)
UNSTABLE_SPREAD = 2
"""An integer score whose samples span this many points or more makes the outcome unstable."""
UNSTABLE_UNIT_SPREAD = 0.25
"""A 0-1 score whose samples span this much or more makes the outcome unstable."""


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


MigrationVerdict = verdict_model(CODEJUDGE)
"""One CodeJudge answer, strictly validated (the model generated from the codejudge rubric)."""


def parse_verdict(text: str, rubric: JudgeRubric = CODEJUDGE) -> tuple[Model, str]:
    """The verdict in ``text`` (its last JSON object; unknown keys ignored), validated against ``rubric``,
    and the reasoning before it."""
    return parse_model(verdict_model(rubric), text)


Status = JudgeStatus


def prompt_version(rubric: JudgeRubric = CODEJUDGE) -> str:
    """Digest of the rubric and its templates (what a verdict depends on besides the judge settings)."""
    return rubric.version()


def migration_requests(item: MigrationJudgeInput, settings: JudgeSettings,
                       rubric: JudgeRubric = CODEJUDGE) -> list[LLMRequest]:
    """The first-round requests for ``item``, one per sample (repairs are not known in advance)."""
    settings = settings.with_env()
    system = system_blocks(rubric.render(rubric.system_template))
    user = rubric.render(
        rubric.user_template,
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
    return assess(item.generated_code, item.legacy_code or None, item.language)


def decided_without_model(item: MigrationJudgeInput) -> bool:
    """The migration judge decides ``item`` for free: its pre-checks fail (``evalkit estimate`` and ``judge.mode:
    batch`` plan no model call for it)."""
    return _precheck(item)[0] == "failed"


def _precheck(item: MigrationJudgeInput) -> tuple[Literal["passed", "failed", "skipped"], list[SyntaxIssue]]:
    """Free checks before any call: an empty, unchanged or incomplete file, or one that does not parse, fails."""
    degenerate = bool(_degenerate(item).decided)
    try:
        issues = syntax_errors(item.generated_code, item.language)
    except UnsupportedLanguage:
        return ("failed" if degenerate else "skipped"), []
    return ("failed" if issues or degenerate else "passed"), issues


def aggregate_outcome(outcome: JudgeOutcome, rubric: JudgeRubric) -> JudgeOutcome:
    verdicts = [v.model_extra or {} for v in outcome.verdicts]
    values = {f.name: [v[f.name] for v in verdicts] for f in rubric.numeric}
    spread = {name: max(vals) - min(vals) for name, vals in values.items()}
    flags: dict[str, bool] = {}
    for f in rubric.booleans:
        said = [bool(v[f.name]) for v in verdicts]
        true, false = sum(said), len(said) - sum(said)
        flags[f.name] = true > false if true != false else bool(f.worst())  # a tie counts as the worse value
    unstable = any(spread[f.name] >= (UNSTABLE_SPREAD if f.is_ordinal else UNSTABLE_UNIT_SPREAD) for f in rubric.numeric)
    unstable = unstable or any(len({v[f.name] for v in verdicts}) > 1 for f in rubric.booleans)
    return outcome.model_copy(
        update={
            "scores": {name: sum(vals) / len(vals) for name, vals in values.items()},
            "spread": spread,
            "flags": flags,
            "is_compilable": flags.get("is_compilable"),
            "unstable": unstable,
        }
    )


def outcome_of(rubric: JudgeRubric, answers: Sequence[dict[str, Any]], **fields: object) -> JudgeOutcome:
    """A judged outcome from verdicts given elsewhere (e.g. an imported report's scores): each answer is
    validated strictly against ``rubric`` (ValueError naming the field and its scale), then aggregated
    like the judge's own samples. ``fields`` fill the rest (model, source, ...)."""
    model = verdict_model(rubric)
    verdicts = [as_recorded(model.model_validate({k: v for k, v in a.items() if k in model.model_fields}))
                for a in answers]
    if not verdicts:
        raise ValueError("no verdict to aggregate")
    base = JudgeOutcome.model_validate({"status": "judged", "source": "judge", "rubric": rubric.name,
                                        "samples": len(verdicts), "verdicts": verdicts, **fields})
    return aggregate_outcome(base, rubric)


def decided_outcome(rubric: JudgeRubric, **fields: object) -> JudgeOutcome:
    """The outcome of a file decided without a model: each field's decided value (its scale's worst end
    unless the rubric says otherwise; CodeJudge: every score 0 and not compilable, as Kai's judge prompt asks)."""
    flags = {f.name: bool(f.decided_value()) for f in rubric.booleans}
    return JudgeOutcome.model_validate({
        "status": "parser", "source": "parser", "rubric": rubric.name,
        "scores": {f.name: float(f.decided_value()) for f in rubric.numeric},
        "spread": {f.name: 0 for f in rubric.numeric},
        "flags": flags, "is_compilable": flags.get("is_compilable"), **fields})


def judge_migration(
    item: MigrationJudgeInput, client: ModelClient | None, settings: JudgeSettings,
    rubric: JudgeRubric | None = None,
) -> JudgeOutcome:
    """Judge one migrated file under ``rubric`` (default CodeJudge's): parser pre-check, then
    ``settings.samples`` judge calls."""
    settings = settings.with_env()
    rubric = rubric or CODEJUDGE
    precheck, issues = _precheck(item)
    if precheck == "failed":
        # decided here, no call: every field gets its decided value (see decided_outcome)
        found = _degenerate(item)
        decided = found.decided if found.decided in ("empty", "unchanged") or not issues else "syntax"
        syntax = f"generated file does not parse: {len(issues)} syntax issue(s)"
        return decided_outcome(
            rubric,
            syntax_issues=issues,
            precheck=precheck,
            decided=decided,
            error="decided without a model: " + "; ".join(filter(None, [found.reason(), syntax if issues else ""])),
        )
    base = JudgeOutcome(status="judged", model=settings.model, rubric=rubric.name, samples=settings.samples,
                        precheck=precheck, syntax_issues=issues)
    if client is None:
        return base.model_copy(update={"status": "not_configured", "error": missing_key(settings)})

    got = ask_samples(client, migration_requests(item, settings, rubric), lambda text: parse_verdict(text, rubric))
    spent = {"verdicts": [as_recorded(v) for v in got.values], "usage": got.usage, "cost_usd": got.cost_usd, "request_keys": got.request_keys,
             "notices": got.notices, **got.named()}
    if got.stopped is not None:
        status = "not_judged_budget" if isinstance(got.stopped, BudgetExceeded) else "infra_error"
        return base.model_copy(update={"status": status, "error": str(got.stopped), **spent})
    outcome = base.model_copy(update={"source": "judge", "reasoning": got.reasoning, "raw_answers": got.raw, **spent})
    if got.errors:
        return outcome.model_copy(update={"status": "judge_error", "error": "; ".join(got.errors)})
    return aggregate_outcome(outcome, rubric)


def judge_many(
    items: Sequence[MigrationJudgeInput], client: ModelClient | None, settings: JudgeSettings,
    rubric: JudgeRubric | None = None,
) -> list[JudgeOutcome]:
    """Judge ``items`` with ``settings.concurrency`` threads, in order.

    In batch mode the first-round requests of every item go out as one Message Batch first; the
    per-item judging then reads them from the cache (repairs, if any, are sent one by one).
    """
    settings = settings.with_env()
    failed: dict[int, LLMError] = {}
    if client is not None and settings.mode == "batch":
        failed = _prefetch_batch(items, client, settings, rubric or CODEJUDGE)

    def judge_one(index: int) -> JudgeOutcome:
        if index in failed:
            return _failed(items[index], settings, failed[index], rubric or CODEJUDGE)
        return judge_migration(items[index], client, settings, rubric)

    with ThreadPoolExecutor(max_workers=settings.concurrency) as pool:
        return list(pool.map(judge_one, range(len(items))))


def _failed(item: MigrationJudgeInput, settings: JudgeSettings, error: LLMError, rubric: JudgeRubric) -> JudgeOutcome:
    precheck, issues = _precheck(item)
    return JudgeOutcome(
        status="not_judged_budget" if isinstance(error, BudgetExceeded) else "infra_error",
        model=settings.model, rubric=rubric.name, samples=settings.samples, precheck=precheck, syntax_issues=issues,
        error=str(error),
    )


def _prefetch_batch(
    items: Sequence[MigrationJudgeInput], client: ModelClient, settings: JudgeSettings, rubric: JudgeRubric
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
        for request in migration_requests(item, settings, rubric):
            owners.append(index)
            requests.append(request)
    if not requests:
        return {}
    try:
        answers = run_batch(client, requests)
    except LLMError as exc:
        return {index: exc for index in set(owners)}
    failed: dict[int, LLMError] = {}
    for index, answer in zip(owners, answers):
        if isinstance(answer, LLMError):
            failed.setdefault(index, answer)
    return failed
