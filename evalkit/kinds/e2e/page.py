"""The e2e part of a case page (``Kind.detail``), computed from the case JSON alone (evalkit.kinds.page_parts)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.kinds.e2e.models import E2EInputs
from evalkit.kinds.page_parts import diff_lines, first_run, typed_part

if TYPE_CHECKING:
    from evalkit.artifacts import SystemArtifacts
    from evalkit.case_detail import CaseDetail


def e2e_detail(case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any] | None:
    """The migration loop: per iteration what the system changed, the tests that failed, the feedback it got."""
    run = first_run(arts)
    if run is None:
        return None
    iterations = []
    loop = run.iterations or []
    for n, it in enumerate(loop):
        nxt = loop[n + 1] if n + 1 < len(loop) else None
        iterations.append({
            "iteration": it.iteration, "system_status": it.system_status,
            "change": it.change, "change_error": it.change_error, "diff": diff_lines(it.diff or ""),
            "test_status": it.test_status, "test_reason": it.test_reason or "",
            "passed": it.passed, "total": it.total, "failing": it.failing,
            # feedback exists only when a next iteration was asked for; it names the failing tests and the log tail
            "feedback": None if nxt is None or not it.failing else {
                "failing_tests": it.failing, "change_error": it.change_error, "log": it.feedback_log,
                "refused": it.test_reason or ""},
            "steps": it.steps, "help_requests": it.help_requests,
            "system_wall_s": it.system_wall_s, "test_s": it.test_s,
            "usage": it.usage.model_dump(mode="json")})
    return {"status": run.status, "ended": run.reason, "stable_at": run.stable_at,
            "passed": run.passed, "total": run.total, "iterations": iterations,
            "max_iterations": inputs.max_iterations if (inputs := typed_part(E2EInputs, case.inputs)) else None,
            "final_patch": diff_lines(run.final_patch or "")}
