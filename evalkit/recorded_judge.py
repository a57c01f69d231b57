"""A recorded judge: verdicts another tool's judge already gave, brought in instead of calling a model.

`evalkit import kai-ci` / `evalkit import kai-eval` write, per imported system, a recorded-grades file
(``RecordedGrades``: the grader's name, the rubric, and per case the verdicts in the rubric's fields,
each with the place in the source file it came from) and name it in the system's entry
(``adapter: recorded``, ``grades: FILE``). The grade stage then takes that case's verdicts from the
file (``recorded_outcome``): a JudgeOutcome with ``source: recorded`` and ``model`` = the grader
named, aggregated like a model judge's samples (mean of each numeric field, majority of each
boolean), so scores, intervals and pages follow the rubric as for a live judge. No API key, no call.

The file is an input of the system's generate stage (evalkit.systems.recorded.recorded_sources), so
an edited grades file regrades exactly as an edited recording regenerates.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, ValidationError

from evalkit.errors import InputError, Problem
from evalkit.graders.migration_judge import outcome_of
from evalkit.graders.rubric_config import shipped
from evalkit.models import Model
from evalkit.outcomes import JudgeOutcome
from evalkit.stages.score_judge import judge_metrics
from evalkit.file_cache import StatKeyedCache
from evalkit.yamlio import load_json

if TYPE_CHECKING:
    from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact
    from evalkit.cases import Case
    from evalkit.config import Config
    from evalkit.contracts import Metrics

RECORDED_GRADES_VERSION = 1


class RecordedVerdict(Model):
    """One verdict of the recorded judge on one case."""

    values: dict[str, int | float | bool]
    """The rubric's fields by name, as the source gave them (checked against the rubric's scales)."""
    notes: str = ""
    """The grader's reasoning, when the source kept it."""
    where: str = ""
    """Where the verdict is in the source file (file:line or a JSON path)."""


class RecordedGrades(Model):
    """A recorded-grades file: one imported system's verdicts per case."""

    schema_version: int = RECORDED_GRADES_VERSION
    """Version of this file's shape."""
    source: str
    """The file the verdicts were imported from."""
    grader: str
    """Who gave them: the judge model the source names (or the name given with --grader)."""
    rubric: str
    """Rubric the verdicts follow (a shipped rubric name: kai_ci, kai_eval, ...)."""
    run: str = ""
    """Which run of the source (e.g. the report's date, or variant and model)."""
    cases: dict[str, list[RecordedVerdict]] = Field(default_factory=dict)
    """`suite/case_id` -> the verdicts on that case (several: the source judged it several times)."""


_loaded: StatKeyedCache[RecordedGrades] = StatKeyedCache()


def load_recorded_grades(path: Path, shown: str | None = None) -> RecordedGrades:
    """Read and validate a recorded-grades file (cached by path, mtime and size); InputError names file:line."""
    shown = shown or str(path)

    def read(path: Path) -> RecordedGrades:
        _text, data = load_json(path, shown)
        try:
            return RecordedGrades.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise InputError(Problem(shown, None, f"{where}: {first['msg']} (expected a recorded-grades file: "
                                                  "source, grader, rubric, cases)")) from None

    return _loaded.get(path, read, lambda: InputError(Problem(
        shown, None, "recorded grades file not found (written by `evalkit import kai-ci` or `evalkit import kai-eval`)")))


def recorded_outcome(grades_path: Path, case_key: str, shown: str) -> JudgeOutcome:
    """The judge outcome of a case from a recorded-grades file: status judged, source recorded,
    model = the grader; ``not_configured``-like ``judge_error`` naming the file when it has no verdict for the
    case or a verdict breaks the rubric's scales."""

    try:
        grades = load_recorded_grades(grades_path, shown)
    except InputError as exc:
        return JudgeOutcome(status="judge_error", source="recorded", error=str(exc.problems[0]))
    rubric = shipped(grades.rubric)
    failed = JudgeOutcome(status="judge_error", source="recorded", model=grades.grader, rubric=rubric.name)
    verdicts = grades.cases.get(case_key)
    if not verdicts:
        return failed.model_copy(update={"error": f"{shown}: no recorded verdict for {case_key}"})
    answers = [{**v.values, "detailed_notes": v.notes} for v in verdicts]
    try:  # strictly against the rubric's scales, aggregated like a judge's samples
        outcome = outcome_of(rubric, answers, model=grades.grader)
    except ValueError as exc:
        return failed.model_copy(update={"error": (
            f"{shown}: a verdict on {case_key} ({', '.join(v.where for v in verdicts)}) breaks rubric {rubric.name}: "
            f"{str(exc)[:500]}")})
    return outcome.model_copy(update={"source": "recorded", "reasoning": [v.notes for v in verdicts if v.notes]})


def recorded_judge_metrics(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                           grades: GradesArtifact) -> Metrics:
    """The recorded judge's metrics beside a case's own (agentic: kai-eval with its application tree)."""

    if grades.judge is None or grades.judge.source != "recorded":
        return {}
    return judge_metrics(cfg, case, output, execution, grades)
