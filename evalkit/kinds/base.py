"""The one object a suite kind module exports as ``KIND``: what its cases hold and how each stage treats them.

A kind module (``evalkit.kinds.migration``, or an outside package's module registered under the
``evalkit.kinds`` entry-point group) subclasses ``Kind``, sets the declarative attributes (its name, models and
metrics, and three policies: ``Execution``, what it runs besides generating; ``Judging``, how a model grades it;
``Answers``, what its cases and answers hold) and overrides the methods whose default does not fit. Stages, the task graph, the judge dispatch, the gold system, the
estimate and the report ask the case's kind (``evalkit.kinds.kind(case.kind)``); none compares its name.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from evalkit.contracts import AnyKindScorer, JudgeContext, JudgeResult, Metrics

from evalkit.artifacts import Sample, SystemArtifacts
from evalkit.health_models import Ablation, AblationRun
from evalkit.kind_registry import UNKNOWN, KindContract
from evalkit.lazy_modules import later

if TYPE_CHECKING:
    from evalkit.artifacts import ExecutionArtifact, OutputArtifact
    from evalkit.cases import Case
    from evalkit.checks_deep import Locator
    from evalkit.config import Config, System
    from evalkit.errors import Problem
    from evalkit.llm.cache import ResponseCache
    from evalkit.llm.calls import LLMRequest
    from evalkit.llm.settings import JudgeSettings
    from evalkit.models import Model
    from evalkit.outcomes import GradesExtra
    from evalkit.case_detail import CaseDetail
    from evalkit.stages.validate import Validation

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit import checks_deep as checks_deep_code
    from evalkit.systems import gold as gold_code
    from evalkit.graders import judge_dispatch as judging
    from evalkit.stages import score_entropy as score_entropy_code
    from evalkit.stages import validate as validate_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    checks_deep_code = later("evalkit.checks_deep")
    gold_code = later("evalkit.systems.gold")
    judging = later("evalkit.graders.judge_dispatch")
    score_entropy_code = later("evalkit.stages.score_entropy")
    validate_code = later("evalkit.stages.validate")

__all__ = ["Answers", "Execution", "Judging", "Kind", "Metrics", "Scorer", "put_extra"]

Scorer = AnyKindScorer
"""A kind's scorer: ``(ScoreContext) -> ScoreResult | {metric: value}`` (evalkit.contracts.KindScorer), or the older
``(cfg, case, output, execution, grades) -> {metric: value}`` (evalkit.stages.score calls either)."""


@dataclass(frozen=True)
class Execution:
    """What a kind runs besides generating an answer: the sandboxed execute stage and the reference's validation."""

    executed: bool = False
    """An execute stage runs each answer (in the sandbox) between generate and grade (``Kind.execute``)."""
    validated: bool = False
    """The validate task checks each case's reference before scores count (evalkit.stages.validate)."""
    execute_reads_validation: bool = False
    """The execute stage reads the case's validation (``environment_broken``): it waits for it."""
    validation_label: str = "reference validation"
    """How a failed validation is named in a score's reason."""
    final_tree_after_execute: bool = False
    """The answer's final change is known only after the execute stage (e2e: its iterations)."""


@dataclass(frozen=True)
class Judging:
    """How a model grades the kind's answers."""

    graded_by_model: bool = False
    """The grade stage asks a model (judge, rubric or ragas): the batch judge collects its answers first."""
    always_judged: bool = False
    """Every output is graded by the rubric judge (not only where the suite says `judge:`)."""
    changes_judge: bool = False
    """suite.yaml may say `judge:` (the rubric judge reads the files an answer changed)."""
    takes_rubric: bool = False
    """suite.yaml may name a `rubric:` without `judge:` (the judge's, or a recorded judge's verdict fields)."""
    audited: bool = False
    """The judge's verdicts on this kind are audited, re-judged and met by people's labels."""
    recorded_verdict_alone: bool = False
    """A recorded judge's verdict on code the import does not hold is the case's only score."""


@dataclass(frozen=True)
class Answers:
    """What the kind's cases and answers hold, beyond its models."""

    code_answer: bool = False
    """The answer is one code file: an unanswered case counts as not parsing and not complete."""
    criteria: bool = False
    """Cases list rubric `criteria` whose pass rates the suite page shows."""
    solved_store: bool = False
    """suite.yaml may name a solved-incident store that attaches a `solved_example` to each case."""


POLICIES: dict[str, type[Execution] | type[Judging] | type[Answers]] = {
    "execution": Execution, "judging": Judging, "answers": Answers}
"""``Kind`` attribute -> its policy class."""
FLAT_NAMES = {f.name: attr for attr, policy in POLICIES.items() for f in fields(policy)}
"""A policy field -> the ``Kind`` attribute holding it: a kind written before the policies set them as class
attributes of their own (``executed = True``); ``Kind.__init_subclass__`` moves them into the policies."""
RETIRED = ("rubric_graded",)
"""Flags a kind may still set that nothing reads any more (accepted and dropped)."""


class Kind(KindContract):
    """A suite kind. Class attributes declare it; methods have defaults a small kind keeps."""

    name: ClassVar[str] = ""
    """The name suite.yaml's `kind:` gives."""
    description: ClassVar[str] = ""
    """One sentence: what a case of this kind is."""
    inputs: ClassVar[type[Model] | None] = None
    """Model of a case's `inputs` (None: a free-form mapping)."""
    reference: ClassVar[type[Model] | None] = None
    """Model of a case's `reference` (None: a free-form mapping)."""
    execution: ClassVar[Execution] = Execution()
    """What the kind runs besides generating (the execute stage, the reference's validation)."""
    judging: ClassVar[Judging] = Judging()
    """How a model grades the kind's answers."""
    answers: ClassVar[Answers] = Answers()
    """What the kind's cases and answers hold."""
    metrics: ClassVar[tuple[str, ...]] = ()
    """Metric names (evalkit.metrics.registry) this kind's scorers write, beyond the common ones."""
    leaderboard: ClassVar[tuple[str, ...]] = ()
    """The metric a suite's leaderboard ranks by, with fallbacks in order (the first with values wins)."""
    templates: ClassVar[Path | None] = None
    """Folder holding the case page partial ``case_<name>.html.j2`` (None: evalkit's site templates)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        """Fold the yes/no attributes of a kind written before the policies (``executed = True``) into them."""
        super().__init_subclass__(**kwargs)
        flat = {name: value for name, value in vars(cls).items() if name in FLAT_NAMES}
        for attr in POLICIES:
            mine = {name: value for name, value in flat.items() if FLAT_NAMES[name] == attr}
            if mine:
                setattr(cls, attr, replace(getattr(cls, attr), **mine))
        for name in [*flat, *(n for n in RETIRED if n in vars(cls))]:
            delattr(cls, name)

    # --- the stage chain ----------------------------------------------------------------------------------
    @property
    def stages(self) -> list[str]:
        """The stages of one (system, case), in order."""
        return ["generate"] + (["execute"] if self.execution.executed else []) + ["grade", "score"]

    # --- what a case holds --------------------------------------------------------------------------------
    def main_file(self, case: Case) -> str | None:
        """The file the case is about (graded for syntax, compared by CodeBLEU), None when none."""
        return getattr(case.inputs, "main_file", None)  # a kind of another package may name one

    def expected_code(self, case: Case) -> str | None:
        """The reference code CodeBLEU compares the main file with."""
        return None

    def legacy_text(self, case: Case) -> str | None:
        """The file before the change (an answer returning it unchanged is degenerate)."""
        return None

    def codebleu_baseline(self, cfg: Config, case: Case, reference: str) -> float | None:
        """CodeBLEU of a do-nothing answer, for `codebleu_gain` (None: no gain metric)."""
        return None

    def prompt_context(self, case: Case) -> dict[str, object]:
        """Extra variables of the `anthropic` adapter's prompt template."""
        return {}

    def parse_answer(self, case: Case, blocks: list[tuple[str, str]]) -> dict[str, str] | None:
        """Files of a model's answer from its fenced (info, body) blocks (None: one file per named block)."""
        return None

    def gold(self, case: Case) -> Sample:
        """What a perfect system answers, built from the case's reference (the `gold` system)."""


        return gold_code.reference_sample(case)

    def canary(self, case: Case, variant: str) -> Sample | None:
        """The answer of canary ``variant`` (evalkit.graders.canaries.VARIANTS) to the case, made from the case
        itself (no model); None where the variant means nothing for the kind (the canary skips the case)."""

        return Sample() if variant == "empty" else None

    # --- execute ------------------------------------------------------------------------------------------
    def environment_broken(self, cfg: Config, case: Case) -> str | None:
        """Why no answer of the case is run (a broken environment found by validation), or None."""
        return None

    def execute(self, cfg: Config, system: System, case: Case, output: OutputArtifact) -> list[dict[str, object]]:
        """One run (sandbox result as JSON) per sample of ``output``; only kinds with ``executed``."""
        raise NotImplementedError(f"suite kind {self.name} declares no execute stage")

    # --- validate -----------------------------------------------------------------------------------------
    def validate(self, cfg: Config, case: Case) -> Validation:
        """The case's reference checked against the case (a ``Validation``)."""


        return validate_code.validate_reference(cfg, case)

    def gold_problems(self, case: Case, text: str | None, deleted: bool) -> list[str]:
        """What is wrong with the gold answer's main file ``text`` beyond syntax and completeness."""
        return []

    def more_validation(self, cfg: Config, case: Case) -> tuple[list[str], bool]:
        """Further problems of the reference, and whether there was anything to check."""
        return [], False

    # --- case health (evalkit.stages.health) --------------------------------------------------------------
    ablations_checked_by: ClassVar[Literal["tests", "reference"]] = "reference"
    """What checks an ablation: the case's tests (run in the sandbox) or its graders against the reference."""

    def ablations(self, case: Case) -> list[Ablation]:
        """Partial answers derived from the case's reference, in order (the run keeps the first
        `validation.ablations`); each should fail the case. Default: none (the case's strength is not measured)."""
        return []

    def no_ablation_reason(self, case: Case) -> str:
        """Why the kind derives no ablation of this case (shown as the case's strength reason)."""
        return f"the {self.name} kind derives no partial answer from a reference"

    def try_ablation(self, cfg: Config, case: Case, ablation: Ablation) -> AblationRun:
        """Check one ablation with the case's own tests or graders: `passed` when the case accepts it."""
        return AblationRun(name=ablation.name, description=ablation.description, outcome="error",
                           detail=f"the {self.name} kind has no check for ablations")

    def leaks(self, cfg: Config, case: Case) -> list[str] | None:
        """What the tree a system is handed gives away of the reference (None: the kind hands no tree)."""
        return None

    # --- grade --------------------------------------------------------------------------------------------
    def deleted_is_answer(self, case: Case, sample: Sample, main_file: str | None) -> bool:
        """The answer deletes the main file and the reference does too: nothing to parse or judge."""
        return False

    def files_syntax(self, case: Case) -> bool:
        """Without a main file, every file of the answer is parsed by its extension."""
        return False

    def grade_model(self, cfg: Config, case: Case, sample: Sample, main_file: str | None,
                    execution: ExecutionArtifact | None, extra: GradesExtra) -> JudgeResult:
        """The judge outcome of one answer (None: not model-graded); may add grades to ``extra``
        (``put_extra``)."""


        return judging.judge_case(cfg, case, sample, main_file, execution)

    def judge(self, ctx: JudgeContext) -> JudgeResult:
        """The kind's own model grading of an answer (judge_case without `judge:`), None when none
        (evalkit.contracts.Judge; an override in the older form ``judge(cfg, case, sample, main_file)`` still works)."""
        return None

    def more_grades(self, case: Case, sample: Sample, extra: GradesExtra) -> None:
        """Grades of one answer beyond the judge's, added to ``extra`` (``put_extra``)."""

    def answer_changes(self, case: Case, sample: Sample,
                       execution: ExecutionArtifact | None) -> tuple[str | None, dict[str, str]]:
        """(patch, files) that turn the case's tree into the answer's (the changes judge reads them)."""
        return sample.patch, {}

    def grade_requests(self, cfg: Config, case: Case, sample: Sample, cache: ResponseCache, exact: bool,
                       settings: JudgeSettings) -> list[tuple[str, LLMRequest, bool]]:
        """(asker, request, exact) of the grade stage for one answer (``evalkit estimate``)."""
        return []

    def stand_in(self, case: Case, note: str) -> Sample:
        """An answer standing for one not generated yet (``evalkit estimate``)."""

        return Sample(text=note)

    # --- score --------------------------------------------------------------------------------------------
    def scorers(self) -> list[AnyKindScorer]:
        """The functions that add this kind's metrics, in order (later ones win a shared name)."""


        return [score_entropy_code.entropy_metrics]

    # --- report -------------------------------------------------------------------------------------------
    def detail(self, case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any] | None:
        """What the case page shows per system beyond the common parts (``kind_detail``; None: nothing)."""
        return None

    # --- evalkit check --deep -----------------------------------------------------------------------------
    def sandbox_image(self, case: Case) -> bool:
        """The case runs tests in a sandbox image (``check --deep`` checks the image)."""
        return self.execution.executed and bool(getattr(case.inputs, "test_command", None))

    def deep_checks(self, case: Case, cfg: Config, scratch: Path, where: Locator) -> list[Problem]:
        """``evalkit check --deep`` problems of one case beyond the common ones."""

        if not self.execution.executed:
            return []

        return checks_deep_code.check_patches(case, cfg, scratch, where)

    def __repr__(self) -> str:
        return f"<suite kind {self.name}>"


class Unknown(Kind):
    """The kind of a suite whose suite.yaml is broken (``evalkit.kind_registry.UNKNOWN``): the defaults."""

    name = UNKNOWN
    description = "a suite whose suite.yaml is broken: its cases are recorded as broken"


def put_extra(extra: GradesExtra | dict[str, object], key: str, value: object) -> None:
    """Set one entry of a grades artifact's `extra` (a mapping, or a model whose field validates ``value``)."""
    if isinstance(extra, dict):
        extra[key] = value
        return
    setattr(extra, key, getattr(type(extra).model_validate({key: value}), key))

