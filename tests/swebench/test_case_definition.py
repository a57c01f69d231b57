"""Which patch cases are SWE-bench's (graded by the official harness too), and the resolved metric they get."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from evalkit.casemodels import PatchInputs, PatchReference
from evalkit.stages.execute import _harness_parser
from evalkit.kinds.patch.score import patch_metrics
from evalkit.swebench.harness import is_swebench_case, parser_for, parser_names


@pytest.mark.parametrize("inputs, parser", [
    ({"repo": "django/django"}, "parse_log_django"),           # 4.x row: repo -> the harness's own table
    ({"repo": "sympy/sympy"}, "parse_log_sympy"),
    ({"repo": "pydicom/pydicom"}, "parse_log_pydicom"),
    ({"repo": "scikit-learn/scikit-learn"}, "parse_log_scikit"),
    ({"repo": "acme/unknown"}, None),                           # owner/name the harness does not know
    ({"repo": "/home/me/clones/django"}, None),                 # a host path, not owner/name
    ({"repo": "https://example.invalid/django/django.git"}, None),
    ({"source_dir": "tree"}, None),
    ({"repo": "acme/unknown", "log_parser": "parse_log_gotest"}, "parse_log_gotest"),  # 5.x row names it
    ({"repo": "django/django", "log_parser": "parse_log_pytest"}, "parse_log_pytest"),  # log_parser wins
    ({"log_parser": "parse_log_nonesuch"}, None),               # unknown to the harness: evalkit's grading only
])
def test_which_cases_are_swebench_s(inputs, parser) -> None:
    typed = PatchInputs.model_validate(inputs)
    assert _harness_parser(typed) == parser
    assert is_swebench_case(typed) is (parser is not None or bool(inputs.get("log_parser")))


def test_a_case_that_is_not_swebench_s_does_not_import_the_harness() -> None:
    """A patch case with neither a log_parser nor an owner/name repo (the demo's) is answered without the
    harness's import (~1.5 s of CPU per process); one with an owner/name repo still asks the harness."""
    import subprocess
    import sys

    code = ("import sys; from evalkit.casemodels import PatchInputs; from evalkit.stages.execute import _harness_parser;"
            "a = _harness_parser(PatchInputs.model_validate({'source_dir': 'tree'}));"
            "b = _harness_parser(PatchInputs.model_validate({'repo': '/home/me/clones/django'}));"
            "print(a, b, 'swebench.harness.log_parsers' in sys.modules);"
            "c = _harness_parser(PatchInputs.model_validate({'repo': 'django/django'}));"
            "print(c, 'swebench.harness.log_parsers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["None None False", "parse_log_django True"]


def test_every_language_parser_of_5x_is_known() -> None:
    names = parser_names()
    assert len(names) >= 50 and {"parse_log_django", "parse_log_maven", "parse_log_cargo", "parse_log_jest"} <= set(names)
    with pytest.raises(ValueError, match="parse_log_nonesuch"):
        parser_for(None, "parse_log_nonesuch")


def _metrics(run: dict) -> dict:
    from evalkit.outcomes import SandboxRun

    from evalkit.artifacts import OutputArtifact, Sample

    output = OutputArtifact(system="s", suite="swebench", case_id="c", status="ok",
                            samples=[Sample(status="ok", patch="--- a/x.py\n+++ b/x.py\n")])
    typed = SandboxRun.model_validate({"status": "completed", **run})
    reference = PatchReference(patch_file="gold.diff", fail_to_pass=["t::a"], pass_to_pass=["t::b"])
    case = SimpleNamespace(reference_as=lambda model: reference)
    return patch_metrics(SimpleNamespace(), case, output, SimpleNamespace(runs=[typed]), SimpleNamespace()).values


def test_resolved_metric_is_the_harness_s_for_swebench_cases() -> None:
    assert _metrics({"resolved": False, "harness_resolved": True})["resolved"] == 1.0
    assert _metrics({"resolved": True, "harness_resolved": False})["resolved"] == 0.0
    assert _metrics({"resolved": True})["resolved"] == 1.0                  # not SWE-bench's: evalkit's verdict
    assert _metrics({"resolved": False, "harness_resolved": None})["resolved"] == 0.0  # no harness verdict


def test_resolved_says_why() -> None:
    from evalkit.artifacts import OutputArtifact, Sample
    from evalkit.outcomes import SandboxRun

    output = OutputArtifact(system="s", suite="swebench", case_id="c", status="ok",
                            samples=[Sample(status="ok", patch="--- a/x.py\n+++ b/x.py\n")])
    reference = PatchReference(patch_file="gold.diff", fail_to_pass=["t::a"], pass_to_pass=["t::b"])
    case = SimpleNamespace(reference_as=lambda model: reference)

    def why(run: dict) -> str:
        typed = SandboxRun.model_validate(run)
        return patch_metrics(SimpleNamespace(), case, output, SimpleNamespace(runs=[typed]),
                             SimpleNamespace()).explained()["resolved"]

    assert why({"status": "completed", "resolved": False, "fail_to_pass": {"t::a": "failed"},
                "pass_to_pass": {"t::b": "passed"}}) == "1 of 1 FAIL_TO_PASS tests fail (t::a)"
    assert why({"status": "completed", "resolved": True}) == "every FAIL_TO_PASS and PASS_TO_PASS test passes"
    assert why({"status": "patch_failed"}) == "the patch did not apply"
    assert why({"status": "tampered_with_tests", "test_changes": ["conftest.py: refused"]}) == (
        "the patch changes the tests: conftest.py")
    assert why({"status": "completed", "resolved": True, "harness_resolved": False}).startswith(
        "the SWE-bench harness says not resolved")


def test_the_log_the_harness_sees() -> None:
    from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT, TEST_EXIT_CODE

    from evalkit.swebench.harness import harness_log

    log = harness_log("PASSED a.py::t\n", 1)
    assert log.index(START_TEST_OUTPUT) < log.index("PASSED a.py::t") < log.index(END_TEST_OUTPUT) < log.index(f"{TEST_EXIT_CODE}: 1")
    assert TEST_EXIT_CODE not in harness_log("x", None)
    own = f"+ git apply\n{START_TEST_OUTPUT}\nPASSED a.py::t\n{END_TEST_OUTPUT}\n{TEST_EXIT_CODE}: 0\n"
    assert harness_log(own, 0) == own  # an eval script's output keeps its own markers
