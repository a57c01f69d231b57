"""The JSON artifacts the stages write, one per (system, case) and stage, and where they live."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, overload

from pydantic import Field

from evalkit.fsutil import atomic_write_json, remove, touch
from evalkit.llm.pricing import Usage
from evalkit.models import Model, OpenModel
from evalkit.outcomes import AnyJudgeOutcome, GradesExtra, RubricOutcome, SandboxRun

SCHEMA_VERSION = 1
SCORES_FORMAT = 2
"""What scores.json holds (2: each metric's explanation): part of the score stage's slice, so scores an older
evalkit wrote are computed again rather than read without what this one adds."""
STAGES = ("generate", "execute", "grade", "score")
ARTIFACT_FILES = {"generate": "output.json", "execute": "execution.json", "grade": "grades.json", "score": "scores.json"}

# How a (system, case) ended. `error` is the system's own failure or a broken case; `infra_error`
# is ours (daemon down, judge API error) and is retried on the next run; `broken` is a case that
# failed harness validation and is excluded from rates; `not_attempted` is a case a recorded system
# has no output for (coverage, not a failure: excluded from that system's rates); `bug` is evalkit's
# own bug (a stage raised): excluded from rates, redone when evalkit's code changes (evalkit.bugs).
Status = Literal["ok", "error", "timeout", "infra_error", "broken", "skipped", "not_attempted", "bug"]

D = TypeVar("D")


class DiscoveredTask(Model):
    """A task a migration assistant says it found (agentic suites)."""

    rule_id: str
    """Rule of the incident the task addresses."""
    file: str
    """File, relative to the source tree."""
    line: int | None = None
    """1-based line, when the system gives one."""
    description: str = ""
    """What the system plans to do."""


class Sample(OpenModel):
    """One answer of the system under test to one case (the command protocol's output JSON)."""

    status: Status = "ok"
    """`ok`, or how the run failed."""
    reason: str = ""
    """Why it failed, in plain words."""
    files: dict[str, str] = {}
    """Generated files: path -> content."""
    deleted_files: list[str] = []
    """Files the system deletes (paths), e.g. a class the target technology no longer needs."""
    patch: str | None = None
    """A unified diff against the case's tree or legacy file."""
    text: str | None = None
    """A free-text answer (hint, explanation)."""
    context_files: list[str] = []
    """Files the system looked at, most relevant first (localization)."""
    context_functions: list[str] = []
    """Functions the system looked at, most relevant first (`path::Class.func`)."""
    usage: Usage = Usage()
    """Tokens and cost the system reports."""
    steps: int | None = None
    """Agent steps the system reports."""
    tasks: list[DiscoveredTask] = []
    """Tasks the system discovered (agentic suites)."""
    help_requests: int = Field(default=0, ge=0)
    """Times the system asked a person for help (manual interventions, e2e suites)."""
    wall_s: float = 0.0
    """Wall time of the run, measured by evalkit."""
    exit_code: int | None = None
    """Exit status of a command system."""
    stderr: str = ""
    """Tail of the command's standard error."""


class Provenance(Model):
    """What an artifact was computed from."""

    inputs: str
    """Digest of every input of the stage (case, upstream artifacts, config slice)."""
    config: str
    """Digest of the stage's slice of the config."""
    worker: str = ""
    """The cluster worker that made it (its Dask address); empty when made on the coordinating host."""

    def __repr_args__(self) -> Any:  # later stages digest str(provenance): where it ran is not what it depends on
        return [(k, v) for k, v in super().__repr_args__() if k != "worker"]


class ArtifactBase(Model):
    """Fields every artifact has."""

    schema_version: int = SCHEMA_VERSION
    """Version of this file's shape."""
    system: str
    """System name."""
    suite: str
    """Suite name."""
    case_id: str
    """Case id within the suite."""
    status: Status = "ok"
    """How this stage ended for this (system, case)."""
    reason: str = ""
    """Why, when not ok."""
    provenance: Provenance | None = None
    """What it was computed from."""


class OutputArtifact(ArtifactBase):
    """output.json: the system's answer(s)."""

    stage: Literal["generate"] = "generate"
    samples: list[Sample] = []
    """k answers (k = the system's `samples`); the first is graded."""

    @property
    def first(self) -> Sample:
        return self.samples[0] if self.samples else Sample(status=self.status, reason=self.reason)


class ExecutionArtifact(ArtifactBase):
    """execution.json: the tests run on the system's patch, per sample."""

    stage: Literal["execute"] = "execute"
    runs: list[SandboxRun] = []
    """One run per sample: a sandbox result, an agentic recheck or an e2e loop (evalkit.outcomes.SandboxRun)."""
    isolation: str | None = None
    """`docker`, or `local` when tests ran without container isolation."""


class AssertionResult(Model):
    """Outcome of one assertion."""

    type: str
    """Assertion type."""
    description: str
    """What was checked."""
    passed: bool
    """Whether it held."""
    weight: float = 1.0
    """Weight in the score."""
    detail: str = ""
    """Why it failed, or what matched."""


class SyntaxResult(Model):
    """Did the generated code parse."""

    language: str
    """Parser used."""
    valid: bool | None
    """True/False, or None when the language has no parser here."""
    issues: list[str] = []
    """First few parse errors with line numbers."""


class GradesArtifact(ArtifactBase):
    """grades.json: assertion results, syntax check, judge verdict(s)."""

    stage: Literal["grade"] = "grade"
    syntax: SyntaxResult | None = None
    """Syntax validity of the main generated file."""
    assertions: list[AssertionResult] = []
    """Deterministic checks."""
    assertion_score: float | None = None
    """Weighted fraction of assertions that held (0-1), None without assertions."""
    judge: AnyJudgeOutcome | None = None
    """The LLM judge's outcome (a patch or e2e suite with ``judge:``: per changed file too; rag: ragas' summary)."""
    rubric: RubricOutcome | None = None
    """Rubric grading outcome (generation suites)."""
    extra: GradesExtra = Field(default_factory=GradesExtra)
    """Kind-specific grading data (ragas' metrics, injection detectors; another package's kind: its own keys)."""


class ScoresArtifact(ArtifactBase):
    """scores.json: every metric of one (system, case)."""

    stage: Literal["score"] = "score"
    metrics: dict[str, float | None] = {}
    """Metric name -> value (booleans as 0/1); None = not applicable. Metadata: evalkit.metrics.registry."""
    explanations: dict[str, str] = {}
    """Metric name -> why it has its value, in a sentence, as its scorer said (evalkit.contracts.ScoreResult,
    MetricValue); metrics without one are left out. Text a scorer built, maybe from the answer: shown escaped."""
    excluded: Literal["broken", "infra", "not_judged", "not_attempted", "bug"] | None = None
    """Why this case is left out of aggregates, if it is."""
    tags: list[str] = []
    """The case's tags (for breakdowns)."""
    usage: Usage = Usage()
    """System-under-test tokens and cost."""
    judge_usage: Usage = Usage()
    """Judge tokens and cost."""
    wall_s: float = 0.0
    """System wall time."""
    judge_status: str | None = None
    """How the model-graded part ended: judged, parser, not_configured, not_judged_budget, judge_error, infra_error."""
    judge_notices: list[str] = []
    """Deprecation notices of the judge's provider (shown on the release page)."""


class SystemArtifacts(Model):
    """One system's four artifacts of one case, by stage (a case JSON's ``systems[<system>]``): None where the stage
    wrote none. Read once, with the case JSON (evalkit.report.models.CaseDetail); the pages read these models.

    ``arts["output"]`` and ``arts.get("output")`` still give an artifact as JSON (a dict, or None), the form a
    kind's ``detail`` read before the case JSON was typed."""

    output: OutputArtifact | None = None
    """output.json: the system's answer(s)."""
    execution: ExecutionArtifact | None = None
    """execution.json: the tests run on the answer (kinds that execute)."""
    grades: GradesArtifact | None = None
    """grades.json: assertions, syntax, judge."""
    scores: ScoresArtifact | None = None
    """scores.json: every metric."""

    def __getitem__(self, stage: str) -> dict[str, Any] | None:
        if stage not in STAGE_KEYS:
            raise KeyError(stage)
        art: ArtifactBase | None = getattr(self, stage)
        return art.model_dump(mode="json") if art is not None else None

    @overload
    def get(self, stage: str) -> dict[str, Any] | None: ...

    @overload
    def get(self, stage: str, default: D) -> dict[str, Any] | D: ...

    def get(self, stage: str, default: object = None) -> object:
        """An artifact as JSON (the older, untyped form), ``default`` when the stage wrote none."""
        got = self[stage] if stage in STAGE_KEYS else None
        return default if got is None else got


STAGE_KEYS = ("output", "execution", "grades", "scores")
"""The keys of `SystemArtifacts` (and of a case JSON's ``systems[<system>]``), in stage order."""


ARTIFACT_MODELS: dict[str, type[ArtifactBase]] = {
    "generate": OutputArtifact, "execute": ExecutionArtifact, "grade": GradesArtifact, "score": ScoresArtifact,
}


def artifact_path(work: Path, stage: str, system: str, suite: str, case_id: str) -> Path:
    """`<work>/artifacts/<system>/<suite>/<case>/<file>`."""
    return Path(f"{work}/artifacts/{system}/{suite}/{case_id}/{ARTIFACT_FILES[stage]}")  # one parse, not five


RETRY_SUFFIX = ".retry"
"""Beside an artifact that recorded an infrastructure error: `<artifact>.retry`, its task reruns next time."""


def marked_for_retry(path: Path | str) -> bool:
    """An artifact (or a case's validation or health file) that recorded an infrastructure error has a `.retry`
    marker: it is redone next run."""
    return os.path.exists(f"{path}{RETRY_SUFFIX}")


class StageResult(Protocol):
    """What `write_with_retry_mark` writes: a stage's model, with the status that says whether to retry it."""

    @property
    def status(self) -> str: ...


def write_with_retry_mark(path: Path, result: StageResult) -> None:
    """Write a stage result atomically; mark an infrastructure error for retry, clear the mark otherwise."""
    atomic_write_json(path, result)
    marker = Path(f"{path}{RETRY_SUFFIX}")
    if result.status == "infra_error":
        touch(marker)
    elif marker.exists():
        remove(marker)


def write_artifact(path: Path, artifact: ArtifactBase) -> None:
    """Write a stage artifact (see `write_with_retry_mark`)."""
    write_with_retry_mark(path, artifact)


@overload
def read_artifact(path: Path, stage: Literal["generate"]) -> OutputArtifact: ...
@overload
def read_artifact(path: Path, stage: Literal["execute"]) -> ExecutionArtifact: ...
@overload
def read_artifact(path: Path, stage: Literal["grade"]) -> GradesArtifact: ...
@overload
def read_artifact(path: Path, stage: Literal["score"]) -> ScoresArtifact: ...
@overload
def read_artifact(path: Path, stage: str) -> ArtifactBase: ...
def read_artifact(path: Path, stage: str) -> ArtifactBase:
    """Load and validate an artifact of a stage."""
    with open(path, encoding="utf-8") as fh:
        return ARTIFACT_MODELS[stage].model_validate(json.load(fh))


@overload
def read_optional(path: Path, stage: Literal["generate"]) -> OutputArtifact | None: ...
@overload
def read_optional(path: Path, stage: Literal["execute"]) -> ExecutionArtifact | None: ...
@overload
def read_optional(path: Path, stage: Literal["grade"]) -> GradesArtifact | None: ...
@overload
def read_optional(path: Path, stage: Literal["score"]) -> ScoresArtifact | None: ...
@overload
def read_optional(path: Path, stage: str) -> ArtifactBase | None: ...
def read_optional(path: Path, stage: str) -> ArtifactBase | None:
    return read_artifact(path, stage) if path.exists() else None


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("annotations", "Field", "Path", "json")]
