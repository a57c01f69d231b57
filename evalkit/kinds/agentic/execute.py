"""execute for agentic suites: apply a system's changes and re-check every expected task's incident.

An incident is gone when its rule's matcher (regex or import check) no longer fires in the changed
file, and, when the expected task names tests, those tests pass in the sandbox.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalkit.artifacts import Sample
from evalkit.kinds.agentic.models import AgenticInputs, AgenticReference
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.graders.incidents import incident_present
from evalkit.sandbox.worktree import ChangeRejected, WorkTree, apply_changes
from evalkit.stages.execute import TreeUnavailable, app_test_run, source_tree


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError):
        return None


def _line(text: str | None, line: int | None) -> str | None:
    if text is None or line is None:
        return None
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else None


def recheck(cfg: Config, case: Case, sample: Sample) -> dict[str, Any]:
    """One sample's changes applied to a copy of the tree; per expected task, is its incident still there."""
    try:
        tree = source_tree(cfg, case)
    except TreeUnavailable as exc:
        return {"status": "case_error", "reason": str(exc)}
    expected = case.reference_as(AgenticReference).expected_tasks
    missing = sorted({t.file for t in expected if not (tree / t.file).is_file()})
    if missing:
        return {"status": "case_error", "reason": f"expected task file(s) not in the source tree: {', '.join(missing[:5])}"}
    inputs = case.inputs_as(AgenticInputs)
    matchers = inputs.matchers
    with WorkTree(tree) as wt:
        try:
            how, error = apply_changes(wt.path, sample.patch, sample.files), None
        except ChangeRejected as exc:
            how, error = None, str(exc)
        incidents = []
        for task in expected:
            rel = task.file
            before = _read(tree / rel)
            after = before if error else _read(wt.path / rel)
            present = incident_present(matchers.get(task.rule_id), after, rel, _line(before, task.line))
            incidents.append({"rule_id": task.rule_id, "file": rel, "line": task.line, "present": present})
        diff = "" if error else wt.diff()
    result: dict[str, Any] = {"status": "completed" if error is None else "patch_failed",
                              "reason": error or "", "changes": how, "incidents": incidents}
    test_ids = sorted({t for task in expected for t in task.tests})
    if error is None and test_ids and inputs.test_command:
        run = app_test_run(cfg, case, diff or None, test_ids)
        if run["status"] in ("infra_error", "case_error"):
            return {**run, "incidents": incidents}
        result.update({"tests": run.get("tests", {}), "required_tests": run.get("fail_to_pass", {}),
                       "test_status": run["status"], "exit_code": run.get("exit_code"),
                       "isolation": run.get("isolation"), "image_digest": run.get("image_digest"),
                       "duration_s": run.get("duration_s", 0.0), "log": run.get("log", ""),
                       "log_truncated": run.get("log_truncated", False), "test_changes": run.get("test_changes", [])})
        if run["status"] == "tampered_with_tests":  # its tests did not run: the reason names the files
            result["reason"] = run.get("reason", "")
    return result
