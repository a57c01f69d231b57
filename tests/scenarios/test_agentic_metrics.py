"""Agentic metrics on hand-computed examples: matching, P/R/F1, incident re-checks."""

from __future__ import annotations

import pytest

from evalkit.casemodels import IncidentMatcher

from evalkit.kinds.agentic.models import AgenticInputs, AgenticReference, ExpectedTask
from evalkit.graders.incidents import import_present, incident_present, match_tasks


def T(rule: str, file: str, line: int | None) -> ExpectedTask:
    return ExpectedTask(rule_id=rule, file=file, line=line)


def M(type_: str, pattern: str) -> IncidentMatcher:
    return IncidentMatcher.model_validate({"type": type_, "pattern": pattern})


def test_match_tasks_precision_recall_f1_by_hand():
    expected = [T("r1", "a.py", 10), T("r1", "a.py", 30), T("r2", "b.py", 5), T("r3", "c.py", 1)]
    discovered = [
        T("r1", "a.py", 11),   # matches expected[0] (1 line off, tolerance 2)
        T("r1", "a.py", 34),   # 4 lines from expected[1]: no match
        T("r2", "b.py", 5),    # matches expected[2]
        T("r2", "./b.py", 6),  # same incident again: expected[2] is taken, no match
        T("r9", "c.py", 1),    # wrong rule
    ]
    m = match_tasks(discovered, expected, tolerance=2)
    assert m.pairs == ((0, 0), (2, 2))
    assert m.precision() == pytest.approx(2 / 5)
    assert m.recall() == pytest.approx(2 / 4)
    assert m.f1() == pytest.approx(2 * 0.4 * 0.5 / 0.9)


def test_match_prefers_the_closest_line_and_lineless_tasks_match_any_line():
    expected = [T("r", "f.java", 10), T("r", "f.java", 12)]
    m = match_tasks([T("r", "f.java", 12), T("r", "f.java", None)], expected, tolerance=3)
    assert m.pairs == ((0, 1), (1, 0))
    assert m.precision() == m.recall() == m.f1() == 1.0


def test_degenerate_cases_are_not_applicable_or_zero():
    assert match_tasks([], [T("r", "f", 1)], 2).precision() is None   # nothing discovered: precision n/a
    assert match_tasks([], [T("r", "f", 1)], 2).recall() == 0.0
    assert match_tasks([], [T("r", "f", 1)], 2).f1() == 0.0
    assert match_tasks([T("r", "f", 1)], [], 2).recall() is None       # nothing expected: recall n/a
    assert match_tasks([T("r", "f", 1)], [], 2).f1() is None


def test_import_checks_for_java_and_python():
    java = "package a;\nimport javax.ejb.Stateless;\nimport static javax.persistence.X.y;\n"
    assert import_present(java, "javax.ejb", "A.java")
    assert import_present(java, "javax.persistence", "A.java")
    assert not import_present(java, "javax.jms", "A.java")
    assert not import_present("import javax.ejbx.Foo;\n", "javax.ejb", "A.java")
    py = "import os, imp\nfrom distutils.version import LooseVersion\nimport importlib.util\n"
    assert import_present(py, "imp", "m.py")
    assert import_present(py, "distutils", "m.py")
    assert not import_present("import importlib.util\n", "imp", "m.py")
    assert not import_present("# import imp\n", "imp", "m.py")


def test_incident_present_by_matcher_or_by_the_original_line():
    assert incident_present(M("regex", r"cgi\.escape\("), "x = cgi.escape(s)\n", "r.py", None)
    assert not incident_present(M("regex", r"cgi\.escape\("), "x = html.escape(s)\n", "r.py", None)
    assert incident_present(M("import", "cgi"), "import cgi\n", "r.py", None)
    # no matcher: the incident's original line must be gone
    assert incident_present(None, "a\n  @Stateless\n", "A.java", "@Stateless")
    assert not incident_present(None, "a\n  @ApplicationScoped\n", "A.java", "@Stateless")
    # a deleted file has no incident left
    assert not incident_present(M("import", "cgi"), None, "r.py", None)


def test_an_expected_task_in_a_missing_file_makes_the_case_broken(tmp_path):
    from evalkit.artifacts import Sample
    from evalkit.cases import Case
    from evalkit.config import Config
    from evalkit.kinds.agentic.execute import recheck

    src = tmp_path / "suite" / "app" / "source"
    src.mkdir(parents=True)
    (src / "a.py").write_text("import imp\n")
    case = Case(suite="suite", id="app", kind="agentic", language="python", path="x", dir=str(src.parent), files=[],
                inputs=AgenticInputs(source_dir="source", matchers={"r": M("import", "imp")}),
                reference=AgenticReference(expected_tasks=[T("r", "a.py", 1), T("r", "gone.py", 1)]),
                refs={"inputs.source_dir": str(src)})
    cfg = Config(release="r", systems=[{"name": "g", "adapter": "gold"}], work_dir=str(tmp_path / "w"))
    run = recheck(cfg, case, Sample(files={"a.py": "import importlib\n"}))
    assert run["status"] == "case_error" and "gone.py" in run["reason"]
    case.reference.expected_tasks = [T("r", "a.py", 1)]
    run = recheck(cfg, case, Sample(files={"a.py": "import importlib\n"}))
    assert run["status"] == "completed" and run["incidents"] == [
        {"rule_id": "r", "file": "a.py", "line": 1, "present": False}]
    run = recheck(cfg, case, Sample(patch="not a diff"))
    assert run["status"] == "patch_failed" and run["incidents"][0]["present"] is True
