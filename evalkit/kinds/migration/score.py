"""Migration-suite metrics beyond CodeBLEU: migrated (the headline), incidents resolved, and the legacy
file's own CodeBLEU (the zero point of codebleu_gain).

migrated is pass/fail per case: every counted incident gone, the file complete (no elision), parsing, not
the legacy file as it was, and keeping what the migration must keep (evalkit.graders.declarations:
the declarations legacy and expected share, the renamed imports, a replacement for removed annotations).

incidents_resolved re-checks each incident of the case in the system's output with the same test
as agentic suites (evalkit.graders.incidents.incident_present: the rule's matcher, else the
incident's original line must be gone); a deleted file has no incidents left.
"""

from __future__ import annotations

import re
import threading

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact, Sample
from evalkit.kinds.migration.models import MigrationInputs, MigrationReference
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.contracts import ScoreResult
from evalkit.graders.declarations import missing_structure
from evalkit.graders.degenerate import assess, empty_answer, is_unchanged
from evalkit.graders.incidents import IncidentCheck, incident_present, recheck_file, resolved_share
from evalkit.metrics.codebleu import codebleu
from evalkit.metrics.metric_info import Metrics

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


def offending_lines(case: Case) -> set[int]:
    """1-based lines of the legacy file an incident points at or a counted rule's matcher fires on (what a
    migration that only deletes the offending lines deletes: a canary)."""
    inputs = case.inputs_as(MigrationInputs)
    legacy = case.read("inputs.legacy_file") or ""
    lines = {i.line for i in inputs.incidents if i.line}
    rules = {i.rule_id for i in inputs.incidents}
    for n, line in enumerate(legacy.splitlines(), 1):
        if any(incident_present(m, line, inputs.file_path, None) for r, m in inputs.matchers.items() if r in rules):
            lines.add(n)
    return lines


def legacy_codebleu(cfg: Config, case: Case, reference: str) -> float | None:
    """CodeBLEU of the legacy file against the expected file (computed once per case and process)."""
    weights = tuple(cfg.metrics.codebleu_weights)
    key = (case.digest or case.key, weights)
    with _lock:
        if key in _legacy_cb:
            return _legacy_cb[key]

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


def migration_failures(case: Case, output: OutputArtifact, grades: GradesArtifact | None = None) -> list[str] | None:
    """Why the output is not a migration of the case (empty: it is one); None when there is nothing to
    decide it by (no counted incident and no expected file)."""
    ref = case.reference_as(MigrationReference)
    legacy = case.read("inputs.legacy_file") or ""
    checks = incident_checks(case, legacy)
    expected = case.read("reference.expected_file") if ref.expected_file else None
    if not any(c.counted for c in checks) and expected is None and not ref.deleted:
        return None
    if output.status != "ok" or empty_answer(output.first, case.inputs_as(MigrationInputs).file_path):
        return ["no answer"]
    text = output_text(case, output.first)
    if ref.deleted:  # the target deletes the file: deleting it (or leaving only comments, Kai's way) is the migration
        return [] if text is None or not has_code(text, case.language) else ["keeps a file the target deletes"]
    if text is None:
        return ["deletes a file the target keeps"]
    if not has_code(text, case.language):
        return ["no code"]
    out = [f"keeps incident {c.rule_id}" + (f" (legacy line {c.line})" if c.line else "")
           for c in incident_checks(case, text) if c.counted and c.present]
    found = assess(text, legacy, case.language)
    if found.unchanged and (expected is None or not is_unchanged(expected, legacy)):
        out.append("the legacy file unchanged")
    out += [f"incomplete: {e}" for e in found.elisions]
    syntax = grades.syntax if grades is not None else None
    if syntax is not None and syntax.valid is False:
        out.append("does not parse")
    out += missing_structure(text, legacy, expected, case.language)
    return out


def migrated_metric(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                    grades: GradesArtifact) -> ScoreResult:
    """migrated: 1 when the output is a migration of the case (``migration_failures`` finds nothing), explained by
    what failed."""
    failures = migration_failures(case, output, grades)
    if failures is None:
        return ScoreResult({})
    return ScoreResult({"migrated": float(not failures)}, _why_migrated(failures))


_SHOWN_FAILURES = 5
"""How many of an output's failed conditions the explanation of `migrated` names (the rest are counted)."""


def _why_migrated(failures: list[str]) -> str:
    """`migrated`'s explanation: the conditions the output fails, or that it meets them all."""
    if not failures:
        return "migrated: no counted incident left, complete, changed, parses, keeps what the target keeps"
    more = len(failures) - _SHOWN_FAILURES
    return "not migrated: " + "; ".join(failures[:_SHOWN_FAILURES]) + (f"; and {more} more" if more > 0 else "")


_COMMENTS = {"python": re.compile(r"#[^\n]*")}
_C_COMMENTS = re.compile(r"//[^\n]*|/\*[\s\S]*?(?:\*/|$)")


def has_code(text: str, language: str) -> bool:
    """Is there anything but comments and whitespace in the file?"""
    return bool(_COMMENTS.get(language, _C_COMMENTS).sub("", text).strip())
