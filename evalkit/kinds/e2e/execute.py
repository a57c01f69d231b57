"""execute for e2e suites: migrate a whole application, iterating on failing tests.

Iteration 1 applies the system's answer from the generate stage to a working copy of the tree and
runs the application's tests in the sandbox. While tests fail and iterations remain, the system is
run again on the changed tree with the failing tests' output (`inputs.feedback` in the case JSON);
its new changes apply on top. The loop stops when every reference test passes (the case became
stable at that iteration), when the system changes nothing (it gave up) or fails, or at
`max_iterations`. Every system call and test run is content-addressed, so a killed run resumes
without paying twice.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from pathlib import Path
from typing import Any

from evalkit.artifacts import Sample
from evalkit.kinds.e2e.models import E2EInputs, E2EReference
from evalkit.cases import Case
from evalkit.config import Config, System
from evalkit.fsutil import digest
from evalkit.sandbox.worktree import ChangeRejected, WorkTree, apply_changes, text_files
from evalkit.stages.execute import TreeUnavailable, app_test_run, source_tree
from evalkit.stages.generate import generate_key
from evalkit.store import ContentStore
from evalkit.systems.base import RunContext, run_system


class RerunInputs(E2EInputs):
    """What a system re-invoked by the e2e loop gets: the case's inputs and what the previous iteration's
    tests said (``feedback``: exit status, failing tests, the log's tail)."""

    feedback: dict[str, Any]
    """The previous iteration's test outcome, as the command protocol documents it."""

FEEDBACK_LOG_CHARS = 6000


def _feedback(iteration: int, failing: list[str], run: dict[str, Any], change_error: str | None) -> dict[str, Any]:
    log = run.get("log", "")
    return {"iteration": iteration, "failing_tests": failing, "change_error": change_error,
            "log": log[-FEEDBACK_LOG_CHARS:]}


def iteration_diff(before: dict[str, str], after: dict[str, str]) -> str:
    """A unified diff of what one iteration changed in the tree (text files, a/ b/ paths)."""
    chunks = []
    for rel in sorted(set(before) | set(after)):
        a, b = before.get(rel), after.get(rel)
        if a != b:
            chunks.append(f"diff --git a/{rel} b/{rel}\n" + "".join(difflib.unified_diff(
                (a or "").splitlines(keepends=True), (b or "").splitlines(keepends=True),
                f"a/{rel}" if a is not None else "/dev/null", f"b/{rel}" if b is not None else "/dev/null")))
    return "".join(c if c.endswith("\n") else c + "\n" for c in chunks)


def reinvoke(cfg: Config, system: System, case: Case, wt: WorkTree, rel: str, feedback: dict[str, Any],
             sample_index: int) -> Sample:
    """Run the system again on the current tree with feedback (cached by tree, feedback and system)."""

    store = ContentStore(cfg.work_path / "cache", "generate")
    key = store.key({"base": generate_key(cfg, system, case, sample_index), "tree": digest(sorted(text_files(wt.path).items())),
                     "feedback": feedback})
    with store.claim(key):
        hit = store.get(key)
        if hit is not None:
            return Sample.model_validate(hit)
        derived = dataclasses.replace(
            case, dir=str(wt.root / "case"), refs={**case.refs, "inputs.source_dir": str(wt.path)},
            inputs=RerunInputs(**dict(case.inputs_as(E2EInputs)), feedback=feedback))
        sample = run_system(system, derived, sample_index,
                            RunContext(root=Path(cfg.root), work=cfg.work_path, judge=cfg.judge))
        if sample.status != "infra_error":
            store.put(key, sample.model_dump(mode="json"))
        return sample


def iterate(cfg: Config, system: System, case: Case, first: Sample, sample_index: int = 0) -> dict[str, Any]:
    """The whole migration loop for one sample; returns the execute stage's run record."""
    try:
        tree = source_tree(cfg, case)
    except TreeUnavailable as exc:
        return {"status": "case_error", "reason": str(exc)}
    inputs, tests = case.inputs_as(E2EInputs), case.reference_as(E2EReference).tests
    if not tests or not inputs.test_command:
        return {"status": "case_error", "reason": "an e2e case needs inputs.test_command and reference.tests"}
    rel = os.path.relpath(case.refs["inputs.source_dir"], case.dir)
    iterations: list[dict[str, Any]] = []
    sample, run, stable_at, ended = first, {}, None, "max_iterations"
    feedback: dict[str, Any] = {}  # what the previous iteration's tests said (set before every re-run)
    with WorkTree(tree, name=os.path.normpath(os.path.join("case", rel))) as wt:
        for i in range(1, inputs.max_iterations + 1):
            if i > 1:
                sample = reinvoke(cfg, system, case, wt, rel, feedback, sample_index)
            record: dict[str, Any] = {"iteration": i, "system_status": sample.status, "system_wall_s": sample.wall_s,
                                      "steps": sample.steps, "help_requests": sample.help_requests,
                                      "usage": sample.usage.model_dump(mode="json")}
            if sample.status == "infra_error":
                return {"status": "infra_error", "reason": f"system run {i}: {sample.reason}", "iterations": iterations}
            if sample.status != "ok":
                record["change"] = None
                iterations.append(record)
                ended = f"system {sample.status} at iteration {i}: {sample.reason}"[:300]
                break
            before = text_files(wt.path)
            try:
                change, change_error = apply_changes(wt.path, sample.patch, sample.files), None
            except ChangeRejected as exc:
                change, change_error = None, str(exc)
            record.update(change=change, change_error=change_error, diff=iteration_diff(before, text_files(wt.path)))
            if i > 1 and change is None and change_error is None:
                iterations.append(record)
                ended = f"the system changed nothing at iteration {i} (gave up)"
                break
            run = app_test_run(cfg, case, wt.diff() or None, tests)
            if run["status"] in ("infra_error", "case_error"):
                return {**run, "iterations": iterations}
            required = run.get("fail_to_pass", {})
            failing = [t for t in tests if required.get(t) != "passed"]
            record.update(test_status=run["status"], test_s=run.get("duration_s", 0.0),
                          passed=len(tests) - len(failing), total=len(tests), failing=failing)
            iterations.append(record)
            if not failing:
                stable_at, ended = i, "every test passes"
                break
            feedback = _feedback(i, failing, run, change_error)
            record["feedback_log"] = feedback["log"]  # what the next iteration's system run is shown
            if run["status"] == "tampered_with_tests":  # no test ran: tell the system why
                record["test_reason"] = feedback["refused"] = run.get("reason", "")
        final_patch = wt.diff()
    last = next((r for r in reversed(iterations) if "passed" in r), None)
    return {
        "status": "completed", "reason": ended, "iterations": iterations, "stable_at": stable_at,
        "passed": last["passed"] if last else 0, "total": len(tests),
        "help_requests": sum(r["help_requests"] for r in iterations),
        "system_s": round(sum(r["system_wall_s"] for r in iterations), 3),
        "test_s": round(sum(r.get("test_s", 0.0) for r in iterations), 3),
        "steps": sum(r["steps"] or 0 for r in iterations),
        "tests": run.get("tests", {}), "required_tests": run.get("fail_to_pass", {}), "exit_code": run.get("exit_code"),
        "isolation": run.get("isolation"), "image_digest": run.get("image_digest"), "log": run.get("log", ""),
        "log_truncated": run.get("log_truncated", False), "final_patch": final_patch,
    }
