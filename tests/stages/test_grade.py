"""grade(cfg, system, case, output), called directly: assertions, syntax and the judge's part."""

from __future__ import annotations

from evalkit.artifacts import OutputArtifact, Sample
from evalkit.stages.grade import grade

CASE = "migration/jpa-entity"  # assertions: contains the jakarta Entity import; no javax.persistence left


def _output(case, files: dict[str, str] | None = None, status: str = "ok", reason: str = "") -> OutputArtifact:
    return OutputArtifact(system="naive", suite=case.suite, case_id=case.id, status=status,  # type: ignore[arg-type]
                          reason=reason, samples=[Sample(status=status, reason=reason, files=files or {})])  # type: ignore[arg-type]


def _legacy(case) -> str:
    return case.read("inputs.legacy_file")


def test_the_reference_answer_passes_every_assertion_and_parses(migration) -> None:
    case = migration.case(CASE)
    grades = grade(migration.cfg, migration.system("naive"), case,
                   _output(case, {case.inputs.file_path: case.read("reference.expected_file")}))
    assert grades.status == "ok"
    assert grades.assertion_score == 1.0 and all(a.passed for a in grades.assertions)
    assert len(grades.assertions) == len(case.assertions)
    assert grades.syntax is not None and grades.syntax.valid


def test_each_assertion_counts_by_its_weight(migration) -> None:
    case = migration.case(CASE)
    half = _legacy(case).replace("import javax.persistence.Entity;", "import jakarta.persistence.Entity;")
    assert "javax.persistence" in half  # other javax.persistence imports stay
    grades = grade(migration.cfg, migration.system("naive"), case, _output(case, {case.inputs.file_path: half}))
    assert [a.passed for a in grades.assertions] == [True, False]
    assert grades.assertion_score == 0.5


def test_an_empty_answer_fails_every_assertion_and_does_not_parse(migration) -> None:
    case = migration.case(CASE)
    grades = grade(migration.cfg, migration.system("naive"), case, _output(case, {}))
    assert grades.status == "ok"
    assert grades.assertion_score == 0.0
    assert grades.assertions and not any(a.passed for a in grades.assertions)
    assert all("missing or empty" in a.detail for a in grades.assertions)
    assert grades.syntax is not None and not grades.syntax.valid


def test_without_a_judge_key_the_judge_is_not_configured_and_nothing_is_sent(migration) -> None:
    case = migration.case(CASE)
    rewritten = _legacy(case).replace("javax.", "jakarta.")
    grades = grade(migration.cfg, migration.system("naive"), case, _output(case, {case.inputs.file_path: rewritten}))
    assert grades.judge is not None and grades.judge.status == "not_configured"
    assert "ANTHROPIC_API_KEY" in (grades.judge.error or "")
    assert grades.judge.usage.input_tokens == 0 and grades.judge.cost_usd == 0.0


def test_an_unchanged_legacy_file_is_decided_by_the_pre_check_without_a_model(migration) -> None:
    case = migration.case(CASE)
    grades = grade(migration.cfg, migration.system("naive"), case,
                   _output(case, {case.inputs.file_path: _legacy(case)}))
    assert grades.judge is not None
    assert (grades.judge.status, grades.judge.decided) == ("parser", "unchanged")
    assert grades.judge.cost_usd == 0.0


def test_an_output_that_is_not_ok_is_not_graded(migration) -> None:
    case = migration.case(CASE)
    grades = grade(migration.cfg, migration.system("naive"), case, _output(case, status="timeout", reason="timed out"))
    assert grades.status == "timeout" and grades.reason == "timed out"
    assert grades.assertions == [] and grades.assertion_score is None and grades.syntax is None
    assert grades.judge is None
