"""The case page shows the SWE-bench harness's verdict beside evalkit's, and says when they differ."""

from __future__ import annotations

from types import SimpleNamespace

from evalkit.artifacts import SystemArtifacts
from evalkit.report.render import case_templates, environment, system_view

RUN = {"status": "completed", "reason": "tests ran; exit status 1", "isolation": "docker", "patch_applied": True,
       "tests": {"tests/test_calc.py::test_add": "failed"}, "fail_to_pass": {"tests/test_calc.py::test_add": "failed"},
       "resolved": False, "harness_parser": "parse_log_pytest", "harness_resolved": True,
       "harness_tests_status": {"FAIL_TO_PASS": {"success": ["tests/test_calc.py::test_add"], "failure": []}},
       "log": "PASSED tests/test_calc.py::test_add\n"}


def panel(run: dict) -> str:
    case = SimpleNamespace(input_files={}, reference_files={}, primary_file=None, case_id="demo-1", suite="s", kind="patch")
    report = SimpleNamespace(metric_info={})
    where = {"system": "bot", "suite": "s", "case_id": "demo-1"}  # as a case JSON's systems hold them
    arts = SystemArtifacts.model_validate({"output": {**where, "status": "ok", "samples": [{"patch": "diff"}]},
                                           "execution": {**where, "isolation": "docker", "runs": [run]}})
    view = system_view(case, "bot", arts, report)
    system_panel = case_templates(environment())[1]  # the panel the case page shows
    return str(system_panel(view))


def test_differing_verdicts_are_shown() -> None:
    html = panel(RUN)
    assert "SWE-bench harness" in html and "parse_log_pytest" in html
    assert "differs from evalkit" in html and 'class="harness-verdict bad"' in html


def test_equal_verdicts_and_non_swebench_runs() -> None:
    html = panel({**RUN, "resolved": True})
    assert "SWE-bench harness" in html and "differs from evalkit" not in html
    assert 'class="harness-verdict"' in html
    plain = {k: v for k, v in RUN.items() if not k.startswith("harness_")}
    assert "SWE-bench harness" not in panel(plain)  # an older artifact, or a case that is not SWE-bench's
