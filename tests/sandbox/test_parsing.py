"""Parsing test outcomes (pytest -rA lines, JUnit XML from pytest and Surefire); no Docker needed."""

from __future__ import annotations

import pytest

from evalkit.sandbox.parsing import apply_collection_errors, parse_junit, parse_pytest_summary

RA_OUTPUT = """\
tests/test_x.py ..F.sxX                                                  [100%]
=========================== short test summary info ============================
PASSED tests/test_x.py::test_a
PASSED tests/test_x.py::TestK::test_b[1-2]
FAILED tests/test_x.py::test_c - AssertionError: assert 1 == 2
ERROR tests/test_x.py::test_d - RuntimeError: fixture broke
PASSED tests/test_x.py::test_e
ERROR tests/test_x.py::test_e - teardown failed
SKIPPED [1] tests/test_x.py:40: unconditional skip
XFAIL tests/test_x.py::test_f - known bug
XPASS tests/test_x.py::test_g
ERROR tests/test_broken.py
=================== 1 failed, 3 passed, 1 skipped in 0.12s ====================
"""


def test_pytest_summary_lines():
    got = parse_pytest_summary(RA_OUTPUT)
    assert got == {
        "tests/test_x.py::test_a": "passed",
        "tests/test_x.py::TestK::test_b[1-2]": "passed",
        "tests/test_x.py::test_c": "failed",
        "tests/test_x.py::test_d": "error",
        "tests/test_x.py::test_e": "error",  # passed, then a teardown error: the worse wins
        "tests/test_x.py::test_f": "passed",
        "tests/test_x.py::test_g": "passed",
        "tests/test_broken.py": "error",
    }


def test_progress_lines_and_prose_are_not_outcomes():
    assert parse_pytest_summary("tests/test_x.py::test_a PASSED\nthe PASSED word\n PASSED x::y\n") == {}


def test_collection_error_marks_wanted_ids_of_that_file():
    tests = {"tests/test_broken.py": "error", "tests/test_ok.py::test_1": "passed"}
    got = apply_collection_errors(tests, ["tests/test_broken.py::test_z", "tests/test_ok.py::test_1"])
    assert got["tests/test_broken.py::test_z"] == "error"
    assert got["tests/test_ok.py::test_1"] == "passed"


PYTEST_JUNIT = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="2" tests="6">
<testcase classname="tests.test_x" name="test_a" time="0.001"/>
<testcase classname="tests.test_x.TestK" name="test_b[1-2]" time="0.001"/>
<testcase classname="tests.test_x" name="test_c"><failure message="assert 1 == 2">...</failure></testcase>
<testcase classname="tests.test_x" name="test_d"><error message="fixture">...</error></testcase>
<testcase classname="tests.test_x" name="test_s"><skipped type="pytest.skip" message="skip"/></testcase>
<testcase classname="tests.test_x" name="test_f"><skipped type="pytest.xfail" message="known"/></testcase>
<testcase classname="" name="tests.test_broken"><error message="collection failure">...</error></testcase>
</testsuite></testsuites>
"""


def test_pytest_junit_maps_to_node_ids():
    got = parse_junit(PYTEST_JUNIT, ["tests/test_x.py::test_a"])
    assert got == {
        "tests/test_x.py::test_a": "passed",
        "tests/test_x.py::TestK::test_b[1-2]": "passed",
        "tests/test_x.py::test_c": "failed",
        "tests/test_x.py::test_d": "error",
        "tests/test_x.py::test_s": "skipped",
        "tests/test_x.py::test_f": "passed",
        "tests.test_broken": "error",
    }
    # and the file-level collection error reaches the wanted ids of that file
    marked = apply_collection_errors(got, ["tests/test_broken.py::test_q"])
    assert marked["tests/test_broken.py::test_q"] == "error"


SUREFIRE = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" name="com.example.CalcTest"
           time="0.05" tests="4" errors="1" skipped="1" failures="1">
  <properties><property name="java.version" value="17"/></properties>
  <testcase name="addsNumbers" classname="com.example.CalcTest" time="0.01"/>
  <testcase name="multiplies" classname="com.example.CalcTest" time="0.01">
    <failure message="expected: &lt;6&gt; but was: &lt;5&gt;" type="org.opentest4j.AssertionFailedError">trace</failure>
  </testcase>
  <testcase name="divides" classname="com.example.CalcTest" time="0.01">
    <error message="boom" type="java.lang.ArithmeticException">trace</error>
  </testcase>
  <testcase name="later" classname="com.example.CalcTest" time="0"><skipped/></testcase>
</testsuite>
"""


def test_surefire_junit_by_class_and_method():
    got = parse_junit(SUREFIRE)
    assert got == {
        "com.example.CalcTest.addsNumbers": "passed",
        "com.example.CalcTest.multiplies": "failed",
        "com.example.CalcTest.divides": "error",
        "com.example.CalcTest.later": "skipped",
    }


def test_surefire_ids_come_back_as_the_caller_wrote_them():
    got = parse_junit(SUREFIRE, ["com.example.CalcTest#multiplies", "com.example.CalcTest::addsNumbers"])
    assert got["com.example.CalcTest#multiplies"] == "failed"
    assert got["com.example.CalcTest::addsNumbers"] == "passed"


@pytest.mark.parametrize("doc", [b"<html><body>PASSED</body></html>", b"<testsuite><testcase", b"\xff\x00"])
def test_non_junit_documents_are_rejected(doc):
    with pytest.raises(ValueError):
        parse_junit(doc)
