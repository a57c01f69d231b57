"""grade: assertions, syntax validity and (when configured) the LLM judge, for one (system, case).

rag cases: ragas' faithfulness, context relevance and answer relevancy through the judge's client
(summary in `judge`, per metric in `extra["ragas"]`; see evalkit.graders.rag).
"""

from __future__ import annotations

from typing import Any

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact, Provenance
from evalkit.casemodels import AssertionSpec
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.fsutil import digest
from evalkit.graders.assertions import run_assertions
from evalkit.graders.syntax import check_files, check_syntax
from evalkit.outcomes import GradesExtra, InjectionFinding, JudgeOutcome, RubricOutcome
from evalkit.stages.slices import grade_slice


def main_file(case: Case) -> str | None:
    """The file a migration case is about (graded for syntax, compared by CodeBLEU)."""
    if case.kind == "generation":
        return case.inputs.get("output_path")
    return case.inputs.get("file_path") if case.kind == "migration" else case.inputs.get("main_file")


def grade(cfg: Config, system: Any, case: Case, output: OutputArtifact,
          execution: ExecutionArtifact | None = None) -> GradesArtifact:
    base = {"system": system.name, "suite": case.suite, "case_id": case.id}
    prov = Provenance(inputs=digest([output.provenance, execution.provenance if execution else None,
                                     case.digest]), config=digest(grade_slice(cfg)))
    if output.status != "ok":
        return GradesArtifact(**base, status=output.status, reason=output.reason, provenance=prov)
    sample = output.first
    mf = main_file(case)
    specs = [AssertionSpec.model_validate(a) for a in case.data.get("assertions", [])]
    assertions, score = run_assertions(specs, sample, case.language, mf)
    syntax = None
    # A migration output may delete the case's file; where the target deletes it too, that is the
    # answer: nothing to parse or judge (elsewhere the missing file is graded as empty).
    deleted_right = (case.kind == "migration" and bool(case.reference.get("deleted")) and mf in sample.deleted_files
                     and mf not in sample.files)
    recorded = getattr(system, "grades", None)  # a recorded judge (evalkit.recorded_judge): its verdicts, no call
    if recorded and mf not in sample.files:
        pass  # the recorded judge's code is not in the import: nothing to parse
    elif mf is not None and not deleted_right:
        syntax = check_syntax(sample.files.get(mf, ""), case.language)
    elif mf is None and case.kind == "generation":  # files named by the system: each parsed by its extension
        syntax = check_files(sample.files)
    from evalkit.graders import judging

    extra = GradesExtra()
    judge: JudgeOutcome | RubricOutcome | None
    if recorded:
        from evalkit.recorded_judge import recorded_outcome

        judge = recorded_outcome(cfg.resolve(recorded), case.key, recorded)
    elif case.kind == "rag":  # ragas' LLM-path metrics through our client (evalkit.graders.rag)
        from evalkit.graders.rag import grade_rag

        judge, extra.ragas = grade_rag(cfg, case, sample)
    elif deleted_right:
        judge = None
    else:
        judge = judging.judge_case(cfg, case, sample, mf, execution)
    if case.kind == "generation":
        from evalkit.graders.injection import detect

        extra.injection = [InjectionFinding.model_validate(r.model_dump()) for r in detect(sample)]
    rubric = judge if isinstance(judge, RubricOutcome) else None  # a generation case's
    judge = judge if isinstance(judge, JudgeOutcome) else None
    return GradesArtifact(**base, syntax=syntax, assertions=assertions, assertion_score=score, judge=judge,
                          rubric=rubric, extra=extra, provenance=prov)
