"""generation: write new code from instructions; graded by rubric criteria and assertions (no CodeBLEU: its
score stage never had an expected file to compare with)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.artifacts import Sample
from evalkit.casemodels import GenerationInputs, GenerationReference
from evalkit.contracts import AnyKindScorer, JudgeContext, JudgeResult
from evalkit.kinds.base import Answers, Execution, Judging, Kind, put_extra

if TYPE_CHECKING:
    from evalkit.cases import Case
    from evalkit.config import Config
    from evalkit.llm.cache import ResponseCache
    from evalkit.llm.calls import LLMRequest
    from evalkit.llm.settings import JudgeSettings
    from evalkit.outcomes import GradesExtra


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
        from evalkit.graders import canaries  # deferred: stage code; planning tasks needs only the declarations

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

    def judge(self, ctx: JudgeContext) -> JudgeResult:
        from evalkit.graders.judge_dispatch import rubric_case  # deferred: stage code; planning tasks needs only the declarations

        return rubric_case(ctx.config, ctx.case, ctx.sample)

    def more_grades(self, case: Case, sample: Sample, extra: GradesExtra) -> None:
        from evalkit.graders.injection import detect  # deferred: stage code; planning tasks needs only the declarations

        put_extra(extra, "injection", [r.model_dump(mode="json") for r in detect(sample)])

    def grade_requests(self, cfg: Config, case: Case, sample: Sample, cache: ResponseCache, exact: bool,
                       settings: JudgeSettings) -> list[tuple[str, LLMRequest, bool]]:
        if not case.criteria:
            return []
        from evalkit.graders.judge_dispatch import rubric_input, rubric_without_model  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.graders.rubric_judge import rubric_requests  # deferred: stage code; planning tasks needs only the declarations

        if exact and rubric_without_model(case, sample) is not None:
            return []  # an empty or incomplete main file: decided without a model
        return [("rubric", r, exact) for r in rubric_requests(rubric_input(case, sample), settings)]

    def stand_in(self, case: Case, note: str) -> Sample:
        return Sample(files={self.main_file(case) or "main": note})

    def scorers(self) -> list[AnyKindScorer]:
        from evalkit.stages.score import code_metrics  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.stages.score_entropy import entropy_metrics  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.stages.score_generation import generation_metrics  # deferred: stage code; planning tasks needs only the declarations

        return [code_metrics, entropy_metrics, generation_metrics]

    def detail(self, case: Any, arts: dict[str, Any]) -> dict[str, Any] | None:
        from evalkit.kinds.pages import generation_detail  # deferred: stage code; planning tasks needs only the declarations

        return generation_detail(case, arts)


KIND = Generation()
