"""The agentic part of a case page (``Kind.detail``), computed from the case JSON alone (evalkit.kinds.page_parts)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.kinds.agentic.models import AgenticReference
from evalkit.graders.incidents import match_tasks
from evalkit.kinds.page_parts import answered, first_run, first_sample, typed_part

if TYPE_CHECKING:
    from evalkit.artifacts import SystemArtifacts
    from evalkit.case_detail import CaseDetail


def agentic_detail(case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any]:
    """Discovered against expected tasks (the scorer's one-to-one matching) and each incident's re-check."""
    reference = typed_part(AgenticReference, case.reference)
    expected = reference.expected_tasks if reference is not None else []
    discovered = list(first_sample(arts).tasks) if answered(arts) else []
    tolerance = reference.line_tolerance if reference is not None else 2
    match = match_tasks(discovered, expected, tolerance)
    by_expected = {e: d for d, e in match.pairs}
    run = first_run(arts)
    incidents = (run.incidents if run is not None else None) or []
    required = (run.required_tests if run is not None else None) or {}
    rows = []
    for ei, task in enumerate(expected):
        inc = incidents[ei] if ei < len(incidents) else None
        tests = [{"id": t, "status": required.get(t, "not run")} for t in task.tests]
        gone = inc is not None and not inc.present
        d = by_expected.get(ei)
        rows.append({"rule_id": task.rule_id, "file": task.file, "line": task.line, "matched": d is not None,
                     "discovered": discovered[d].model_dump(mode="json") if d is not None else None,
                     "present": None if inc is None else inc.present, "tests": tests,
                     "resolved": d is not None and gone and all(t["status"] == "passed" for t in tests)})
    extra = [dict(t.model_dump(mode="json"), index=i) for i, t in enumerate(discovered) if i not in match.matched_discovered]
    return {"expected": rows, "unmatched": extra, "n_discovered": len(discovered), "n_matched": len(match.pairs),
            "tolerance": tolerance, "run_status": run.status if run is not None else None,
            "run_reason": run.reason if run is not None else "", "changes": run.changes if run is not None else None}
