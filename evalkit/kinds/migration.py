"""migration: one legacy file to rewrite for a target technology; the rubric judge grades the answer,
the analyzer's incidents are re-checked, CodeBLEU compares it with the expected file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.artifacts import OutputArtifact, Sample, SystemArtifacts
from evalkit.casemodels import MigrationInputs, MigrationReference
from evalkit.contracts import AnyKindScorer, JudgeContext, JudgeResult
from evalkit.health_models import Ablation, AblationRun
from evalkit.kinds.base import Answers, Execution, Judging, Kind
from evalkit.treesitter import PARSEABLE, canonical, function_spans

if TYPE_CHECKING:
    from evalkit.cases import Case
    from evalkit.config import Config
    from evalkit.llm.cache import ResponseCache
    from evalkit.llm.calls import LLMRequest
    from evalkit.llm.settings import JudgeSettings


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
        from evalkit.stages.score_migration import legacy_codebleu  # deferred: stage code; planning tasks needs only the declarations

        return legacy_codebleu(cfg, case, reference)

    def prompt_context(self, case: Case) -> dict[str, object]:
        from evalkit.solved_store import solved_example_text  # deferred: stage code; planning tasks needs only the declarations

        solved = solved_example_text(case)  # the case's own example, or the one looked up in its suite's store
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
        from evalkit.graders import canaries  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.stages.score_migration import offending_lines  # deferred: stage code; planning tasks needs only the declarations

        if variant == "empty" or not isinstance(case.inputs, MigrationInputs):
            return Sample() if variant == "empty" else None
        path, lang = case.inputs.file_path, case.language
        legacy = case.read("inputs.legacy_file") or ""
        target = case.read("reference.expected_file") or legacy  # a file the target deletes: the legacy's half
        text = {"unchanged": lambda: legacy,
                "truncated": lambda: canaries.truncated(target, lang),
                "truncated-elided": lambda: canaries.truncated(target, lang, elided=True),
                "placeholder": lambda: canaries.placeholder(path, lang, legacy),
                "lines-deleted": lambda: canaries.delete_lines(legacy, offending_lines(case))}.get(variant)
        return Sample(files={path: text()}) if text is not None else None

    def gold_problems(self, case: Case, text: str | None, deleted: bool) -> list[str]:
        from evalkit.stages.score_migration import incident_checks  # deferred: stage code; planning tasks needs only the declarations

        problems = []
        legacy = incident_checks(case, case.read("inputs.legacy_file") or "")
        blind = sorted({c.rule_id for c in legacy if not c.checkable})
        if blind:
            problems.append("incident(s) not found in the legacy file by their own re-check (a matcher or line "
                            f"that does not fire there would call them fixed already): {', '.join(blind)}")
        kept = [c for c in incident_checks(case, None if deleted else text) if c.counted and c.present]
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
        from evalkit.stages.score_migration import migration_failures  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.stages.validate import sample_problems  # deferred: stage code; planning tasks needs only the declarations

        output = OutputArtifact(system="ablation", suite=case.suite, case_id=case.id, samples=[ablation.sample])
        found = sample_problems(case, ablation.sample, "the partial answer") + (migration_failures(case, output) or [])
        if found:
            return AblationRun(name=ablation.name, description=ablation.description, outcome="noticed",
                               detail="; ".join(found[:3])[:500])
        return AblationRun(name=ablation.name, description=ablation.description, outcome="passed",
                           detail="assertions, incidents and the migrated checks all pass")

    def judge(self, ctx: JudgeContext) -> JudgeResult:
        from evalkit.graders.judge_dispatch import migration_case  # deferred: stage code; planning tasks needs only the declarations

        return migration_case(ctx.config, ctx.case, ctx.sample, ctx.main_file)

    def grade_requests(self, cfg: Config, case: Case, sample: Sample, cache: ResponseCache, exact: bool,
                       settings: JudgeSettings) -> list[tuple[str, LLMRequest, bool]]:
        from evalkit.graders.migration_judge import migration_requests  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.graders.rubric_config import rubric_for  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.graders.judge_dispatch import migration_input  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.graders.migration_judge import decided_without_model  # deferred: stage code; planning tasks needs only the declarations

        item = migration_input(case, sample, self.main_file(case))
        if exact and decided_without_model(item):
            return []
        return [("migration judge", r, exact) for r in migration_requests(item, settings, rubric_for(cfg, case))]

    def stand_in(self, case: Case, note: str) -> Sample:
        legacy = case.read("inputs.legacy_file") or ""
        return Sample(files={self.main_file(case) or "main": f"{legacy}\n// {note}\n"})

    def scorers(self) -> list[AnyKindScorer]:
        from evalkit.stages.score import code_metrics  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.stages.score_entropy import entropy_metrics  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.stages.score_judge import judge_metrics  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.stages.score_migration import incident_metrics, migrated_metric  # deferred: stage code; planning tasks needs only the declarations

        return [code_metrics, judge_metrics, incident_metrics, migrated_metric, entropy_metrics]

    def detail(self, case: Any, arts: SystemArtifacts) -> dict[str, Any] | None:
        from evalkit.kinds.pages import migration_detail  # deferred: stage code; planning tasks needs only the declarations

        return migration_detail(case, arts)


KIND = Migration()
