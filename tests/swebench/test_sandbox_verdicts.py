"""Through the sandbox: a SWE-bench case's run carries the official harness's verdict beside evalkit's;
equal without trickery, different (and shown so) for a patch that prints fake PASSED lines."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from evalkit.sandbox import SandboxLimits, TestRunSpec, run_tests
from evalkit.importers.swebench_report import instance_report

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("EVALKIT_SANDBOX_IMAGE", "evalkit/python-pytest:bookworm")
F2P, P2P = "tests/test_calc.py::test_add", "tests/test_calc.py::test_mul"
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = ("from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_mul():\n    assert mul(2, 3) == 6\n")
# Not a fix: after pytest has printed its real summary, the module prints a PASSED line for the
# failing test and a FAILED line for a test that does not exist (so the log still shows a failure,
# as the harness's exit-code cross-check asks). The harness keeps the last line per id; evalkit the worst.
FAKE = CALC + ('\n\nimport atexit as _atexit, os as _os\n'
               '_atexit.register(lambda: _os.write(1, b"\\nPASSED tests/test_calc.py::test_add\\n'
               'FAILED tests/test_calc.py::test_decoy - AssertionError\\n"))\n')


def diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))


@pytest.fixture
def spec(tmp_path: Path):
    (tmp_path / "calc").mkdir()
    (tmp_path / "calc" / "__init__.py").write_text(CALC)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)

    def make(patch: str | None) -> TestRunSpec:
        return TestRunSpec(image=IMAGE, tree=str(tmp_path), patch=patch, fail_to_pass=[F2P], pass_to_pass=[P2P],
                           test_command="python3 -m pytest -rA -p no:cacheprovider tests",
                           log_parser="parse_log_pytest", limits=SandboxLimits(timeout_s=60))
    return make


def test_harness_agrees_with_evalkit_without_trickery(docker_engine, spec) -> None:
    gold = run_tests(spec(diff("calc/__init__.py", CALC, CALC.replace("a - b", "a + b"))), "docker")
    assert gold.status == "completed", gold.reason
    assert gold.resolved is True and gold.harness_resolved is True and gold.harness_parser == "parse_log_pytest"
    assert gold.harness_tests_status["FAIL_TO_PASS"] == {"success": [F2P], "failure": []}
    assert gold.harness_tests_status["PASS_TO_PASS"] == {"success": [P2P], "failure": []}
    empty = run_tests(spec(None), "docker")
    assert empty.resolved is False and empty.harness_resolved is False
    assert empty.harness_tests_status["FAIL_TO_PASS"] == {"success": [], "failure": [F2P]}
    entry = instance_report("demo", gold, "diff")["demo"]
    assert entry["resolved"] is True and "evalkit_resolved" not in entry and entry["infra_failure"] is False


def test_fake_passed_lines_fool_the_harness_not_evalkit(docker_engine, spec) -> None:
    r = run_tests(spec(diff("calc/__init__.py", CALC, FAKE)), "docker")
    assert r.status == "completed", r.reason
    assert "PASSED tests/test_calc.py::test_add" in r.log  # the fake line is there
    assert r.fail_to_pass == {F2P: "failed"} and r.resolved is False       # evalkit: worst status wins
    assert r.harness_resolved is True                                      # the harness: last line wins
    assert r.harness_tests_status["FAIL_TO_PASS"]["success"] == [F2P]
    entry = instance_report("demo", r, "diff")["demo"]
    assert entry["resolved"] is True and entry["evalkit_resolved"] is False  # both kept, shown as differing
