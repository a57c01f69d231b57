"""SWE-bench report.json entries from sandbox results, and re-grading saved logs (no container)."""

from __future__ import annotations

from evalkit.sandbox.spec import ExecutionResult
from evalkit.importers.swebench_report import instance_report, regrade_from_log

F2P = ["tests/test_fields.py::TestParentAndName::test_datetime_list_inner_format"]
P2P = ["tests/test_fields.py::TestField::test_repr", "tests/test_fields.py::test_field_aliases[Integer-Integer]"]

# The tail of a SWE-bench test_output.txt: harness markers around pytest -rA's short summary.
SWE_LOG = """+ pytest -rA tests/test_fields.py
============================= test session starts ==============================
collected 3 items

tests/test_fields.py ...                                                 [100%]

=========================== short test summary info ============================
PASSED tests/test_fields.py::test_field_aliases[Integer-Integer]
PASSED tests/test_fields.py::TestField::test_repr
{f2p_word} tests/test_fields.py::TestParentAndName::test_datetime_list_inner_format{tail}
============================== 3 passed in 0.12s ===============================
+ git checkout b40a0f4e33823e6d0f341f7e8684e359a99060d1 tests/test_fields.py
"""


def test_regrade_resolved_log() -> None:
    r = regrade_from_log(SWE_LOG.format(f2p_word="PASSED", tail=""), F2P, P2P)
    assert r.status == "completed" and r.resolved
    assert r.fail_to_pass == {F2P[0]: "passed"}
    assert set(r.pass_to_pass.values()) == {"passed"}


def test_regrade_failed_and_absent_ids() -> None:
    r = regrade_from_log(SWE_LOG.format(f2p_word="FAILED", tail=" - AttributeError: 'List' object has no attribute 'opts'"),
                         F2P, P2P + ["tests/test_fields.py::test_gone"])
    assert not r.resolved
    assert r.fail_to_pass == {F2P[0]: "failed"}
    assert r.pass_to_pass["tests/test_fields.py::test_gone"] == "failed"
    assert "absent" in r.reason


def test_regrade_collection_error_fails_the_file() -> None:
    log = "=== short test summary info ===\nERROR tests/test_fields.py - ImportError: cannot import name 'x'\n"
    r = regrade_from_log(log, F2P, P2P)
    assert not r.resolved and set(r.fail_to_pass.values()) == {"error"} and set(r.pass_to_pass.values()) == {"error"}


def test_regrade_without_outcomes_or_patch() -> None:
    r = regrade_from_log(">>>>> Patch Apply Failed:\nerror: patch failed: src/x.py:3\n", F2P, P2P)
    assert r.status == "no_tests" and not r.resolved and r.fail_to_pass == {F2P[0]: "failed"}
    r = regrade_from_log(SWE_LOG.format(f2p_word="PASSED", tail=""), F2P, P2P, patch_applied=False)
    assert r.status == "no_tests" and not r.resolved
    assert instance_report("i", r, "diff") == {"i": {"patch_is_None": False, "patch_exists": True,
                                                     "patch_successfully_applied": False, "resolved": False,
                                                     "infra_failure": False}}


def test_instance_report_from_execution_results() -> None:
    done = ExecutionResult(status="completed", reason="", isolation="docker", patch_applied=True, resolved=False,
                           fail_to_pass={F2P[0]: "passed"}, pass_to_pass={P2P[0]: "failed", P2P[1]: "flaky"})
    entry = instance_report("m-1", done, "diff --git a/x b/x\n")["m-1"]
    assert entry["patch_successfully_applied"] and not entry["resolved"]
    assert entry["tests_status"]["FAIL_TO_PASS"] == {"success": F2P, "failure": []}
    assert entry["tests_status"]["PASS_TO_PASS"] == {"success": [], "failure": sorted(P2P)}
    assert entry["tests_status"]["FAIL_TO_FAIL"] == entry["tests_status"]["PASS_TO_FAIL"] == {"success": [], "failure": []}
    failed = ExecutionResult(status="patch_failed", reason="does not apply", isolation="docker")
    assert instance_report("m-1", failed, "diff")["m-1"] == {
        "patch_is_None": False, "patch_exists": True, "patch_successfully_applied": False, "resolved": False,
        "infra_failure": False}
    # an empty answer and a missing one, as SWE-bench tells them apart
    assert instance_report("m-1", None, "")["m-1"]["patch_exists"] is False
    assert instance_report("m-1", None, None)["m-1"]["patch_is_None"] is True
    # a dict (execution.json's runs[0]) works the same as the model
    assert instance_report("m-1", done.model_dump(mode="json"), "d") == instance_report("m-1", done, "d")
