"""The demo patch suite end to end in Docker: patch-bot's uneven recipes, gold, empty, and a broken case.

Needs a Docker engine and the sandbox image; skips without them, and fails instead when
EVALKIT_REQUIRE_DOCKER=1 (CI), as the sandbox tests do.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import evalkit, patch_project

pytestmark = pytest.mark.docker
CASES = ["currency-code", "parse-thousands", "remove-below-zero", "round-half-up", "slug-lowercase",
         "total-value-quantity", "truncate-limit"]
TEXT_P2P = "tests/test_text.py::test_slug_separators"


def run_of(work: Path, system: str, case: str) -> dict:
    art = json.loads((work / "artifacts" / system / "patch" / case / "execution.json").read_text())
    assert art["status"] == "ok", (system, case, art["status"], art["reason"])
    return art["runs"][0]


def test_patch_demo_outcomes_and_a_broken_case(docker_engine: str, tmp_path: Path) -> None:
    project = patch_project(tmp_path / "proj")
    work = project / ".evalkit"
    evalkit(project, "run", "--jobs", "2", timeout=240)

    for case in CASES:
        validation = json.loads((work / "validation" / "patch" / f"{case}.json").read_text())
        assert validation["status"] == "valid", validation
        assert run_of(work, "gold", case)["resolved"] is True, case
        assert run_of(work, "empty", case)["resolved"] is False, case
        empty = json.loads((work / "artifacts" / "empty" / "patch" / case / "scores.json").read_text())
        assert empty["metrics"]["answered"] == 0.0, case  # an empty patch is no answer

    bot = {case: run_of(work, "patch-bot", case) for case in CASES}
    assert {c for c, r in bot.items() if r["resolved"]} == {"round-half-up", "truncate-limit"}
    # a patch for a file that is not in the tree
    assert bot["remove-below-zero"]["status"] == "patch_failed" and bot["remove-below-zero"]["patch_applied"] is False
    # fixes its bug but breaks an existing test
    slug = bot["slug-lowercase"]
    assert slug["status"] == "completed" and slug["patch_applied"] and slug["resolved"] is False
    assert slug["pass_to_pass"][TEXT_P2P] == "failed"
    assert slug["fail_to_pass"] == {"tests/test_slug.py::test_slug_lower_case": "passed"}
    # loops forever
    assert bot["total-value-quantity"]["status"] == "timeout"
    # adds a tests/conftest.py that prints fake PASSED lines instead of fixing anything: refused as
    # a change to test infrastructure (the suite's test_changes policy defaults to refuse)
    fake = bot["parse-thousands"]
    assert fake["status"] == "tampered_with_tests" and fake["patch_applied"] is False and fake["resolved"] is False
    assert "tests/conftest.py" in fake["reason"]

    scores = json.loads((work / "artifacts" / "patch-bot" / "patch" / "round-half-up" / "scores.json").read_text())
    assert scores["metrics"]["resolved"] == 1.0 and scores["excluded"] is None

    # A broken case: the gold patch of round-half-up, but a FAIL_TO_PASS id that does not exist.
    broken_dir = project / "cases" / "patch" / "round-half-up-bad-id"
    shutil.copytree(project / "cases" / "patch" / "round-half-up", broken_dir)
    text = (broken_dir / "case.yaml").read_text()
    text = text.replace("id: round-half-up", "id: round-half-up-bad-id").replace(
        "tests/test_round.py::test_round_half_up", "tests/test_round.py::test_no_such_test")
    (broken_dir / "case.yaml").write_text(text)
    evalkit(project, "run", "--jobs", "2", timeout=240)

    validation = json.loads((work / "validation" / "patch" / "round-half-up-bad-id.json").read_text())
    assert validation["status"] == "broken"
    assert "gold patch does not resolve" in validation["reason"] and "test_no_such_test" in validation["reason"]
    for system in ("patch-bot", "gold", "empty"):
        scores = json.loads((work / "artifacts" / system / "patch" / "round-half-up-bad-id" / "scores.json").read_text())
        assert scores["excluded"] == "broken" and scores["status"] == "broken", (system, scores)
    report = json.loads((project / "site" / "r1" / "report.json").read_text())
    # the container budget's line (issue 32): what it allowed and what ran, read from the run's record
    (note,) = [n for n in report["notes"] if n.startswith("Sandbox containers: at most ")]
    record = json.loads((work / "sandbox-run.json").read_text())
    assert record["started"] > 0 and 1 <= record["peak"] <= record["limit"] and record["failed_starts"] == 0
    assert f"at most {record['limit']} at once" in note and f"{record['started']} started" in note
    (suite,) = [s for s in report["suites"] if s["name"] == "patch"]
    assert [b.split(":", 1)[0] for b in suite["broken"]] == ["round-half-up-bad-id"]
    # the other seven still count; the broken one does not
    gold = next(s for s in report["systems"] if s["name"] == "gold")
    assert gold["metrics"]["resolved"]["value"] == 1.0 and gold["metrics"]["resolved"]["n"] == 7
