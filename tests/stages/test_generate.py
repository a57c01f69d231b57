"""generate(cfg, system, case), called directly: the system's answer, its failures, the cache."""

from __future__ import annotations

from evalkit.stages.generate import generate

CASE = "migration/jpa-entity"


def test_a_command_systems_failure_is_an_error_with_its_reason(migration) -> None:
    out = generate(migration.cfg, migration.system("fails"), migration.case(CASE))
    assert out.status == "error"
    assert "boom: no answer for this case" in out.reason
    assert out.first.status == "error" and not out.first.files
    assert (out.system, out.suite, out.case_id) == ("fails", "migration", "jpa-entity")


def test_an_answer_is_the_systems_files(migration) -> None:
    out = generate(migration.cfg, migration.system("counter"), migration.case(CASE))
    assert out.status == "ok" and out.reason == ""
    (path, text), = out.first.files.items()
    assert path == migration.case(CASE).inputs.file_path
    assert "import jakarta.persistence.Entity;" in text and "javax.persistence" not in text


def test_answers_and_failures_are_reused_until_the_case_changes(migration) -> None:
    case = migration.case(CASE)
    first = generate(migration.cfg, migration.system("counter"), case)
    again = generate(migration.cfg, migration.system("counter"), case)
    assert migration.runs("counter") == 1
    assert again.first.files == first.first.files and again.provenance == first.provenance
    # the system's own failure is final too: not asked again
    generate(migration.cfg, migration.system("fails"), case)
    generate(migration.cfg, migration.system("fails"), case)
    assert migration.runs("fails") == 1
    # an edited input file is another case: asked again, under another provenance
    legacy = migration.root / "cases" / "migration" / "jpa-entity" / case.inputs.legacy_file
    legacy.write_text(legacy.read_text() + "\n// edited\n")
    edited = migration.reload()
    changed = generate(edited.cfg, edited.system("counter"), edited.case(CASE))
    assert migration.runs("counter") == 2
    assert changed.provenance != first.provenance
    assert changed.first.files[case.inputs.file_path].endswith("// edited\n")


def test_a_broken_case_is_an_error_and_the_system_is_not_run(migration) -> None:
    case_yaml = migration.root / "cases" / "migration" / "jpa-entity" / "case.yaml"
    case_yaml.write_text(case_yaml.read_text().replace("legacy_file: legacy/Order.java",
                                                       "legacy_file: legacy/Missing.java"))
    broken = migration.reload()
    case = broken.case(CASE)
    assert not case.ok
    out = generate(broken.cfg, broken.system("counter"), case)
    assert out.status == "error" and out.reason.startswith("broken case: ")
    assert "Missing.java" in out.reason
    assert broken.runs("counter") == 0
