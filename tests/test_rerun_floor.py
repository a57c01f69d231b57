"""The rerun floor's parts (docs/operations/performance.md): a case validated once, report.json read once."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from evalkit.kinds.migration.models import MigrationInputs, MigrationReference
from evalkit.cases import discover
from evalkit.report import models as report_models

REPO = Path(__file__).resolve().parents[1]


def _suite(tmp_path: Path, case_yaml: str) -> Path:
    suite = tmp_path / "cases" / "migration"
    suite.mkdir(parents=True)
    shutil.copy(REPO / "cases" / "migration" / "suite.yaml", suite / "suite.yaml")
    (suite / "c1").mkdir()
    (suite / "c1" / "Legacy.java").write_text("import javax.inject.Inject;\n")
    (suite / "c1" / "Expected.java").write_text("import jakarta.inject.Inject;\n")
    (suite / "c1" / "case.yaml").write_text(case_yaml)
    return tmp_path / "cases"


GOOD = ("id: c1\ninputs:\n  file_path: src/A.java\n  legacy_file: Legacy.java\n  incidents:\n"
        "    - rule_id: javax-to-jakarta-import-00001\n      line: 1\nreference:\n  expected_file: Expected.java\n")


def test_a_case_is_validated_once_with_its_suites_defaults_and_kept_typed(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    for model in (MigrationInputs, MigrationReference):  # a second validation of a part would call these
        original = model.model_validate.__func__  # type: ignore[attr-defined]
        monkeypatch.setattr(model, "model_validate",
                            classmethod(lambda cls, *a, _o=original, **k: (calls.append(cls.__name__), _o(cls, *a, **k))[1]))
    case = discover(_suite(tmp_path, GOOD)).cases[0]
    assert case.ok, case.problems
    assert calls == []  # typed by the kind's case file in one validation, never part by part
    inputs = case.inputs_as(MigrationInputs)
    assert inputs.source_technology == "Java EE 8"  # the suite's default, merged before validating
    assert inputs.incidents[0].line == 1
    assert isinstance(case.reference, MigrationReference)
    assert case.refs["inputs.legacy_file"].endswith("c1/Legacy.java")
    assert case.refs["reference.expected_file"].endswith("c1/Expected.java")


def test_a_broken_part_still_lists_every_problem_at_its_line(tmp_path: Path) -> None:
    bad = GOOD.replace("      line: 1\n", "      line: zero\n").replace("Expected.java", "Nope.java")
    case = discover(_suite(tmp_path, bad)).cases[0]
    messages = [(p.line, p.message) for p in case.problems]
    assert any(line == 7 and "incidents.0.line" in m for line, m in messages), messages
    assert any(line == 9 and "reference.expected_file: file 'Nope.java' does not exist" in m for line, m in messages), messages
    assert case.refs["inputs.legacy_file"].endswith("Legacy.java")  # the part that validated is still read


def _report(release: str) -> str:
    return report_models.Report(release=release, title="t", baseline="b", systems=[], suites=[], cases=[],
                                metric_info={}).model_dump_json()


def test_read_report_validates_a_file_once_while_it_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text(_report("r1"))
    first = report_models.read_report(path)
    assert report_models.read_report(path) is first
    path.write_text(_report("r2"))
    os.utime(path, ns=(1, 1))  # another modification time, whatever the clock's resolution
    second = report_models.read_report(path)
    assert second is not first and second.release == "r2"
