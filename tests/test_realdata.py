"""The real-data tests read ../shared/realdata through one helper (issue 27, item 8): `helpers.realdata` and
the `realdata` marker. Absent, a test fails in CI (CI=true: CI has the data) and skips elsewhere; never a
hard-coded machine path."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from helpers import REALDATA, REPO

ONE_TEST = "tests/graders/test_syntax_ts_js.py"  # its real-data test carries the marker


def pytest_run(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALKIT_REALDATA": str(tmp_path / "no-such-data")}
    env.pop("CI", None)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", ONE_TEST, "-q", "-rs", "-k", "real", "-p", "no:randomly", "-n", "0"],
                          cwd=str(REPO), env=env, capture_output=True, text=True, timeout=300)


def test_absent_real_data_fails_in_ci(tmp_path: Path) -> None:
    proc = pytest_run(tmp_path, "true")
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "CI=true: CI must have ../shared/realdata" in proc.stdout and " skipped" not in proc.stdout


def test_absent_real_data_skips_elsewhere(tmp_path: Path) -> None:
    proc = pytest_run(tmp_path, None)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert re.search(r"\b1 skipped\b", proc.stdout) and "no-such-data" in proc.stdout


def test_no_test_names_one_machines_path() -> None:
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("*.py")
                 if '"/work/' + 'shared' in p.read_text(encoding="utf-8")]  # split: this file is not one
    assert not offenders, offenders
    assert REALDATA.name == "realdata"
