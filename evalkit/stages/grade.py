"""grade: assertions, syntax validity and (when configured) the LLM judge, for one (system, case).

What a model grades is the case's kind's (``Kind.grade_model``): the rubric judge, a generation case's
criteria, a rag case's ragas metrics (summary in `judge`, per metric in `extra["ragas"]`; evalkit.kinds.rag.judge).
"""

from __future__ import annotations

from typing import Any

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact, Provenance
from evalkit.cases import Case
from evalkit.config import Config, System
from evalkit.fsutil import digest
from evalkit.kind_registry import kind
from evalkit.graders.assertions import run_assertions
from evalkit.graders.syntax import check_files, check_syntax
from evalkit.outcomes import GradesExtra, JudgeOutcome, RubricOutcome
from evalkit.stages.slices import grade_slice
from evalkit.recorded_judge import recorded_outcome


def grade(cfg: Config, system: System, case: Case, output: OutputArtifact,
          execution: ExecutionArtifact | None = None) -> GradesArtifact:
    base: dict[str, Any] = {"system": system.name, "suite": case.suite, "case_id": case.id}
    prov = Provenance(inputs=digest([output.provenance, execution.provenance if execution else None,
                                     case.digest]), config=digest(grade_slice(cfg)))
    if output.status != "ok":
        return GradesArtifact(**base, status=output.status, reason=output.reason, provenance=prov)
    sample = output.first
    kd = kind(case.kind)
    mf = kd.main_file(case)
    assertions, score = run_assertions(case.assertions, sample, case.language, mf, case=case, config=cfg,
                                       execution=execution)
    syntax = None
    deleted_right = kd.deleted_is_answer(case, sample, mf)  # e.g. migration: the target deletes the file too
    recorded = getattr(system, "grades", None)  # a recorded judge (evalkit.recorded_judge): its verdicts, no call
    if recorded and mf not in sample.files:
        pass  # the recorded judge's code is not in the import: nothing to parse
    elif mf is not None and not deleted_right:
        syntax = check_syntax(sample.files.get(mf, ""), case.language)
    elif mf is None and kd.files_syntax(case):  # files named by the system: each parsed by its extension
        syntax = check_files(sample.files)
    extra = GradesExtra()
    judge: JudgeOutcome | RubricOutcome | None
    if recorded:
        judge = recorded_outcome(cfg.resolve(recorded), case.key, recorded)
    elif deleted_right:
        judge = None
    else:  # the kind's model grading: the rubric judge, a generation case's criteria, a rag case's ragas metrics
        judge = kd.grade_model(cfg, case, sample, mf, execution, extra)
    kd.more_grades(case, sample, extra)  # e.g. generation: prompt-injection findings
    rubric = judge if isinstance(judge, RubricOutcome) else None  # a generation case's
    judge = judge if isinstance(judge, JudgeOutcome) else None
    return GradesArtifact(**base, syntax=syntax, assertions=assertions, assertion_score=score, judge=judge,
                          rubric=rubric, extra=extra, provenance=prov)
