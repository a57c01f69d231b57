"""Typed outcomes stored inside artifacts: judge verdicts, rubric results, ragas metrics and sandbox runs.

The grade stage records a ``JudgeOutcome`` (``ChangesJudgeOutcome`` on a patch or e2e suite with
``judge:``), a ``RubricOutcome`` (generation suites) and ``GradesExtra`` (ragas' metrics, injection
findings); the execute stage one ``SandboxRun`` per sample. They live here, light to import, so
``evalkit.artifacts`` can hold them without loading the graders, the model client or the sandbox.
Judge and rubric outcomes are strict: a misspelled key in a grades.json is an error, not a default.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import ConfigDict, Field, PlainSerializer, SerializationInfo, model_serializer

from evalkit.llm.pricing import Usage
from evalkit.models import Model
from evalkit.treesitter import SyntaxIssue

JudgeStatus = Literal["judged", "parser", "judge_error", "not_configured", "not_judged_budget", "infra_error"]
"""How a model-graded outcome ended (see ``JudgeOutcome.status``)."""
TestStatus = Literal["passed", "failed", "error", "skipped", "flaky"]
RunStatus = Literal["completed", "patch_failed", "tampered_with_tests", "timeout", "oom", "infra_error", "case_error"]
Decided = Literal["syntax", "empty", "unchanged", "incomplete"]


# ---- model-graded outcomes ------------------------------------------------------------------------

class GraderSpend(Model):
    """Tokens, cost, unusable answers and cache keys of the judge calls behind one outcome."""

    usage: Usage = Field(default_factory=Usage)
    """Tokens of every response used (repairs included)."""
    cost_usd: float = 0.0
    """USD cost of producing those responses (the same whether served from the cache or not)."""
    raw_answers: list[str] = Field(default_factory=list)
    """The judge's unusable answers, kept on judge_error."""
    error: str | None = None
    """Why there is no verdict or score (validation error, API error, budget)."""
    request_keys: list[str] = Field(default_factory=list)
    """Cache keys of the responses used."""
    notices: list[str] = Field(default_factory=list)
    """Deprecation notices of the provider about the model behind these responses."""
    fallback: bool = False
    """True when the fallback model (judge.fallback) gave these answers because the primary kept failing:
    a different judge, whose scores are counted apart from the primary's."""


class RubricVerdict(Model):
    """One judge answer as recorded: the rubric's fields (by name) and the judge's notes."""

    model_config = ConfigDict(extra="allow")
    detailed_notes: str = ""
    """The judge's key reasons."""
    __pydantic_extra__: dict[str, int | float | bool] = Field(init=False)  # type: ignore[assignment]


class JudgeOutcome(GraderSpend):
    """The judge's result for one migrated file, or a rag case's ragas summary (the grade stage records this)."""

    status: JudgeStatus
    """judged; parser (failed the syntax pre-check, no call); judge_error (unusable answer after one
    repair); not_configured (no API key); not_judged_budget; infra_error (API failure)."""
    source: Literal["judge", "parser", "recorded", "ragas"] | None = None
    """Who produced the scores (recorded: verdicts imported from another tool's judge, evalkit.recorded_judge;
    ragas: a rag case's ragas metrics, evalkit.kinds.rag.judge)."""
    model: str | None = None
    """Judge model id."""
    rubric: str | None = None
    """Name of the rubric the verdicts follow (evalkit.graders.rubric_config); None in records older than rubrics
    (CodeJudge's)."""
    samples: int = 0
    """Verdicts asked for."""
    verdicts: list[RubricVerdict] = Field(default_factory=list)
    """Valid verdicts, one per sample: the rubric's fields by name, and the judge's notes."""
    scores: dict[str, float] | None = None
    """Mean of each numeric field over the verdicts (each field's decided value, e.g. 0, when the parser
    failed the file)."""
    spread: dict[str, int | float] = Field(default_factory=dict)
    """Max minus min of each numeric field over the verdicts."""
    flags: dict[str, bool] = Field(default_factory=dict)
    """Each boolean field: majority of the verdicts (a tie counts as the worse value); its decided value
    when the parser failed the file."""
    is_compilable: bool | None = None
    """CodeJudge's is_compilable flag (as in ``flags``); None for rubrics without it."""
    unstable: bool = False
    """An integer field spans two points or more (a 0-1 field 0.25 or more) across samples, or the samples
    disagree on a boolean field."""
    reasoning: list[str] = Field(default_factory=list)
    """The judge's reasoning before each verdict."""
    syntax_issues: list[SyntaxIssue] = Field(default_factory=list)
    """Parser findings of the pre-check."""
    precheck: Literal["passed", "failed", "skipped"] = "skipped"
    """Tree-sitter pre-check result; skipped for languages without a grammar."""
    decided: Decided | None = None
    """Why the verdict was decided without a model (status parser): the file does not parse, is empty,
    is the legacy file unchanged, or elides code (evalkit.graders.degenerate); None otherwise."""


class FileVerdict(Model):
    """What the judge said about one changed file."""

    path: str
    """Path in the case's tree."""
    change: Literal["added", "modified", "deleted"]
    """How the answer changed it."""
    changed_lines: int
    """Lines added plus removed: the size the files are ranked by."""
    judged: bool
    """Among the ``max_files`` largest changes (deleted files never are)."""
    status: JudgeStatus | None = None
    """The judge's status for this file (None: not judged)."""
    scores: dict[str, float] | None = None
    """Mean of each numeric field over the samples (the decided values for a file the pre-checks decided)."""
    flags: dict[str, bool] = Field(default_factory=dict)
    """Each boolean field."""
    decided: Decided | None = None
    """Why the pre-checks decided it without a model."""
    error: str | None = None
    """Why there is no verdict, or what the pre-checks found."""


class ChangesJudgeOutcome(JudgeOutcome):
    """A patch or e2e output's judge outcome: the judged files combined, and each file's own."""

    files: list[FileVerdict] = Field(default_factory=list)
    """Every file the answer changed, largest change first."""
    max_files: int = 3
    """The suite's ``judge.max_files``."""


class _ChosenByShape:
    """The JSON Schema of ``AnyJudgeOutcome`` chooses as the validator does: by shape (``files`` or ``max_files``
    present: a changes outcome). A plain ``anyOf`` or ``oneOf`` would accept a one-file outcome with a stray key
    or refuse every one-file outcome (valid under both branches: a changes outcome's fields have defaults)."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema = handler(core_schema)
        branches = schema.get("anyOf", schema.get("oneOf"))
        if not isinstance(branches, list) or len(branches) != 2:
            return schema
        one_file, changes = branches  # the union's order: JudgeOutcome, ChangesJudgeOutcome
        return {"if": {"anyOf": [{"required": ["files"]}, {"required": ["max_files"]}]}, "then": changes, "else": one_file}


def _as_its_own_model(value: JudgeOutcome, info: SerializationInfo) -> dict[str, Any]:
    """An outcome written by its own class (a plain union's serializer fell back to its first member, the one-file
    outcome, for a changes outcome with verdicts, and dropped its files). Through ``model_dump``, which builds a
    deferred model's serializer on first use (evalkit.models._Deferred)."""
    return value.model_dump(mode=info.mode, by_alias=bool(info.by_alias), exclude_unset=info.exclude_unset,
                            exclude_defaults=info.exclude_defaults, exclude_none=info.exclude_none,
                            round_trip=info.round_trip)


AnyJudgeOutcome = Annotated[Union[JudgeOutcome, ChangesJudgeOutcome], Field(union_mode="left_to_right"),
                            _ChosenByShape(), PlainSerializer(_as_its_own_model)]
"""grades.json ``judge``: one file's outcome, or a patch or e2e suite's with its changed files, chosen by shape: a
one-file outcome refuses the keys it lacks (``files``, ``max_files``: evalkit.models.Model forbids unknown keys), so
the changes outcome, tried second, takes them; a ChangesJudgeOutcome is written with its files and read back as one.
Validated straight from JSON: a discriminator function would have pydantic turn each outcome into Python objects
first (a 10,000-case render read 40,000 of them)."""


class CriterionResult(Model):
    """The outcome for one criterion over all samples."""

    id: str
    """Criterion id."""
    weight: float
    """Its weight."""
    met: bool
    """Met by a majority of samples (a tie counts as not met)."""
    met_fraction: float
    """Fraction of samples that found it met."""
    reason: str
    """The first sample's reason."""


class RubricOutcome(GraderSpend):
    """Rubric grade of one generation case."""

    status: JudgeStatus
    """judged, parser (decided without a model: empty or incomplete output, score 0), or why there is no
    score (same meanings as the migration judge)."""
    model: str | None = None
    """Judge model id."""
    score: float | None = None
    """Weighted fraction of criteria met (0-1), averaged over samples."""
    sample_scores: list[float] = Field(default_factory=list)
    """The score of each sample."""
    results: list[CriterionResult] = Field(default_factory=list)
    """Per-criterion outcome, in the case's order."""
    unstable: bool = False
    """Some criterion was met in some samples and not in others."""
    reasoning: list[str] = Field(default_factory=list)
    """Free text before each sample's JSON."""


class RagasMetric(Model):
    """One ragas metric of one rag answer (evalkit.metrics.ragas_metrics.judge_rag)."""

    status: JudgeStatus
    """judged, or why there is no value (not_configured, judge_error, infra_error, not_judged_budget)."""
    value: float | None = None
    """The metric, 0-1 (None when not judged or ragas gave NaN)."""
    value_5: float | None = None
    """The same on a 1-5 scale."""
    error: str | None = None
    """Why there is no value."""
    note: str | None = None
    """Something notable about the value (0 without a call, NaN, clipped)."""
    calls: int = 0
    """Model calls made for it."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens of those calls."""
    cost_usd: float = 0.0
    """USD cost of those calls."""
    request_keys: list[str] = Field(default_factory=list)
    """Cache keys of the responses used."""


class RagasOutcome(Model):
    """ragas' metrics of one rag answer, in ``grades.extra["ragas"]``."""

    status: JudgeStatus
    """judged when every metric is; otherwise the worst of not_judged_budget, infra_error, judge_error."""
    ragas_version: str | None = None
    """Version of the ragas package that computed them."""
    model: str | None = None
    """Judge model id."""
    embedding: str | None = None
    """The embedding answer relevancy used."""
    metrics: dict[str, RagasMetric] = Field(default_factory=dict)
    """Metric name (faithfulness, context_relevance, answer_relevancy) -> its outcome."""


class InjectionFinding(Model):
    """One injection detector's result (the same shape as evalkit.artifacts.AssertionResult)."""

    type: str
    """Detector type."""
    description: str
    """What was checked."""
    passed: bool
    """Whether the output is clean of it."""
    weight: float = 1.0
    """Weight (unused: detectors are reported, not scored)."""
    detail: str = ""
    """What was found, where."""


class GradesExtra(Model):
    """Kind-specific grading data in grades.json ``extra``: evalkit's are typed; a kind of another package may
    add its own keys (kept as given)."""

    model_config = ConfigDict(extra="allow")
    ragas: RagasOutcome | None = None
    """rag cases: ragas' metrics (evalkit.kinds.rag.judge)."""
    injection: list[InjectionFinding] | None = None
    """generation cases: the injection detectors' findings (evalkit.graders.injection)."""

    @model_serializer(mode="wrap")
    def _present_only(self, handler: Any) -> dict[str, Any]:
        """Only the keys a kind recorded (an absent one stays absent, as in files written before this model)."""
        return {k: v for k, v in handler(self).items() if v is not None}


# ---- sandbox runs ---------------------------------------------------------------------------------

class ExecutionResult(Model):
    """What one sandboxed test run found: the ``execute`` stage's payload."""

    status: RunStatus
    """completed; patch_failed (the system's patch is unsafe or does not apply); tampered_with_tests (the patch changes test infrastructure and the policy refuses it, or evalkit's pytest plugin saw the functions that make verdicts changed during the run: not resolved); timeout; oom; infra_error (retry later); case_error (the case is unusable)."""
    reason: str
    """Plain-language explanation of the status and of anything notable (fallbacks, distrusted output)."""
    isolation: Literal["docker", "local"] | None
    """Where the tests ran: a Docker container, or a local subprocess (weaker isolation); required, and None
    only in a record of a run that did not happen (``SandboxRun``, which reads records with defaults)."""
    patch_applied: bool = False
    """Whether the system's patch was applied."""
    test_changes: list[str] = []
    """Test-infrastructure files the patch changed, each ``path: why`` (refused, or reverted to base before the tests ran)."""
    patch_method: str | None = None
    """Which method applied it: ``git apply``, ``git apply --3way``, ``git apply --reject`` or ``patch --fuzz=3``."""
    tests: dict[str, TestStatus] = {}
    """Status of every test id seen (after reruns)."""
    exit_code: int | None = None
    """Exit status of the test command in the main run (None when it did not finish)."""
    resolved: bool | None = None
    """All FAIL_TO_PASS and PASS_TO_PASS tests pass; False for tampered_with_tests; None for the other statuses."""
    fail_to_pass: dict[str, TestStatus] = {}
    """Status of each FAIL_TO_PASS id (an id absent from the results is failed)."""
    pass_to_pass: dict[str, TestStatus] = {}
    """Status of each PASS_TO_PASS id (an id absent from the results is failed)."""
    flaky: list[str] = []
    """Ids whose outcome flipped between the run and its reruns."""
    log: str = ""
    """Runner and test output, capped at the log limit, decoded with errors replaced."""
    log_truncated: bool = False
    """Whether output was cut to fit the log limit."""
    log_bytes: int = 0
    """How many bytes of output were produced in all (before capping)."""
    duration_s: float = 0.0
    """Wall-clock time of the run, in seconds."""
    image_digest: str | None = None
    """Image id (``sha256:...``) the tests ran in; None for the local backend or when no container ran."""
    harness_parser: str | None = None
    """SWE-bench cases: the official harness's log parser that graded the main run (None: not a SWE-bench case)."""
    harness_resolved: bool | None = None
    """SWE-bench cases: the official harness's verdict on the main run's log (None: the tests did not run)."""
    harness_tests_status: dict[str, dict[str, list[str]]] | None = None
    """SWE-bench cases: the harness's FAIL_TO_PASS/PASS_TO_PASS/FAIL_TO_FAIL/PASS_TO_FAIL success and failure lists."""
    harness_infra_failure: bool | None = None
    """SWE-bench cases: the harness (5.x) flags the log as an environment failure, not the patch's."""
    harness_note: str = ""
    """Why the harness gave no verdict, or what it flagged."""


class AsRecorded(Model):
    """A record written with the keys it was given, no more (read with every field's default): the run
    records of the execute stage keep their shape across kinds and versions."""

    @model_serializer(mode="wrap")
    def _as_recorded(self, handler: Any) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if k in self.model_fields_set}


class IncidentCheck(Model):
    """agentic cases: is an expected task's incident still in the tree after the system's changes."""

    rule_id: str
    """Rule of the incident."""
    file: str
    """File, relative to the source tree."""
    line: int | None = None
    """1-based line of the incident in the original file, when the case gives one."""
    present: bool
    """The rule's matcher still finds it."""


class Iteration(AsRecorded):
    """e2e cases: one round of the migration loop (system run, change applied, tests run)."""

    iteration: int
    """1-based round."""
    system_status: str
    """How the system's run ended (a Sample status)."""
    system_wall_s: float = 0.0
    """Wall time of the system's run."""
    steps: int | None = None
    """Agent steps the system reports."""
    help_requests: int = 0
    """Times the system asked a person for help."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens and cost the system reports."""
    change: str | None = None
    """How the change was applied (None: nothing changed)."""
    change_error: str | None = None
    """Why the change was refused."""
    diff: str | None = None
    """What this round changed in the tree (unified diff)."""
    test_status: RunStatus | None = None
    """How the tests' run ended (None: the tests did not run)."""
    test_s: float | None = None
    """Wall time of the tests' run."""
    passed: int | None = None
    """Required tests passing after this round (None: the tests did not run)."""
    total: int | None = None
    """Required tests."""
    failing: list[str] | None = None
    """Required tests still failing (None: the tests did not run)."""
    feedback_log: str | None = None
    """The tail of the test log shown to the next round's system run."""
    test_reason: str | None = None
    """Why no test ran (the patch changed test infrastructure)."""


class SandboxRun(AsRecorded, ExecutionResult):
    """One sample's run in execution.json: a sandboxed test run (patch, migration, generation suites), an
    agentic recheck, an e2e migration loop, or why none happened. Written with the keys it was given (a
    sandbox result has them all); read with every field's default."""

    reason: str = ""
    """Plain-language explanation of the status and of anything notable."""
    isolation: Literal["docker", "local"] | None = None
    """Where the tests ran (None: no test ran, e.g. this host cannot run the case yet)."""
    changes: str | None = None
    """agentic cases: how the system's changes were applied (None: nothing changed or refused)."""
    incidents: list[IncidentCheck] | None = None
    """agentic cases: each expected task's incident, still present or not."""
    required_tests: dict[str, TestStatus] | None = None
    """agentic and e2e cases: status of each test the reference requires."""
    test_status: RunStatus | None = None
    """agentic cases: how the application's test run ended (None: no test ran)."""
    iterations: list[Iteration] | None = None
    """e2e cases: every round of the migration loop."""
    stable_at: int | None = None
    """e2e cases: the round after which every required test passed (None: never)."""
    passed: int | None = None
    """e2e cases: required tests passing at the end."""
    total: int | None = None
    """e2e cases: required tests."""
    help_requests: int | None = None
    """e2e cases: times the system asked a person for help, over all rounds."""
    system_s: float | None = None
    """e2e cases: wall time of the system's runs."""
    test_s: float | None = None
    """e2e cases: wall time of the test runs."""
    steps: int | None = None
    """e2e cases: agent steps over all rounds."""
    final_patch: str | None = None
    """e2e cases: the whole tree's change at the end (unified diff)."""
