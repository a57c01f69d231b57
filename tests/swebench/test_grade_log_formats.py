"""`evalkit swebench grade` grades every log format evalkit itself writes, and never grades a log it cannot
read as "patch not applied" in silence: the harness's test_output.txt as it is, evalkit's sandbox log
(the site's <case>.<system>.log.txt) rewritten into the harness's shape, anything else refused (exit 2,
named, left out of the report)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from swebench.harness.constants import APPLY_PATCH_PASS, END_TEST_OUTPUT, START_TEST_OUTPUT

from helpers import in_process

HERE = Path(__file__).resolve().parent
ROW = next(r for r in json.loads((HERE / "lite_rows.json").read_text()) if r["instance_id"] == "pydicom__pydicom-1413")


def pytest_output(passed: list[str], failed: list[str]) -> str:
    lines = ["============================= test session starts ==============================",
             "=========================== short test summary info ============================"]
    lines += [f"PASSED {t}" for t in passed] + [f"FAILED {t} - AssertionError" for t in failed]
    return "\n".join(lines) + "\n"


def evalkit_log(output: str, *, applied: bool = True, status: int = 0) -> str:
    """The shape of evalkit's sandbox log (evalkit/sandbox/outcome.py: runner, then test output per phase)."""
    runner = ("evalkit[main]: patch applied with git apply\nevalkit[main]: running: python3 -m pytest -rA\n"
              f"evalkit[main]: test command exited with status {status}\n") if applied else \
        "evalkit[main]: git apply did not apply:\nerror: patch failed\nevalkit[main]: no method applied the patch\n"
    return f"===== main: runner =====\n{runner}\n===== main: test output =====\n{output if applied else ''}"


def grade(tmp: Path, logs: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], dict]:
    rows = tmp / "rows.json"
    rows.write_text(json.dumps([ROW]))
    for folder, text in logs.items():
        (tmp / "logs" / folder).mkdir(parents=True)
        (tmp / "logs" / folder / "test_output.txt").write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "EVALKIT_CONFIG"}
    # in this process (helpers.in_process: the process's exit status and output, without an interpreter to start)
    proc = in_process(["swebench", "grade", str(rows), "--logs", str(tmp / "logs"), "--out", str(tmp / "report.json")],
                      cwd=tmp, env=env)
    report = json.loads((tmp / "report.json").read_text()) if (tmp / "report.json").is_file() else {}
    return proc, report


def test_evalkit_sandbox_log_is_graded_as_the_harness_log_is(tmp_path: Path) -> None:
    iid = ROW["instance_id"]
    out = pytest_output(ROW["FAIL_TO_PASS"] + ROW["PASS_TO_PASS"], [])
    harness = f"{APPLY_PATCH_PASS}\n{START_TEST_OUTPUT}\n{out}{END_TEST_OUTPUT}\n"
    (tmp_path / "a").mkdir()
    proc, official = grade(tmp_path / "a", {iid: harness})
    assert proc.returncode == 0, proc.stderr
    assert official[iid]["resolved"] is True
    (tmp_path / "b").mkdir()
    proc, ours = grade(tmp_path / "b", {iid: evalkit_log(out)})
    assert proc.returncode == 0, proc.stderr
    assert ours[iid]["resolved"] is True and ours[iid]["patch_successfully_applied"] is True
    assert ours[iid]["tests_status"] == official[iid]["tests_status"]


def test_evalkit_log_of_a_failing_or_unapplied_patch(tmp_path: Path) -> None:
    iid = ROW["instance_id"]
    failing = pytest_output(ROW["PASS_TO_PASS"], ROW["FAIL_TO_PASS"])
    (tmp_path / "a").mkdir()
    proc, report = grade(tmp_path / "a", {iid: evalkit_log(failing, status=1)})
    assert proc.returncode == 0 and report[iid]["resolved"] is False
    assert report[iid]["patch_successfully_applied"] is True
    assert report[iid]["tests_status"]["FAIL_TO_PASS"]["failure"] == ROW["FAIL_TO_PASS"]
    (tmp_path / "b").mkdir()
    proc, report = grade(tmp_path / "b", {iid: evalkit_log("", applied=False)})
    assert proc.returncode == 0 and report[iid]["patch_successfully_applied"] is False


def test_a_log_in_no_known_format_is_refused_not_graded(tmp_path: Path) -> None:
    iid = ROW["instance_id"]
    proc, report = grade(tmp_path, {iid: pytest_output(ROW["FAIL_TO_PASS"] + ROW["PASS_TO_PASS"], [])})
    assert proc.returncode == 2
    assert "no format evalkit knows" in proc.stderr and iid in proc.stderr
    assert iid not in report  # not "patch not applied", 0/1
