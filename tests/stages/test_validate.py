"""validate_case(cfg, case), called directly on migration cases: the reference checked against its own case.
(Incidents kept, elided code and a deleted file: tests/graders/test_migration_incidents.py.)"""

from __future__ import annotations

import dataclasses

from evalkit.errors import Problem
from evalkit.stages.validate import validate_case

CASE = "migration/jpa-entity"


def _expected(migration):
    case = migration.case(CASE)
    return migration.root / "cases" / "migration" / "jpa-entity" / case.reference.expected_file


def test_the_demo_reference_is_valid(migration) -> None:
    for case in migration.project.cases:
        result = validate_case(migration.cfg, case)
        assert (result.suite, result.case_id) == (case.suite, case.id)
        assert result.status == "valid", result.reason


def test_a_reference_that_fails_its_assertions_is_broken(migration) -> None:
    expected = _expected(migration)
    expected.write_text(expected.read_text().replace("import jakarta.persistence.Entity;",
                                                     "import javax.persistence.Entity;"))
    result = validate_case(migration.cfg, migration.reload().case(CASE))
    assert result.status == "broken"
    assert result.reason.startswith("gold fails its assertion(s): ")
    assert "import jakarta.persistence.Entity;" in result.reason and "javax.persistence" in result.reason


def test_a_reference_that_does_not_parse_is_broken(migration) -> None:
    expected = _expected(migration)
    text = expected.read_text()
    expected.write_text(text[: text.rindex("}")])  # the class's closing brace cut off
    result = validate_case(migration.cfg, migration.reload().case(CASE))
    assert result.status == "broken" and "gold does not parse" in result.reason


def test_a_case_with_problems_is_broken_naming_them(migration) -> None:
    case = migration.case(CASE)
    broken = dataclasses.replace(case, problems=[Problem("case.yaml", 5, "inputs.legacy_file: file not found")])
    result = validate_case(migration.cfg, broken)
    assert (result.status, result.reason) == ("broken", "inputs.legacy_file: file not found")
