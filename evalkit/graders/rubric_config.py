"""Judge rubrics as configuration: which fields the migration judge scores, on which scale, and how.

A rubric is a YAML file (shipped ones in ``evalkit/rubrics/``, or a path of the project's own) that
declares its fields, each with a scale (an integer range, the unit interval 0-1, or a boolean), a
direction (higher or lower is better) and a description, and the two Jinja prompt templates that ask
a model for them. CodeJudge's rubric (``codejudge``) is the migration default; Konveyor Kai CI's
(``kai_ci``) and kai-eval's (``kai_eval``) ship as examples.

Everything downstream follows the declaration: the verdict model a judge's answer is validated
against (``verdict_model``), the value a file decided without a model gets (``RubricField.decided``),
and the metric metadata generated into the one registry (``metric_infos``). Judge-reliability code
reads ``RubricField.kind`` / ``kappa_weights`` (ordinal: quadratic weights; boolean: unweighted).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Literal

from pydantic import Field, create_model, field_validator, model_validator

from evalkit.errors import InputError, Problem
from evalkit.fsutil import digest
from evalkit.metrics.metric_info import LEADERBOARD_METRICS, METRICS, MetricInfo
from evalkit.models import Model
from evalkit.names import NAME_PATTERN
from evalkit.outcomes import RubricVerdict
from evalkit.kind_registry import kind as kind_named, kind, known
from evalkit.llm.prompts import PROMPTS_DIR, environment
from evalkit.plugins import OWN, registry
from evalkit.yamlio import line_of, load_yaml, validate

if TYPE_CHECKING:
    from evalkit.cases import Case
    from evalkit.config import Config

RUBRICS_DIR = Path(__file__).resolve().parents[1] / "rubrics"
"""Where the shipped rubrics live (package data)."""
DEFAULT_RUBRIC = "codejudge"
"""The migration judge's rubric when neither the suite nor the judge config names one."""
FIELD_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"
"""A field name is a JSON key the judge writes: a letter, then letters, digits or '_'."""
METRIC_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
"""Metric names are lower snake case (they are keys of scores.json and report.json)."""
RESERVED_FIELDS = ("detailed_notes",)
"""Keys every verdict may carry besides the rubric's fields."""

FieldKind = Literal["ordinal", "boolean", "continuous"]


class IntegerScale(Model):
    """Whole numbers from ``min`` to ``max`` (both included), e.g. 1-5 or 1-10."""

    type: Literal["integer"] = "integer"
    """Scale tag."""
    min: int
    """Lowest value a judge may give."""
    max: int
    """Highest value a judge may give."""

    @model_validator(mode="after")
    def _ordered(self) -> IntegerScale:
        if self.max <= self.min:
            raise ValueError(f"max ({self.max}) must be greater than min ({self.min})")
        return self


class UnitScale(Model):
    """A real number from 0 to 1 (both included)."""

    type: Literal["unit"] = "unit"
    """Scale tag."""


class BooleanScale(Model):
    """true or false."""

    type: Literal["boolean"] = "boolean"
    """Scale tag."""


Scale = Annotated[IntegerScale | UnitScale | BooleanScale, Field(discriminator="type")]


def _words(name: str) -> list[str]:
    """``functionalParity`` / ``code_quality_score`` -> their lower-case words."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [w.lower() for w in spaced.split("_") if w]


class RubricField(Model):
    """One value the judge gives per migrated file."""

    name: str = Field(pattern=FIELD_PATTERN)
    """Key of the value in the judge's JSON answer (e.g. ``effectiveness``, ``is_compilable``)."""
    description: str
    """What the value means, shown to the judge and on the report pages."""
    scale: Scale
    """``{type: integer, min, max}``, ``{type: unit}`` (0-1) or ``{type: boolean}``."""
    direction: Literal["higher", "lower"] = "higher"
    """Which end is better: ``higher`` (e.g. a quality score, validCode) or ``lower`` (e.g. unnecessaryChanges)."""
    label: str | None = None
    """Short column title on pages; default: 'Judge ' and the name's words."""
    metric: str | None = Field(default=None, pattern=METRIC_PATTERN)
    """Metric name in scores.json and report.json; default: ``judge_`` and the name in snake case."""
    weight: float | None = Field(default=None, ge=0)
    """Weight in the rubric's overall score; default 1 for numeric fields, 0 for booleans (never in it)."""
    decided: float | bool | None = None
    """Value given without a model (file empty, unchanged, incomplete or not parsing); default: the
    scale's worst end for the direction. CodeJudge and Kai give 0 to every integer score."""

    @model_validator(mode="after")
    def _consistent(self) -> RubricField:
        if self.name in RESERVED_FIELDS:
            raise ValueError(f"field name {self.name!r} is reserved")
        if isinstance(self.scale, BooleanScale):
            if self.weight:
                raise ValueError("a boolean field cannot weigh in the overall score (weight must be 0)")
            if self.decided is not None and not isinstance(self.decided, bool):
                raise ValueError("decided must be true or false for a boolean field")
        elif isinstance(self.decided, bool):
            raise ValueError("decided must be a number for a numeric field")
        if isinstance(self.scale, UnitScale) and self.decided is not None and not 0 <= self.decided <= 1:
            raise ValueError("decided must be between 0 and 1 for a unit field")
        return self

    # --- what kind of value this is (for agreement statistics and importers) -----------------------
    @property
    def kind(self) -> FieldKind:
        """ordinal (integer range), boolean, or continuous (0-1)."""
        if isinstance(self.scale, IntegerScale):
            return "ordinal"
        return "boolean" if isinstance(self.scale, BooleanScale) else "continuous"

    @property
    def is_ordinal(self) -> bool:
        """An integer range (Cohen's kappa with quadratic weights)."""
        return self.kind == "ordinal"

    @property
    def is_boolean(self) -> bool:
        """true / false (unweighted Cohen's kappa)."""
        return self.kind == "boolean"

    @property
    def is_continuous(self) -> bool:
        """A 0-1 real number (no kappa: compare as numbers)."""
        return self.kind == "continuous"

    @property
    def kappa_weights(self) -> Literal["quadratic", "unweighted"] | None:
        """How Cohen's kappa weighs disagreements on this field; None for continuous fields."""
        return {"ordinal": "quadratic", "boolean": "unweighted"}.get(self.kind)  # type: ignore[return-value]

    def categories(self) -> list[int] | list[bool] | None:
        """Every value a judge may give (ordinal and boolean fields); None for continuous ones."""
        if isinstance(self.scale, IntegerScale):
            return list(range(self.scale.min, self.scale.max + 1))
        return [False, True] if isinstance(self.scale, BooleanScale) else None

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "higher"

    @property
    def low(self) -> float:
        """Lowest value on the scale (booleans: 0 for false)."""
        return float(self.scale.min) if isinstance(self.scale, IntegerScale) else 0.0

    @property
    def high(self) -> float:
        """Highest value on the scale (booleans: 1 for true)."""
        return float(self.scale.max) if isinstance(self.scale, IntegerScale) else 1.0

    def worst(self) -> float | bool:
        """The scale's worst end for the direction."""
        if isinstance(self.scale, BooleanScale):
            return not self.higher_is_better
        value = self.low if self.higher_is_better else self.high
        return int(value) if isinstance(self.scale, IntegerScale) else value

    def decided_value(self) -> float | bool:
        """What a file decided without a model gets for this field."""
        return self.worst() if self.decided is None else self.decided

    def check(self, value: object) -> float | bool:
        """``value`` validated strictly against the scale (ValueError saying what was expected)."""
        return field_validator_of(self)(value)

    # --- names and words on pages -----------------------------------------------------------------
    @property
    def metric_name(self) -> str:
        return self.metric or "judge_" + "_".join(_words(self.name))

    @property
    def display(self) -> str:
        return self.label or "Judge " + " ".join(_words(self.name))

    def scale_text(self) -> str:
        """The scale in words, e.g. 'an integer from 1 to 10', 'a number from 0 to 1', 'true or false'."""
        if isinstance(self.scale, IntegerScale):
            return f"an integer from {self.scale.min} to {self.scale.max}"
        return "a number from 0 to 1" if isinstance(self.scale, UnitScale) else "true or false"

    def example(self) -> int | float | bool:
        """A placeholder value of the right type for the answer-format example."""
        if isinstance(self.scale, IntegerScale):
            return self.scale.min
        return 0.0 if isinstance(self.scale, UnitScale) else False

    def effective_weight(self) -> float:
        if self.weight is not None:
            return self.weight
        return 0.0 if self.is_boolean else 1.0

    def range_text(self) -> str:
        """The per-case range of the metric, counting the decided value (registry ``scale``)."""
        if self.is_boolean:
            return "0-1"
        decided = self.decided_value()
        low = min(self.low, float(decided))
        high = max(self.high, float(decided))
        return f"{low:g}-{high:g}"


class JudgeRubric(Model):
    """A rubric file: the judge's fields and the prompt templates that ask for them."""

    name: str = Field(pattern=NAME_PATTERN, max_length=64)
    """Rubric name (the file name of shipped ones, without .yaml)."""
    description: str = ""
    """What the rubric measures and where it comes from, shown on pages."""
    fields: list[RubricField] = Field(min_length=1)
    """The values the judge gives for each file."""
    system_template: str
    """Jinja template of the system prompt: a shipped prompt name (``templates/prompts/``) or a path
    relative to the rubric file."""
    user_template: str
    """Jinja template of the user message (the file under review), same lookup as ``system_template``."""
    note: str = ""
    """Optional grader note: extra guidance the generic templates add to the instructions."""
    mean_metric: str | None = Field(default=None, pattern=METRIC_PATTERN)
    """Metric name of the overall score (weighted mean of the weighted fields); default
    ``judge_<name>_mean``. CodeJudge's is ``judge_mean``."""
    mean_label: str | None = None
    """Column title of the overall score; default 'Judge score (<name>)'."""
    base_dir: str | None = Field(default=None, exclude=True)
    """Folder the template paths resolve against (set on load; not part of the file)."""

    @field_validator("fields")
    @classmethod
    def _unique(cls, fields: list[RubricField]) -> list[RubricField]:
        for what, values in (("field names", [f.name for f in fields]), ("metric names", [f.metric_name for f in fields])):
            dupes = sorted({v for v in values if values.count(v) > 1})
            if dupes:
                raise ValueError(f"duplicate {what}: {dupes}")
        return fields

    @model_validator(mode="after")
    def _one_overall_scale(self) -> JudgeRubric:
        weighted = [f for f in self.fields if f.effective_weight() > 0]
        if not weighted:
            raise ValueError("at least one numeric field must weigh in the overall score (weight > 0)")
        if len({(f.low, f.high, f.kind) for f in weighted}) > 1:
            raise ValueError("fields that weigh in the overall score must share one scale: "
                             + ", ".join(f"{f.name} ({f.scale_text()})" for f in weighted))
        lower = [f.name for f in weighted if not f.higher_is_better]
        if lower:
            raise ValueError(f"a lower-is-better field cannot weigh in the overall score: {lower} (set weight: 0)")
        return self

    def field(self, name: str) -> RubricField:
        return next(f for f in self.fields if f.name == name)

    @property
    def numeric(self) -> list[RubricField]:
        """Integer and 0-1 fields (their means are the outcome's ``scores``)."""
        return [f for f in self.fields if not f.is_boolean]

    @property
    def booleans(self) -> list[RubricField]:
        """Boolean fields (majority over samples: the outcome's ``flags``)."""
        return [f for f in self.fields if f.is_boolean]

    @property
    def overall_metric(self) -> str:
        return self.mean_metric or f"judge_{self.name.lower().replace('-', '_').replace('.', '_')}_mean"

    @property
    def overall_label(self) -> str:
        return self.mean_label or f"Judge score ({self.name})"

    def overall(self, values: dict[str, float]) -> float | None:
        """Weighted mean of the weighted fields present in ``values`` (by field name)."""
        parts = [(f.effective_weight(), values[f.name]) for f in self.fields
                 if f.effective_weight() > 0 and values.get(f.name) is not None]
        total = sum(w for w, _ in parts)
        return sum(w * v for w, v in parts) / total if total else None

    def overall_range(self) -> str:
        weighted = [f for f in self.fields if f.effective_weight() > 0]
        lows = [min(f.low, float(f.decided_value())) for f in weighted]
        return f"{min(lows):g}-{max(f.high for f in weighted):g}"

    # --- templates ----------------------------------------------------------------------------------
    def template_path(self, ref: str) -> Path:
        """Where a template reference points: a shipped prompt, else a path beside the rubric file."""

        if self.base_dir is not None and ("/" in ref or "\\" in ref or (Path(self.base_dir) / ref).is_file()):
            return (Path(self.base_dir) / ref).resolve()
        return PROMPTS_DIR / ref

    def render(self, ref: str, **context: object) -> str:
        """Render one of the rubric's templates with ``context`` plus ``rubric`` (this rubric)."""

        path = self.template_path(ref)
        template = environment(str(path.parent)).get_template(path.name)
        return template.render(rubric=self, **context).strip() + "\n"

    def version(self) -> str:
        """Digest of the declaration and both templates' sources: changes when anything a verdict depends on does."""
        sources = {ref: self.template_path(ref).read_text(encoding="utf-8")
                   for ref in (self.system_template, self.user_template)}
        return digest({"rubric": self.model_dump(mode="json"), "templates": sources})


# --- the verdict: a model generated from the rubric ------------------------------------------------------
def field_validator_of(field: RubricField) -> Callable[[object], float | bool]:
    name, scale = field.name, field.scale

    def integer(value: Any) -> int:
        if isinstance(value, bool):
            raise ValueError(f"{name} must be {field.scale_text()}, not a boolean")
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or not scale.min <= value <= scale.max:  # type: ignore[union-attr]
            raise ValueError(f"{name} must be {field.scale_text()}, got {value!r}")
        return value

    def unit(value: Any) -> float:
        if isinstance(value, bool):
            raise ValueError(f"{name} must be {field.scale_text()}, not a boolean")
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise ValueError(f"{name} must be {field.scale_text()}, got {value!r}") from None
        if not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError(f"{name} must be {field.scale_text()}, got {value!r}")
        return float(value)

    def boolean(value: Any) -> bool:
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, got {value!r}")
        return value

    return {"integer": integer, "unit": unit, "boolean": boolean}[scale.type]


def _python_type(field: RubricField) -> Any:
    return {"integer": int, "unit": float, "boolean": bool}[field.scale.type]


@cache
def _verdict_model(rubric_json: str) -> type[Model]:
    from pydantic import BeforeValidator  # deferred: pydantic internals, only here

    rubric = JudgeRubric.model_validate_json(rubric_json)
    fields: dict[str, Any] = {
        f.name: (Annotated[_python_type(f), BeforeValidator(field_validator_of(f)), Field(description=f.description)], ...)
        for f in rubric.fields
    }
    fields["detailed_notes"] = (str, Field(default="", description="The judge's key reasons."))
    model = create_model(f"Verdict_{re.sub(r'[^A-Za-z0-9_]', '_', rubric.name)}", __base__=Model, **fields)
    model.__doc__ = f"One answer of the migration judge under rubric {rubric.name!r}, strictly validated."
    return model


def verdict_model(rubric: JudgeRubric) -> type[Model]:
    """The pydantic model a judge answer under ``rubric`` must satisfy: every field, strictly on its scale."""
    return _verdict_model(rubric.model_dump_json())


def as_recorded(verdict: Model) -> RubricVerdict:
    """A validated rubric verdict as the generic, schema'd record."""
    return RubricVerdict.model_validate(verdict.model_dump(mode="json"))


# --- loading -----------------------------------------------------------------------------------------------
def shipped_names() -> list[str]:
    """Names of the rubrics shipped with evalkit."""
    return sorted(p.stem for p in RUBRICS_DIR.glob("*.yaml"))


def is_path_ref(ref: str) -> bool:
    return ref.endswith((".yaml", ".yml")) or "/" in ref or "\\" in ref


@cache
def _load_file(path: str, shown: str, mtime_ns: int = 0, registered: bool = True) -> JudgeRubric:
    """The rubric at ``path`` (cached by path, name shown and modification time), its metrics registered unless
    ``registered`` is False."""

    node = load_yaml(Path(path), shown)
    if not isinstance(node, dict):
        raise InputError(Problem(shown, 1, "expected a mapping with keys name, description, fields, "
                                           "system_template, user_template"))
    rubric = validate(JudgeRubric, node, shown)
    rubric = rubric.model_copy(update={"base_dir": str(Path(path).parent)})

    for key in ("system_template", "user_template"):
        ref = getattr(rubric, key)
        if not rubric.template_path(ref).is_file():
            raise InputError(Problem(shown, line_of(node, (key,)),
                                     f"{key}: template {ref!r} not found (expected a shipped prompt name or a path "
                                     f"relative to {shown})"))
    try:
        if registered:
            register(rubric)
    except MetricConflict as exc:
        index = next((i for i, f in enumerate(rubric.fields) if f.metric_name == exc.name), None)
        loc = ("fields", index, "metric" if node["fields"][index].get("metric") else "name") if index is not None \
            else ("mean_metric",) if "mean_metric" in node else ("name",)
        raise InputError(Problem(shown, line_of(node, loc), str(exc))) from None
    return rubric


def load_rubric(ref: str | None, base: str | Path | None = None, shown_base: str | None = None) -> JudgeRubric:
    """The rubric ``ref`` names: a shipped name (``codejudge``, ``kai_ci``, ``kai_eval``) or a YAML path
    relative to ``base`` (the folder of the file that names it). InputError (file:line) when it is
    missing or invalid. None means the default rubric."""
    ref = ref or DEFAULT_RUBRIC
    if not is_path_ref(ref):
        path = RUBRICS_DIR / f"{ref}.yaml"
        if not path.is_file():
            raise InputError(Problem(shown_base or "rubric", None,
                                     f"unknown rubric {ref!r} (expected one of {', '.join(shipped_names())} "
                                     "or a path to a rubric .yaml file)"))
        return _load_file(str(path), f"evalkit/rubrics/{ref}.yaml", path.stat().st_mtime_ns)
    path = Path(ref) if Path(ref).is_absolute() or base is None else Path(base) / ref
    shown = str(Path(shown_base) / ref) if shown_base and not Path(ref).is_absolute() else str(path)
    if not path.is_file():
        raise InputError(Problem(shown, None, "rubric file not found (expected a rubric .yaml file)"))
    return _load_file(str(path.resolve()), shown, path.stat().st_mtime_ns)


def shipped(name: str) -> JudgeRubric:
    """One shipped rubric by name."""
    return load_rubric(name)


def shipped_unregistered(name: str) -> JudgeRubric:
    """One shipped rubric by name, its metrics not registered: for a module that loads it at import (registering
    asks evalkit's suite kinds, which may be what is importing it); evalkit.metrics.registry registers it."""
    path = RUBRICS_DIR / f"{name}.yaml"
    return _load_file(str(path), f"evalkit/rubrics/{name}.yaml", path.stat().st_mtime_ns, False)


def resolved_ref(ref: str, base: str | Path) -> str:
    """A rubric reference as it can be loaded from anywhere: a shipped name, or the file's absolute path."""
    return ref if not is_path_ref(ref) else str((Path(base) / ref).resolve())


def rubric_versions(cfg: Config) -> dict[str, str]:
    """Version (``JudgeRubric.version``) of every rubric the project names: the judge config's and each
    suite's (read from the suites' suite.yaml); empty when it names none (CodeJudge's, part of evalkit).
    Part of the grade stage's config slice, so editing a rubric or its templates regrades; a rubric that
    does not load is left to ``evalkit check`` (the project loader reports it at file:line)."""
    refs: dict[str, str] = {}
    if cfg.judge.rubric:
        refs[cfg.judge.rubric] = resolved_ref(cfg.judge.rubric, cfg.root or ".")
    for suite_yaml in sorted(Path(cfg.cases_path).glob("*/suite.yaml")):
        ref = _suite_rubric_ref(suite_yaml)
        if ref:
            refs[f"{suite_yaml.parent.name}:{ref}"] = resolved_ref(ref, suite_yaml.parent)
    out: dict[str, str] = {}
    for key, ref in sorted(refs.items()):
        try:
            out[key] = load_rubric(ref).version()
        except (InputError, OSError):
            out[key] = "unreadable"
    return out


_RUBRIC_LINE = re.compile(r"^rubric[ \t]*:[ \t]*(?P<ref>[^#\n]*?)[ \t]*(?:#.*)?$", re.MULTILINE)


def _suite_rubric_ref(suite_yaml: Path) -> str | None:
    """The rubric a suite.yaml names (its top-level ``rubric:`` line), read without a YAML parse: this runs
    for every grade task. The loader validates the file itself (evalkit check)."""
    try:
        text = suite_yaml.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = _RUBRIC_LINE.search(text)
    ref = found["ref"].strip().strip("'\"") if found else ""
    return ref or None


def rubric_problem(ref: str, base: str | Path, shown: str, key: str, line: int | None) -> InputError | None:
    """None when the rubric ``ref`` (named at ``shown``:``line`` under ``key``) loads; else its problems: a
    missing file or unknown name at the naming file's line, a bad rubric file at its own file:line."""
    try:
        load_rubric(ref, base, str(Path(shown).parent))
    except InputError as exc:
        return InputError([Problem(shown, line, f"{key}: {p.message}" + ("" if p.file in (str(Path(shown).parent), "rubric")
                                                                          else f" ({p.file})"))
                           if p.line is None else p for p in exc.problems])
    return None


def suite_rubric_problem(ref: str, suite_dir: Path, shown_suite: str, line: int | None,
                         kind: str, judged: bool = False) -> InputError | None:
    """The problems of the rubric a suite.yaml names (see ``rubric_problem``), or None. ``judged``: a patch or e2e
    suite with `judge:` (evalkit.graders.judge_changes), graded by the rubric judge too; an agentic suite's rubric
    declares the fields of the verdicts a recorded judge brings (`evalkit import kai-eval --app`)."""

    if not (known(kind) and kind_named(kind).judging.takes_rubric) and not judged:  # agentic: a recorded judge's fields
        return InputError(Problem(shown_suite, line, f"rubric: only migration suites have a judge rubric, and patch or "
                                                     f"e2e suites with `judge:`, and agentic suites for a recorded "
                                                     f"judge's verdicts (this suite is kind {kind}; generation "
                                                     f"suites list `criteria` per case)"))
    return rubric_problem(ref, suite_dir, shown_suite, "rubric", line)


def rubric_for(cfg: Config, case: Case) -> JudgeRubric:
    """The rubric a migration case is judged with: its suite's, else the judge config's, else CodeJudge's."""
    if getattr(case, "rubric", None):
        return load_rubric(case.rubric)
    ref = cfg.judge.rubric
    return load_rubric(resolved_ref(ref, cfg.root or ".") if ref else None)


def config_rubric_problem(cfg: Config, node: object, shown: str) -> InputError | None:
    """The problems of the rubric ``judge.rubric`` names (see ``rubric_problem``), or None."""
    if not cfg.judge.rubric:
        return None

    return rubric_problem(cfg.judge.rubric, cfg.root, shown, "judge.rubric", line_of(node, ("judge", "rubric")))


class MetricConflict(ValueError):
    """A rubric declares a metric name the registry already holds with other metadata."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


_FROM_FILES: set[str] = set()
"""Metrics registered from a project's own rubric file (the rest are evalkit's: built in or shipped rubrics)."""


def register(rubric: JudgeRubric) -> None:
    """Generate ``rubric``'s metric metadata into the one registry (evalkit.metrics.registry.METRICS).

    Registering the same declaration again changes nothing. A metric name evalkit already declares
    (built in, or a shipped rubric's) with other metadata is refused; one a project's rubric file
    declared before is replaced (the file changed, or another project is loaded in this process)."""
    own = rubric.base_dir is not None and Path(rubric.base_dir).resolve() != RUBRICS_DIR
    infos = metric_infos(rubric)
    for info in infos:
        known = METRICS.get(info.name)
        if known is not None and known != info and not (own and info.name in _FROM_FILES):
            raise MetricConflict(info.name, f"metric {info.name!r} is already declared with other metadata "
                                            f"({known.display!r}, scale {known.scale}); give this field its own "
                                            f"`metric:` name (or `mean_metric:` for the overall score)")
    for info in infos:
        if own and (info.name in _FROM_FILES or info.name not in METRICS):
            METRICS[info.name] = info
            _FROM_FILES.add(info.name)
        else:
            METRICS.setdefault(info.name, info)
    LEADERBOARD_METRICS.rank_beside("judge_mean", rubric.overall_metric)  # any rubric's overall score ranks like CodeJudge's


# --- metric metadata generated into the one registry -------------------------------------------------------
def metric_infos(rubric: JudgeRubric) -> list[MetricInfo]:
    """The registry entries (evalkit.metrics.registry.MetricInfo) of ``rubric``'s fields and overall score."""
    infos = []
    for f in rubric.numeric + rubric.booleans:
        decided = f.decided_value()
        if f.is_boolean:
            text = (f"Share of cases where, by the LLM judge, {f.description} ({'true' if decided else 'false'} "
                    "when decided without a model).")
        elif f.is_ordinal:
            text = (f"LLM judge score {f.scale.min}-{f.scale.max} ({decided:g} when decided without a model: "  # type: ignore[union-attr]
                    f"the file is empty, unchanged, incomplete or does not parse): {f.description}.")
        else:
            text = (f"LLM judge score 0-1 ({decided:g} when decided without a model: the file is empty, unchanged, "
                    f"incomplete or does not parse): {f.description}.")
        infos.append(MetricInfo(
            name=f.metric_name, display=f.display, description=text,
            aggregate="rate" if f.is_boolean else "mean", binary=f.is_boolean,
            higher_is_better=f.higher_is_better, scale=f.range_text(), kinds=judged_kinds(), judge_field=True))
        if f is rubric.numeric[-1]:  # the overall score right after the scores it averages
            infos.append(_overall_info(rubric, MetricInfo))
    return infos


def judged_kinds() -> tuple[str, ...]:
    """evalkit's own suite kinds a judge rubric's metrics apply to: those the rubric judge grades (always, with
    `judge:`, or a recorded judge's verdicts). Outside kinds are not imported here (this runs while the metric
    registry loads, which an outside kind's module may itself be importing)."""

    own = [n for n in registry("kinds").names() if registry("kinds").source(n) == OWN]
    return tuple(n for n in own if (j := kind(n).judging).always_judged or j.changes_judge or j.takes_rubric)


def _overall_info(rubric: JudgeRubric, info: Any) -> Any:
    weighted = [f for f in rubric.fields if f.effective_weight() > 0]
    equal = len({f.effective_weight() for f in weighted}) == 1
    parts = ", ".join(f.name if equal else f"{f.name} x {f.effective_weight():g}" for f in weighted)
    return info(name=rubric.overall_metric, display=rubric.overall_label, aggregate="mean",
                scale=rubric.overall_range(), headline=True, primary=10, kinds=judged_kinds(), judge_field=True,
                description=f"{'Mean' if equal else 'Weighted mean'} of the judge's {len(weighted)} scores under "
                            f"rubric {rubric.name} ({rubric.overall_range()}; the decided values when the file "
                            f"is decided without a model): {parts}.")
