"""score(cfg, system, case, output, execution, grades), called directly: what counts as answered, what is
left out of the rates (and why), and the metrics of an answer."""

from __future__ import annotations

import dataclasses

import pytest

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact, Sample
from evalkit.errors import Problem
from evalkit.fsutil import atomic_write_json
from evalkit.outcomes import SandboxRun
from evalkit.stages.grade import grade
from evalkit.stages.score import score
from evalkit.stages.validate import Validation, validation_path

CASE = "migration/jpa-entity"


def _output(case, files: dict[str, str] | None = None, status: str = "ok", reason: str = "") -> OutputArtifact:
    return OutputArtifact(system="naive", suite=case.suite, case_id=case.id, status=status,  # type: ignore[arg-type]
                          reason=reason, samples=[Sample(status=status, reason=reason, files=files or {})])  # type: ignore[arg-type]


def _score(migration, case, output: OutputArtifact, execution: ExecutionArtifact | None = None,
           grades: GradesArtifact | None = None):
    system = migration.system("naive")
    grades = grades if grades is not None else grade(migration.cfg, system, case, output)
    return score(migration.cfg, system, case, output, execution, grades)


def test_the_reference_answer_scores_full_marks(migration) -> None:
    case = migration.case(CASE)
    s = _score(migration, case, _output(case, {case.inputs.file_path: case.read("reference.expected_file")}))
    assert s.status == "ok" and s.excluded is None and s.reason == ""
    for metric in ("answered", "assertion_score", "assertion_pass", "syntax_valid", "complete", "codebleu"):
        assert s.metrics[metric] == pytest.approx(1.0), metric
    assert s.tags == case.tags


def test_a_wrong_answer_is_answered_and_scored_low(migration) -> None:
    case = migration.case(CASE)
    legacy = case.read("inputs.legacy_file")
    s = _score(migration, case, _output(case, {case.inputs.file_path: legacy}))
    assert s.status == "ok" and s.excluded is None
    assert s.metrics["answered"] == 1.0
    assert s.metrics["assertion_score"] == 0.0 and s.metrics["assertion_pass"] == 0.0
    codebleu = s.metrics["codebleu"]
    assert codebleu is not None and codebleu < 1.0


def test_an_empty_answer_is_not_answered_and_fails_the_code_metrics(migration) -> None:
    case = migration.case(CASE)
    s = _score(migration, case, _output(case, {}))
    assert s.status == "ok" and s.excluded is None  # counted, as a failure
    assert s.reason == "empty answer: nothing to grade"
    assert s.metrics["answered"] == 0.0
    for metric in ("assertion_score", "assertion_pass", "syntax_valid", "complete"):
        assert s.metrics[metric] == 0.0, metric


def test_a_system_error_is_a_failure_not_an_exclusion(migration) -> None:
    case = migration.case(CASE)
    s = _score(migration, case, _output(case, status="error", reason="crashed"))
    assert (s.status, s.reason, s.excluded) == ("error", "crashed", None)
    assert s.metrics["answered"] == 0.0 and s.metrics["assertion_score"] == 0.0


def test_a_broken_case_is_excluded(migration) -> None:
    case = migration.case(CASE)
    broken = dataclasses.replace(case, problems=[Problem("case.yaml", 4, "inputs.legacy_file: file not found")])
    out = _output(case, status="error", reason="broken case: case.yaml:4: inputs.legacy_file: file not found")
    s = score(migration.cfg, migration.system("naive"), broken, out, None,
              GradesArtifact(system="naive", suite=case.suite, case_id=case.id, status="error", reason=out.reason))
    assert (s.status, s.excluded) == ("error", "broken")
    assert "file not found" in s.reason and s.metrics == {}


def test_a_reference_that_fails_its_own_case_makes_every_score_broken(migration) -> None:
    case = migration.case(CASE)
    atomic_write_json(validation_path(migration.cfg.work_path, case),
                      Validation(suite=case.suite, case_id=case.id, status="broken",
                                 reason="gold fails assertion: contains 'import jakarta.persistence.Entity;'"))
    s = _score(migration, case, _output(case, {case.inputs.file_path: case.read("reference.expected_file")}))
    assert (s.status, s.excluded) == ("broken", "broken")
    assert "gold fails assertion" in s.reason and s.metrics == {}


@pytest.mark.parametrize(("stage", "status", "excluded"), [
    ("execute", "infra_error", "infra"), ("grade", "infra_error", "infra"), ("execute", "broken", "broken"),
])
def test_infrastructure_errors_and_broken_runs_upstream_are_excluded(migration, stage: str, status: str,
                                                                     excluded: str) -> None:
    case = migration.case(CASE)
    out = _output(case, {case.inputs.file_path: case.read("reference.expected_file")})
    base = {"system": "naive", "suite": case.suite, "case_id": case.id, "status": status, "reason": f"{stage} said so"}
    execution = ExecutionArtifact(**base) if stage == "execute" else None  # type: ignore[arg-type]
    grades = GradesArtifact(**base) if stage == "grade" else None  # type: ignore[arg-type]
    s = _score(migration, case, out, execution, grades)
    assert (s.status, s.excluded, s.reason) == (status, excluded, f"{stage} said so")
    assert s.metrics == {}


def _patch_scores(patch, runs: list[SandboxRun], status: str = "ok"):
    cfg, case, systems = patch
    base = {"system": "empty", "suite": case.suite, "case_id": case.id}
    out = OutputArtifact(**base, status=status, samples=[Sample(status=status, patch="diff")])  # type: ignore[arg-type]
    execution = ExecutionArtifact(**base, status=status, runs=runs)  # type: ignore[arg-type]
    grades = grade(cfg, systems["empty"], case, out, execution)
    return score(cfg, systems["empty"], case, out, execution, grades)


def test_a_patch_resolves_as_its_run_says(patch) -> None:
    s = _patch_scores(patch, [SandboxRun(status="completed", patch_applied=True, resolved=True,
                                         fail_to_pass={"t::a": "passed"},
                                         pass_to_pass={"t::b": "passed", "t::c": "passed", "t::d": "failed"})])
    assert s.status == "ok" and s.excluded is None
    assert (s.metrics["resolved"], s.metrics["patch_applied"], s.metrics["f2p_pass_rate"]) == (1.0, 1.0, 1.0)
    assert s.metrics["p2p_pass_rate"] == pytest.approx(2 / 3)


def test_a_patch_that_did_not_apply_or_was_not_given_does_not_resolve(patch) -> None:
    failed = _patch_scores(patch, [SandboxRun(status="patch_failed", reason="does not apply")])
    assert (failed.metrics["resolved"], failed.metrics["patch_applied"]) == (0.0, 0.0)
    errored = _patch_scores(patch, [], status="error")
    assert errored.status == "error" and errored.excluded is None
    assert (errored.metrics["resolved"], errored.metrics["answered"]) == (0.0, 0.0)


def test_an_evalkit_bug_in_grading_keeps_the_execute_verdict_in_the_rates(patch) -> None:
    cfg, case, systems = patch
    base = {"system": "empty", "suite": case.suite, "case_id": case.id}
    out = OutputArtifact(**base, status="ok", samples=[Sample(status="ok", patch="diff")])  # type: ignore[arg-type]
    execution = ExecutionArtifact(**base, status="ok", runs=[SandboxRun(status="patch_failed", reason="no apply")])  # type: ignore[arg-type]
    grades = GradesArtifact(**base, status="bug", reason="KeyError: 'x' (grade.py:1)")  # type: ignore[arg-type]
    s = score(cfg, systems["empty"], case, out, execution, grades)
    assert s.status == "ok" and s.excluded is None  # counted: the system's failure stays in the rate
    assert (s.metrics["resolved"], s.metrics["patch_applied"]) == (0.0, 0.0)
    assert "evalkit bug after the tests ran" in s.reason and "KeyError" in s.reason


def test_migrated_needs_the_whole_migration_not_the_incidents_alone(migration) -> None:
    """#25: partial credit (incidents_resolved) rewarded answers that do no migration; migrated does not."""
    from evalkit.graders.canaries import truncated
    from evalkit.kinds.migration.score import migration_failures

    case = migration.case(CASE)
    path, legacy, expected = case.inputs.file_path, case.read("inputs.legacy_file"), case.read("reference.expected_file")
    gold = _score(migration, case, _output(case, {path: expected}))
    assert gold.metrics["migrated"] == 1.0 and gold.metrics["incidents_resolved"] == 1.0
    answers = {"placeholder": "package com.acme.orders;\n\npublic class Order {}\n",
               "half": truncated(expected, "java"),
               "half + elision": truncated(expected, "java", elided=True),
               "unchanged": legacy}
    for what, text in answers.items():
        s = _score(migration, case, _output(case, {path: text}))
        assert s.metrics["migrated"] == 0.0, what
        assert migration_failures(case, _output(case, {path: text})), what
    placeholder = _score(migration, case, _output(case, {path: answers["placeholder"]}))
    assert placeholder.metrics["incidents_resolved"] == 1.0  # what made partial credit gameable
    assert _score(migration, case, _output(case, {})).metrics["migrated"] == 0.0  # no answer: never migrated


def test_one_not_applicable_rule_for_f2p_and_p2p(patch) -> None:
    """#25: a patch that does not apply failed f2p (n/a) but kept p2p; an empty patch kept every PASS_TO_PASS test
    green. Both now score 0 on both rates, where the case lists such tests."""
    cfg, case, systems = patch
    failed = _patch_scores(patch, [SandboxRun(status="patch_failed", reason="does not apply")])
    assert (failed.metrics["f2p_pass_rate"], failed.metrics["p2p_pass_rate"]) == (0.0, 0.0 if case.reference.pass_to_pass else None)
    base = {"system": "empty", "suite": case.suite, "case_id": case.id}
    out = OutputArtifact(**base, status="ok", samples=[Sample(patch="")])  # type: ignore[arg-type]
    run = SandboxRun(status="completed", patch_applied=True, resolved=False, fail_to_pass={"t::a": "failed"},
                     pass_to_pass={"t::b": "passed"})
    execution = ExecutionArtifact(**base, status="ok", runs=[run])  # type: ignore[arg-type]
    s = score(cfg, systems["empty"], case, out, execution, grade(cfg, systems["empty"], case, out, execution))
    assert s.metrics["f2p_pass_rate"] == 0.0 and s.metrics["p2p_pass_rate"] in (0.0, None)
