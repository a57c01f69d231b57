"""Migration-suite metrics beyond CodeBLEU: incidents resolved, and the legacy file's own CodeBLEU
(the zero point of codebleu_gain).

incidents_resolved re-checks each incident of the case in the system's output with the same test
as agentic suites (evalkit.graders.incidents.incident_present: the rule's matcher, else the
incident's original line must be gone); a deleted file has no incidents left.
"""

from __future__ import annotations

import re
import threading

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact, Sample
from evalkit.casemodels import MigrationInputs, MigrationReference
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.graders.incidents import IncidentCheck, recheck_file, resolved_share
from evalkit.stages.score import Metrics

_lock = threading.Lock()
_legacy_cb: dict[tuple[str, tuple[float, ...]], float | None] = {}


def output_text(case: Case, sample: Sample) -> str | None:
    """The case's file as the output leaves it: its content, or None when the output deletes it
    (listed in `deleted_files` and not written). A file the output does not mention is empty."""
    mf = case.inputs_as(MigrationInputs).file_path
    if mf in sample.files:
        return sample.files[mf]
    if mf in sample.deleted_files:
        return None
    return ""


def incident_checks(case: Case, text: str | None) -> list[IncidentCheck]:
    """Every incident of a migration case re-checked in ``text`` (None: the file is deleted)."""
    inputs = case.inputs_as(MigrationInputs)
    return recheck_file(inputs.incidents, inputs.matchers, case.read("inputs.legacy_file") or "", text, inputs.file_path)


def legacy_codebleu(cfg: Config, case: Case, reference: str) -> float | None:
    """CodeBLEU of the legacy file against the expected file (computed once per case and process)."""
    weights = tuple(cfg.metrics.codebleu_weights)
    key = (case.digest or case.key, weights)
    with _lock:
        if key in _legacy_cb:
            return _legacy_cb[key]
    from evalkit.metrics.codebleu import codebleu

    legacy = case.read("inputs.legacy_file")
    result = codebleu(legacy, reference, case.language, weights=weights) if legacy is not None else None  # type: ignore[arg-type]
    value = result.codebleu if result is not None else None
    with _lock:
        _legacy_cb[key] = value
    return value


def incident_metrics(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                     grades: GradesArtifact) -> Metrics:
    """incidents_resolved: share of the case's counted incidents gone from the output. 0 when
    there is no answer, the file holds no code, or the output deletes a file the target keeps (an
    expected_file); deleting a file the target deletes (or whose fate is unknown) leaves none."""
    checks = incident_checks(case, case.read("inputs.legacy_file") or "")
    if not any(c.counted for c in checks):
        return {}
    text = output_text(case, output.first) if output.status == "ok" else ""
    if text is None and case.reference_as(MigrationReference).expected_file:
        return {"incidents_resolved": 0.0}  # deleting a file the target keeps fixes nothing
    if text is not None and not has_code(text, case.language):
        return {"incidents_resolved": 0.0}  # an empty or comment-only file resolves nothing (deleting is explicit)
    return {"incidents_resolved": resolved_share(incident_checks(case, text))}


_COMMENTS = {"python": re.compile(r"#[^\n]*")}
_C_COMMENTS = re.compile(r"//[^\n]*|/\*[\s\S]*?(?:\*/|$)")


def has_code(text: str, language: str) -> bool:
    """Is there anything but comments and whitespace in the file?"""
    return bool(_COMMENTS.get(language, _C_COMMENTS).sub("", text).strip())
