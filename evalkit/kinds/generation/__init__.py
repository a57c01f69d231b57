"""generation: write new code from instructions; graded by rubric criteria and assertions (no CodeBLEU: its
score stage never had an expected file to compare with)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.artifacts import Sample, SystemArtifacts
from evalkit.kinds.generation.models import GenerationInputs, GenerationReference
from evalkit.contracts import AnyKindScorer, JudgeContext, JudgeResult
from evalkit.health_models import Ablation, AblationRun
from evalkit.kinds.base import Answers, Execution, Judging, Kind, put_extra
from evalkit.kinds.migration import without_lines
from evalkit.treesitter import PARSEABLE, canonical, statement_spans
from evalkit.lazy_modules import later
import evalkit.kinds.generation.metrics  # noqa: F401  (the kind's metrics: registered whenever the kind is)

if TYPE_CHECKING:
    from evalkit.cases import Case
    from evalkit.config import Config
    from evalkit.llm.cache import ResponseCache
    from evalkit.llm.calls import LLMRequest
    from evalkit.llm.settings import JudgeSettings
    from evalkit.outcomes import GradesExtra
    from evalkit.case_detail import CaseDetail

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.graders import canaries
    from evalkit.kinds.generation import judge as generation_judge
    from evalkit.kinds.generation import page as generation_page
    from evalkit.kinds.generation import score as generation_score
    from evalkit.graders import injection as injection_code
    from evalkit.stages import score_entropy as score_entropy_code
    from evalkit.stages import score as stages_score
    from evalkit.stages import validate as validate_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    canaries = later("evalkit.graders.canaries")
    generation_judge = later("evalkit.kinds.generation.judge")
    generation_page = later("evalkit.kinds.generation.page")
    generation_score = later("evalkit.kinds.generation.score")
    injection_code = later("evalkit.graders.injection")
    score_entropy_code = later("evalkit.stages.score_entropy")
    stages_score = later("evalkit.stages.score")
    validate_code = later("evalkit.stages.validate")


class Generation(Kind):
    name = "generation"
    description = "New code written from instructions; graded by rubric criteria and assertions."
    inputs = GenerationInputs
    reference = GenerationReference
    execution = Execution(validated=True)
    judging = Judging(graded_by_model=True)
    answers = Answers(code_answer=True, criteria=True)
    metrics = ("syntax_valid", "complete", "rubric_score", "rubric_fallback_score", "injection_clean")
    leaderboard = ("rubric_score", "assertion_score")

    def main_file(self, case: Case) -> str | None:
        return case.inputs.output_path if isinstance(case.inputs, GenerationInputs) else None  # None: a broken case

    def files_syntax(self, case: Case) -> bool:
        return True  # files named by the system: each parsed by its extension

    def canary(self, case: Case, variant: str) -> Sample | None:
        if variant == "empty" or not isinstance(case.inputs, GenerationInputs):
            return Sample() if variant == "empty" else None
        path = case.inputs.output_path or "main"
        ref = case.reference_as(GenerationReference)
        expected = case.read(f"reference.files.{path}") if path in ref.files else None
        lang = case.language
        if variant == "unchanged":  # the input returned as is: the instructions, as a comment
            prefix = "# " if lang == "python" else "// "
            return Sample(files={path: "".join(prefix + ln + "\n" for ln in case.inputs.instructions.splitlines())})
        if variant == "placeholder":
            return Sample(files={path: canaries.placeholder(path, lang)})
        if variant in ("truncated", "truncated-elided") and expected:
            return Sample(files={path: canaries.truncated(expected, lang, elided=variant == "truncated-elided")})
        return None

    def ablations(self, case: Case) -> list[Ablation]:
        """The expected output file with the later half of its top-level statements gone (three or more), then each
        gone in turn (a declaration, a test, a constant: the evidence a criterion is judged on), its imports
        and the rest of the reference kept."""
        if not isinstance(case.inputs, GenerationInputs) or canonical(case.language) not in PARSEABLE:
            return []
        path = case.inputs.output_path
        if not path or path not in case.reference_as(GenerationReference).files:
            return []
        expected = case.read(f"reference.files.{path}")
        spans = statement_spans(expected, case.language) if expected else []
        if len(spans) < 2 or expected is None:  # one statement: without it, the empty answer validation fails
            return []
        gold = self.gold(case)

        def partial(gone: list[tuple[int, int, str]]) -> Sample:
            return gold.model_copy(update={"files": {**gold.files, path: without_lines(expected, gone)}})

        half = spans[len(spans) // 2:]
        out = [Ablation(name="half-statements", description=f"{path} without {len(half)} of its {len(spans)} "
                        f"top-level statements ({'; '.join(s[2] for s in half[:3])}"
                        + ("; …)" if len(half) > 3 else ")"), sample=partial(half))] if len(spans) >= 3 else []
        out += [Ablation(name=f"without-statement-{n}", description=f"{path} without `{s[2]}` (lines {s[0]}-{s[1]})",
                         sample=partial([s])) for n, s in enumerate(spans, 1)]
        return out

    def no_ablation_reason(self, case: Case) -> str:
        return ("no expected output file of two or more top-level statements to leave one out of (none, one "
                "statement, or a language evalkit does not parse)")

    def try_ablation(self, cfg: Config, case: Case, ablation: Ablation) -> AblationRun:
        """The graders that cost nothing: the case's assertions, the output file's presence, syntax and
        completeness, and the rubric's pre-check (an empty or incomplete file meets no criterion); the rubric
        judge is not asked."""

        found = validate_code.sample_problems(case, ablation.sample, "the partial answer")
        pre = generation_judge.rubric_without_model(case, ablation.sample) if case.criteria else None
        if pre is not None:
            found.append(f"the rubric's pre-check: {pre.error}")
        if found:
            return AblationRun(name=ablation.name, description=ablation.description, outcome="noticed",
                               detail="; ".join(found[:3])[:500])
        return AblationRun(name=ablation.name, description=ablation.description, outcome="passed",
                           detail="the assertions and the rubric's pre-check all pass (the judge was not asked)")

    def judge(self, ctx: JudgeContext) -> JudgeResult:
        return generation_judge.rubric_case(ctx.config, ctx.case, ctx.sample)

    def more_grades(self, case: Case, sample: Sample, extra: GradesExtra) -> None:
        put_extra(extra, "injection", [r.model_dump(mode="json") for r in injection_code.detect(sample)])

    def grade_requests(self, cfg: Config, case: Case, sample: Sample, cache: ResponseCache, exact: bool,
                       settings: JudgeSettings) -> list[tuple[str, LLMRequest, bool]]:
        if not case.criteria:
            return []

        if exact and generation_judge.rubric_without_model(case, sample) is not None:
            return []  # an empty or incomplete main file: decided without a model
        return [("rubric", r, exact) for r in generation_judge.rubric_requests(generation_judge.rubric_input(case, sample), settings)]

    def stand_in(self, case: Case, note: str) -> Sample:
        return Sample(files={self.main_file(case) or "main": note})

    def scorers(self) -> list[AnyKindScorer]:
        return [stages_score.code_metrics, score_entropy_code.entropy_metrics, generation_score.generation_metrics]

    def detail(self, case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any] | None:
        return generation_page.generation_detail(case, arts)


KIND = Generation()
