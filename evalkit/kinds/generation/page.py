"""The generation part of a case page (``Kind.detail``), computed from the case JSON alone (evalkit.kinds.page_parts)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.graders.injection import DETECTORS
from evalkit.kinds.page_parts import first_sample, graded

if TYPE_CHECKING:
    from evalkit.artifacts import SystemArtifacts
    from evalkit.case_detail import CaseDetail


def generation_detail(case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any]:
    """Each rubric criterion with its text and verdict, and every injection finding (detector, file, line, snippet)."""
    rubric, extra = graded(arts)
    results = {r.id: r for r in (rubric.results if rubric is not None else [])}
    criteria = []
    for i, c in enumerate(case.criteria, start=1):
        cid = c.id or f"c{i}"  # the id the rubric judge gives a criterion without one (graders.judge_dispatch)
        r = results.get(cid)
        criteria.append({"id": cid, "text": c.text, "weight": c.weight,
                         "met": r.met if r else None, "met_fraction": r.met_fraction if r else None,
                         "reason": r.reason if r else "", "judged": r is not None})
    sample = first_sample(arts)
    texts = [(k, v) for k, v in sorted(sample.files.items()) if isinstance(v, str)]
    texts += [(label, t) for label, t in (("(text)", sample.text), ("(patch)", sample.patch))
              if isinstance(t, str) and t]
    findings = []
    for name, (description, fn) in DETECTORS.items():
        for file, text in texts:
            for f, line, snippet in fn(file, text):
                findings.append({"detector": name, "description": description, "file": f, "line": line, "snippet": snippet})
    checked = bool(extra.injection) or bool(findings)
    return {"criteria": criteria, "rubric_status": rubric.status if rubric else None,
            "rubric_error": rubric.error if rubric else None,
            "findings": findings, "injection_checked": checked, "detectors": {k: v[0] for k, v in DETECTORS.items()}}
