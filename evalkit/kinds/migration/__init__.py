"""migration: one legacy file to rewrite for a target technology; the rubric judge grades the answer,
the analyzer's incidents are re-checked, CodeBLEU compares it with the expected file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.artifacts import OutputArtifact, Sample, SystemArtifacts
from evalkit.kinds.migration.models import MigrationInputs, MigrationReference
from evalkit.contracts import AnyKindScorer, JudgeContext, JudgeResult
from evalkit.health_models import Ablation, AblationRun
from evalkit.kinds.base import Answers, Execution, Judging, Kind
from evalkit.treesitter import PARSEABLE, canonical, function_spans
from evalkit.graders.rubric_config import rubric_for
from evalkit.lazy_modules import later
import evalkit.kinds.migration.metrics  # noqa: F401  (the kind's metrics: registered whenever the kind is)

if TYPE_CHECKING:
    from evalkit.cases import Case
    from evalkit.config import Config
    from evalkit.llm.cache import ResponseCache
    from evalkit.llm.calls import LLMRequest
    from evalkit.llm.settings import JudgeSettings
    from evalkit.case_detail import CaseDetail

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.graders import canaries
    from evalkit.graders import judge_dispatch as judge_dispatch_code
    from evalkit.graders import migration_judge as migration_judge_code
    from evalkit.kinds.migration import page as migration_page
    from evalkit.kinds.migration import score as migration_score
    from evalkit.stages import score_entropy as score_entropy_code
    from evalkit.stages import score_judge as score_judge_code
    from evalkit import solved_store as solved_store_code
    from evalkit.stages import score as stages_score
    from evalkit.stages import validate as validate_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    canaries = later("evalkit.graders.canaries")
    judge_dispatch_code = later("evalkit.graders.judge_dispatch")
    migration_judge_code = later("evalkit.graders.migration_judge")
    migration_page = later("evalkit.kinds.migration.page")
    migration_score = later("evalkit.kinds.migration.score")
    score_entropy_code = later("evalkit.stages.score_entropy")
    score_judge_code = later("evalkit.stages.score_judge")
    solved_store_code = later("evalkit.solved_store")
    stages_score = later("evalkit.stages.score")
    validate_code = later("evalkit.stages.validate")


def without_lines(text: str, spans: list[tuple[int, int, str]]) -> str:
    """``text`` without the (first, last) line ranges of ``spans``."""
    gone = {n for first, last, _ in spans for n in range(first, last + 1)}
    return "".join(line for n, line in enumerate(text.splitlines(keepends=True), 1) if n not in gone)


class Migration(Kind):
    name = "migration"
    description = "A legacy file to migrate; judged, incidents re-checked, compared with the expected file."
    inputs = MigrationInputs
    reference = MigrationReference
    execution = Execution(validated=True)
    judging = Judging(graded_by_model=True, always_judged=True, takes_rubric=True, audited=True,
                      recorded_verdict_alone=True)
    answers = Answers(solved_store=True, code_answer=True)
    metrics = ("syntax_valid", "complete", "unchanged", "codebleu", "codebleu_ngram_match",
               "codebleu_weighted_ngram_match", "codebleu_syntax_match", "codebleu_dataflow_match", "codebleu_gain",
               "migrated", "incidents_resolved", "corpus_codebleu")
    leaderboard = ("migrated", "incidents_resolved", "judge_mean", "codebleu", "assertion_score")

    def main_file(self, case: Case) -> str | None:
        return case.inputs.file_path if isinstance(case.inputs, MigrationInputs) else None  # None: a broken case

    def expected_code(self, case: Case) -> str | None:
        return case.read("reference.expected_file")

    def legacy_text(self, case: Case) -> str | None:
        return case.read("inputs.legacy_file")

    def codebleu_baseline(self, cfg: Config, case: Case, reference: str) -> float | None:
        return migration_score.legacy_codebleu(cfg, case, reference)

    def prompt_context(self, case: Case) -> dict[str, object]:
        solved = solved_store_code.solved_example_text(case)  # the case's own example, or the one looked up in its suite's store
        return {"legacy_code": case.read("inputs.legacy_file") or "", "solved_example": solved}

    def parse_answer(self, case: Case, blocks: list[tuple[str, str]]) -> dict[str, str] | None:
        if not blocks:
            return {}
        return {case.inputs_as(MigrationInputs).file_path: max(blocks, key=lambda b: len(b[1]))[1]}

    def gold(self, case: Case) -> Sample:
        file_path = case.inputs_as(MigrationInputs).file_path
        if case.reference_as(MigrationReference).deleted:  # the target has no such file: deleting it is the answer
            return Sample(deleted_files=[file_path])
        expected = case.read("reference.expected_file")
        if expected is None:  # e.g. imported from an analyzer report: nothing to answer with
            return Sample(status="error", reason="the case has no reference.expected_file: gold has no answer")
        return Sample(files={file_path: expected})

    def canary(self, case: Case, variant: str) -> Sample | None:
        if variant == "empty" or not isinstance(case.inputs, MigrationInputs):
            return Sample() if variant == "empty" else None
        path, lang = case.inputs.file_path, case.language
        legacy = case.read("inputs.legacy_file") or ""
        target = case.read("reference.expected_file") or legacy  # a file the target deletes: the legacy's half
        text = {"unchanged": lambda: legacy,
                "truncated": lambda: canaries.truncated(target, lang),
                "truncated-elided": lambda: canaries.truncated(target, lang, elided=True),
                "placeholder": lambda: canaries.placeholder(path, lang, legacy),
                "lines-deleted": lambda: canaries.delete_lines(legacy, migration_score.offending_lines(case))}.get(variant)
        return Sample(files={path: text()}) if text is not None else None

    def gold_problems(self, case: Case, text: str | None, deleted: bool) -> list[str]:
        problems = []
        legacy = migration_score.incident_checks(case, case.read("inputs.legacy_file") or "")
        blind = sorted({c.rule_id for c in legacy if not c.checkable})
        if blind:
            problems.append("incident(s) not found in the legacy file by their own re-check (a matcher or line "
                            f"that does not fire there would call them fixed already): {', '.join(blind)}")
        kept = [c for c in migration_score.incident_checks(case, None if deleted else text) if c.counted and c.present]
        if kept:
            rules = sorted({c.rule_id for c in kept})
            problems.append(f"gold keeps {len(kept)} incident(s) of {', '.join(rules)}")
        return problems

    def deleted_is_answer(self, case: Case, sample: Sample, main_file: str | None) -> bool:
        # A migration output may delete the case's file; where the target deletes it too, that is the
        # answer: nothing to parse or judge (elsewhere the missing file is graded as empty).
        return (case.reference_as(MigrationReference).deleted and main_file in sample.deleted_files
                and main_file not in sample.files)

    def ablations(self, case: Case) -> list[Ablation]:
        """The expected file with half its methods gone (the later half), then with each method gone in turn."""
        if not isinstance(case.inputs, MigrationInputs) or canonical(case.language) not in PARSEABLE:
            return []
        expected = case.read("reference.expected_file")
        if not expected or case.reference_as(MigrationReference).deleted:
            return []
        spans = function_spans(expected, case.language)
        if not spans:
            return []
        path = case.inputs.file_path
        out: list[Ablation] = []
        if len(spans) >= 2:
            half = spans[len(spans) // 2:]
            out.append(Ablation(name="half-methods", description=f"the expected file without {len(half)} of its "
                                f"{len(spans)} methods ({', '.join(s[2] for s in half)})",
                                sample=Sample(files={path: without_lines(expected, half)})))
        for n, span in enumerate(spans, 1):
            out.append(Ablation(name=f"without-method-{n}", description=f"the expected file without {span[2]} "
                                f"(lines {span[0]}-{span[1]})", sample=Sample(files={path: without_lines(expected, [span])})))
        return out

    def no_ablation_reason(self, case: Case) -> str:
        return "no expected file with methods to leave out (none, deleted, or a language evalkit does not parse)"

    def try_ablation(self, cfg: Config, case: Case, ablation: Ablation) -> AblationRun:
        """The checks that cost nothing: the case's assertions, syntax, completeness, incidents and the
        `migrated` checks (structure kept from the legacy file); the judge is not asked."""

        output = OutputArtifact(system="ablation", suite=case.suite, case_id=case.id, samples=[ablation.sample])
        found = validate_code.sample_problems(case, ablation.sample, "the partial answer") + (migration_score.migration_failures(case, output) or [])
        if found:
            return AblationRun(name=ablation.name, description=ablation.description, outcome="noticed",
                               detail="; ".join(found[:3])[:500])
        return AblationRun(name=ablation.name, description=ablation.description, outcome="passed",
                           detail="assertions, incidents and the migrated checks all pass")

    def judge(self, ctx: JudgeContext) -> JudgeResult:
        return judge_dispatch_code.migration_case(ctx.config, ctx.case, ctx.sample, ctx.main_file)

    def grade_requests(self, cfg: Config, case: Case, sample: Sample, cache: ResponseCache, exact: bool,
                       settings: JudgeSettings) -> list[tuple[str, LLMRequest, bool]]:

        item = judge_dispatch_code.migration_input(case, sample, self.main_file(case))
        if exact and migration_judge_code.decided_without_model(item):
            return []
        return [("migration judge", r, exact) for r in migration_judge_code.migration_requests(item, settings, rubric_for(cfg, case))]

    def stand_in(self, case: Case, note: str) -> Sample:
        legacy = case.read("inputs.legacy_file") or ""
        return Sample(files={self.main_file(case) or "main": f"{legacy}\n// {note}\n"})

    def scorers(self) -> list[AnyKindScorer]:
        return [stages_score.code_metrics, score_judge_code.judge_metrics, migration_score.incident_metrics, migration_score.migrated_metric, score_entropy_code.entropy_metrics]

    def detail(self, case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any] | None:
        return migration_page.migration_detail(case, arts)


KIND = Migration()
