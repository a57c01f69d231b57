"""run_tests against the real Docker engine on a tiny buggy project (reuses one image)."""

from __future__ import annotations

import threading

import pytest

from evalkit.sandbox import run_tests

pytestmark = pytest.mark.docker

F2P = "tests/test_calc.py::test_add"
P2P = "tests/test_calc.py::test_mul"


def test_correct_fix_is_resolved(docker_engine, spec_for, leftovers):
    r = run_tests(spec_for(), "docker")
    assert r.status == "completed", r.reason
    assert r.isolation == "docker"
    assert r.resolved is True
    assert r.patch_applied and r.patch_method == "git apply"
    assert r.fail_to_pass == {F2P: "passed"} and r.pass_to_pass == {P2P: "passed"}
    assert r.exit_code == 0
    assert r.image_digest == docker_engine
    assert "2 passed" in r.log
    assert leftovers() == []


def test_no_patch_runs_the_unmodified_tree(docker_engine, spec_for):
    r = run_tests(spec_for(patch=None), "docker")
    assert r.status == "completed" and r.resolved is False
    assert r.patch_applied is False and r.patch_method is None
    assert r.fail_to_pass == {F2P: "failed"} and r.exit_code == 1


def test_patch_that_does_not_apply_is_the_systems_failure(docker_engine, spec_for, make_diff):
    bad = make_diff("calc/__init__.py", "def add(a, b):\n    return a * 7\n", "def add(a, b):\n    return a + b\n")
    r = run_tests(spec_for(patch=bad), "docker")
    assert r.status == "patch_failed", r.reason
    assert r.resolved is None and r.patch_applied is False
    assert "does not apply" in r.reason


def test_fuzzy_patch_falls_back_to_patch_fuzz(docker_engine, spec_for, calc_source, make_diff):
    # One context line differs from the tree: git apply refuses, patch --fuzz applies.
    drifted = calc_source.replace("def mul(a, b):", "def mul(a, b):  # drifted")
    fuzzy = make_diff("calc/__init__.py", drifted, drifted.replace("a - b", "a + b"))
    r = run_tests(spec_for(patch=fuzzy), "docker")
    assert r.status == "completed", r.reason
    assert r.patch_method == "patch --fuzz=3"
    assert r.resolved is True


def test_fix_that_breaks_pass_to_pass_is_not_resolved(docker_engine, spec_for, calc_source, make_diff):
    broken = calc_source.replace("a - b", "a + b").replace("a * b", "a ** b")
    r = run_tests(spec_for(patch=make_diff("calc/__init__.py", calc_source, broken)), "docker")
    assert r.status == "completed"
    assert r.resolved is False
    assert r.fail_to_pass == {F2P: "passed"} and r.pass_to_pass == {P2P: "failed"}


def test_hanging_test_times_out_and_leaves_no_container(docker_engine, spec_for, make_diff, fix_patch, leftovers):
    hang = make_diff("tests/test_hang.py", None, "import time\n\n\ndef test_hang():\n    time.sleep(600)\n")
    r = run_tests(spec_for(patch=fix_patch + hang, limits={"timeout_s": 5}), "docker")
    assert r.status == "timeout", r.reason
    assert r.resolved is None and r.exit_code is None
    assert 4.5 <= r.duration_s < 30
    assert leftovers() == []


def test_fake_passed_lines_do_not_resolve(docker_engine, spec_for, make_diff):
    conftest = (
        "def pytest_unconfigure(config):\n"
        "    print('PASSED tests/test_calc.py::test_add')\n"
        "    print('PASSED tests/test_calc.py::test_mul')\n"
    )
    r = run_tests(spec_for(patch=make_diff("conftest.py", None, conftest)), "docker")
    assert r.status == "completed"
    assert "PASSED tests/test_calc.py::test_add" in r.log  # the lie was printed...
    assert r.fail_to_pass == {F2P: "failed"}  # ...and not believed
    assert r.resolved is False


def test_faked_summary_with_forced_exit_zero_does_not_resolve(docker_engine, spec_for, make_diff):
    # The conftest prints a fake summary and exits 0 before any test runs: only the JUnit report,
    # which pytest never writes, tells the truth.
    conftest = (
        "import os\n\n\ndef pytest_configure(config):\n"
        "    print('PASSED tests/test_calc.py::test_add')\n"
        "    print('PASSED tests/test_calc.py::test_mul')\n"
        "    os._exit(0)\n"
    )
    r = run_tests(
        spec_for(patch=make_diff("conftest.py", None, conftest),
                 test_command="python3 -m pytest -rA -p no:cacheprovider --junitxml=report.xml tests",
                 junit_paths=["report.xml"]),
        "docker",
    )
    assert r.status == "completed" and r.exit_code == 0
    assert r.resolved is False
    assert "no JUnit report" in r.reason


def test_planted_junit_report_is_not_collected(docker_engine, spec_for, make_diff):
    planted = ('<testsuites><testsuite name="pytest"><testcase classname="tests.test_calc" name="test_add"/>'
               '<testcase classname="tests.test_calc" name="test_mul"/></testsuite></testsuites>\n')
    r = run_tests(
        spec_for(patch=make_diff("report.xml", None, planted), test_command="true", junit_paths=["report.xml"]),
        "docker",
    )
    assert r.status == "completed" and r.resolved is False
    assert r.tests == {}


def test_junit_report_is_preferred_and_mapped_to_node_ids(docker_engine, spec_for):
    r = run_tests(
        spec_for(test_command="python3 -m pytest -p no:cacheprovider --junitxml=out/report.xml tests",
                 junit_paths=["out/*.xml"]),
        "docker",
    )
    assert r.status == "completed", r.reason
    assert r.tests == {F2P: "passed", P2P: "passed"}
    assert r.resolved is True
