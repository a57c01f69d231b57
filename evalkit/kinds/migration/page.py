"""The migration part of a case page (``Kind.detail``), computed from the case JSON alone (evalkit.kinds.page_parts)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.kinds.migration.models import MigrationInputs
from evalkit.graders.degenerate import assess
from evalkit.graders.incidents import recheck_file
from evalkit.kinds.page_parts import answered, first_sample, typed_part

if TYPE_CHECKING:
    from evalkit.artifacts import SystemArtifacts
    from evalkit.case_detail import CaseDetail

LEGACY_KEY = "inputs.legacy_file"


def migration_detail(case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any] | None:
    """Each incident re-checked in the output (incidents_resolved) and the degenerate-output checks."""
    inputs = typed_part(MigrationInputs, case.inputs)
    if inputs is None:
        return None
    path = inputs.file_path
    sample = first_sample(arts)
    ok = answered(arts)
    files = sample.files
    deleted = path in sample.deleted_files and path not in files
    patch = sample.patch
    if ok and not files and not deleted and isinstance(patch, str) and patch.strip():
        # the answer is a diff (kai-eval's experiments): the file checks need the whole file, which it is not;
        # the diff itself is shown with the output, and scoring reads it as an answer (degenerate.empty_answer)
        return {"file": path, "deleted": False, "diff_only": True, "diff_lines": len(patch.splitlines()),
                "incidents": [], "counted": 0, "resolved": 0, "degenerate": None}
    text = None if deleted else (files.get(path) if ok and isinstance(files.get(path), str) else "")
    legacy = case.input_files.get(LEGACY_KEY) or ""
    incidents = inputs.incidents
    rows = []
    if incidents:
        checks = recheck_file(incidents, inputs.matchers, legacy, text, path)
        for inc, c in zip(incidents, checks):
            rows.append({"rule_id": c.rule_id, "line": c.line, "message": inc.message or inc.description,
                         "counted": c.counted, "checkable": c.checkable, "present": c.present})
    metrics = arts.scores.metrics if arts.scores is not None else {}
    if ok and text and metrics.get("complete") == 1.0 and metrics.get("unchanged") == 0.0:
        # the scorer ran the same checks on this file and found nothing: no need to run them again
        degenerate = {"empty": False, "unchanged": False, "complete": True, "elisions": [], "decided": None, "reason": ""}
    else:
        a = assess(text if ok else None, legacy if LEGACY_KEY in case.input_files else None, case.language)
        degenerate = {"empty": a.empty, "unchanged": a.unchanged, "complete": a.complete, "elisions": a.elisions,
                      "decided": a.decided, "reason": a.reason()}
    return {"file": path, "deleted": deleted, "diff_only": False, "incidents": rows,
            "counted": sum(r["counted"] for r in rows),
            "resolved": sum(r["counted"] and not r["present"] for r in rows),
            "degenerate": degenerate}
