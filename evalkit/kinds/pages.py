"""What a case page shows per suite kind (each kind's ``Kind.detail``), computed from the case JSON alone.

Every value here comes from site/<release>/cases/<suite>/<case>.json (the case's inputs,
reference and criteria, and each system's artifacts): the page never reads the work folder.
Re-checks (task matching, incidents, degenerate output, injection findings) call the same
graders the scorers do, so the page shows how a metric came about, not a second opinion.
The result is plain data; templates autoescape every string of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from evalkit.artifacts import Sample, SystemArtifacts
from evalkit.casemodels import AgenticReference, E2EInputs, MigrationInputs, RagInputs
from evalkit.difflines import line_class
from evalkit.graders.degenerate import assess
from evalkit.graders.incidents import match_tasks, recheck_file
from evalkit.graders.injection import DETECTORS
from evalkit.outcomes import GradesExtra, RubricOutcome, SandboxRun

if TYPE_CHECKING:
    from evalkit.report.models import CaseDetail

LEGACY_KEY = "inputs.legacy_file"
M = TypeVar("M", bound=BaseModel)


def _typed(model: type[M], part: dict[str, Any]) -> M | None:
    """A part of the case JSON (inputs or reference) read back through its kind's model; None when it does not
    fit (a broken case keeps its raw mapping)."""
    try:
        return model.model_validate(part)
    except ValidationError:
        return None


def _first_sample(arts: SystemArtifacts) -> Sample:
    samples = arts.output.samples if arts.output is not None else []
    return samples[0] if samples else Sample()


def _answered(arts: SystemArtifacts) -> bool:
    return arts.output is not None and arts.output.status == "ok"


def _first_run(arts: SystemArtifacts) -> SandboxRun | None:
    runs = arts.execution.runs if arts.execution is not None else []
    return runs[0] if runs else None


def _graded(arts: SystemArtifacts) -> tuple[RubricOutcome | None, GradesExtra]:
    """The rubric outcome and the kind-specific grades of a system's grades.json."""
    grades = arts.grades
    return (grades.rubric, grades.extra) if grades is not None else (None, GradesExtra())


def _diff_lines(text: str) -> list[tuple[str, str]]:
    return [(line_class(x), x) for x in text.splitlines()]


def e2e_detail(case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any] | None:
    """The migration loop: per iteration what the system changed, the tests that failed, the feedback it got."""
    run = _first_run(arts)
    if run is None:
        return None
    iterations = []
    loop = run.iterations or []
    for n, it in enumerate(loop):
        nxt = loop[n + 1] if n + 1 < len(loop) else None
        iterations.append({
            "iteration": it.iteration, "system_status": it.system_status,
            "change": it.change, "change_error": it.change_error, "diff": _diff_lines(it.diff or ""),
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
            "max_iterations": inputs.max_iterations if (inputs := _typed(E2EInputs, case.inputs)) else None,
            "final_patch": _diff_lines(run.final_patch or "")}


def agentic_detail(case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any]:
    """Discovered against expected tasks (the scorer's one-to-one matching) and each incident's re-check."""
    reference = _typed(AgenticReference, case.reference)
    expected = reference.expected_tasks if reference is not None else []
    discovered = list(_first_sample(arts).tasks) if _answered(arts) else []
    tolerance = reference.line_tolerance if reference is not None else 2
    match = match_tasks(discovered, expected, tolerance)
    by_expected = {e: d for d, e in match.pairs}
    run = _first_run(arts)
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


def migration_detail(case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any] | None:
    """Each incident re-checked in the output (incidents_resolved) and the degenerate-output checks."""
    inputs = _typed(MigrationInputs, case.inputs)
    if inputs is None:
        return None
    path = inputs.file_path
    sample = _first_sample(arts)
    ok = _answered(arts)
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


def rag_detail(case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any]:
    """The question, the retrieved contexts, the system's hint and each ragas metric with its status."""
    ragas = _graded(arts)[1].ragas
    inputs = _typed(RagInputs, case.inputs)
    return {"question": inputs.question if inputs else "", "contexts": list(inputs.contexts) if inputs else [],
            "hint": _first_sample(arts).text, "ragas_status": ragas.status if ragas is not None else None,
            "ragas_error": None,  # a ragas outcome has no error of its own: each metric has
            "ragas": [{"name": k, **m.model_dump(mode="json")} for k, m in (ragas.metrics if ragas is not None else {}).items()]}


def generation_detail(case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any]:
    """Each rubric criterion with its text and verdict, and every injection finding (detector, file, line, snippet)."""
    rubric, extra = _graded(arts)
    results = {r.id: r for r in (rubric.results if rubric is not None else [])}
    criteria = []
    for i, c in enumerate(case.criteria, start=1):
        cid = c.id or f"c{i}"  # the id the rubric judge gives a criterion without one (graders.judge_dispatch)
        r = results.get(cid)
        criteria.append({"id": cid, "text": c.text, "weight": c.weight,
                         "met": r.met if r else None, "met_fraction": r.met_fraction if r else None,
                         "reason": r.reason if r else "", "judged": r is not None})
    sample = _first_sample(arts)
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

