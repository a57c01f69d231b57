"""execute(cfg, system, case, output), called directly: what it runs and what it records."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from helpers import patch_project

from evalkit.artifacts import OutputArtifact, Sample
from evalkit.errors import Problem
from evalkit.project import load
from evalkit.sandbox.tamper import DEFAULT_TEST_PATHS
from evalkit.stages.execute import execute, run_spec

def _output(system: str, case, status: str = "ok", reason: str = "", patch: str | None = None) -> OutputArtifact:
    sample = Sample(status=status, reason=reason, patch=patch)  # type: ignore[arg-type]
    return OutputArtifact(system=system, suite=case.suite, case_id=case.id, status=status,  # type: ignore[arg-type]
                          reason=reason, samples=[sample])


@pytest.mark.parametrize("status", ["error", "timeout", "infra_error", "not_attempted"])
def test_an_output_that_is_not_ok_keeps_its_status_and_runs_nothing(patch, status: str) -> None:
    cfg, case, systems = patch
    out = _output("empty", case, status=status, reason=f"the system said {status}")
    result = execute(cfg, systems["empty"], case, out)
    assert result.status == status and result.reason == f"the system said {status}"
    assert result.runs == []
    assert not (Path(cfg.work_path) / "cache" / "sandbox").exists()  # no sandbox run was even looked up


def test_the_gold_patch_runs_the_tests_and_resolves(patch) -> None:
    cfg, case, systems = patch
    out = _output("gold", case, patch=case.read("reference.patch_file"))
    result = execute(cfg, systems["gold"], case, out)
    assert result.status == "ok", result.reason
    (run,) = result.runs
    assert run.resolved is True
    assert run.fail_to_pass and set(run.fail_to_pass.values()) == {"passed"}
    assert result.provenance is not None
    assert (Path(cfg.work_path) / "cache" / "sandbox").is_dir()  # where the other tests look for a run


def test_a_patch_that_does_not_apply_is_a_result_not_an_error(patch) -> None:
    cfg, case, systems = patch
    bad = "--- a/nothing.py\n+++ b/nothing.py\n@@ -1,1 +1,1 @@\n-x = 1\n+x = 2\n"
    result = execute(cfg, systems["empty"], case, _output("empty", case, patch=bad))
    assert result.status == "ok"  # the system's patch failing is what it scored, not an evalkit failure
    (run,) = result.runs
    assert run.status == "patch_failed" and not run.resolved
    assert "does not apply" in run.reason


def test_a_broken_case_is_an_error_without_a_run(patch) -> None:
    cfg, case, systems = patch
    broken = dataclasses.replace(case, problems=[Problem("case.yaml", 3, "reference.patch_file: file not found")])
    result = execute(cfg, systems["gold"], broken, _output("gold", case, patch=case.read("reference.patch_file")))
    assert result.status == "error" and result.runs == []
    assert not (Path(cfg.work_path) / "cache" / "sandbox").exists()


def test_a_suites_test_paths_reach_the_sandbox_request(tmp_path, monkeypatch) -> None:
    for name in ("EVALKIT_CONFIG", "EVALKIT_RELEASE", "EVALKIT_SELECT"):
        monkeypatch.delenv(name, raising=False)
    root = patch_project(tmp_path / "p", backend="local", cases=["round-half-up"], systems=("gold",))
    loaded = load(str(root / "evalkit.yaml"), refresh=True)
    case = loaded.project.case("patch/round-half-up")
    assert run_spec(loaded.config, case, None).test_paths == list(DEFAULT_TEST_PATHS)
    suite = root / "cases" / "patch" / "suite.yaml"
    suite.write_text(suite.read_text() + "test_paths: [checks/, '*_check.py']\n")
    loaded = load(str(root / "evalkit.yaml"), refresh=True)
    case = loaded.project.case("patch/round-half-up")
    assert run_spec(loaded.config, case, "diff").test_paths == ["checks/", "*_check.py"]
