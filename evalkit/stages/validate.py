"""validate: every case's reference checked against the case itself, before any system is scored.

- patch: the gold patch must resolve, no patch must not (sandbox runs, shared with the execute
  stage's cache, so a `gold` system costs nothing extra);
- migration, generation, rag, agentic: what the `gold` system answers must pass every assertion
  of the case, parse, be complete (no elided code: evalkit.graders.degenerate) and, for migration
  and agentic cases, leave none of the counted incidents (the same re-check as scoring). A
  migration case whose file is deleted in the target (`reference.deleted`) is answered by deleting
  it. Agentic validation re-checks incidents on the host only; the tests the expected tasks name
  run in the gold system's execute stage.

A case that fails is `broken`: excluded from rates and listed in the report with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

from evalkit.artifacts import Sample
from evalkit.casemodels import PatchInputs
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.kind_registry import kind, main_file
from evalkit.models import Model
from evalkit.sandbox.parsing import collection_failure
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.graders import assertions as assertions_code
    from evalkit.graders import degenerate
    from evalkit.systems import gold as gold_code
    from evalkit.stages import execute as stages_execute
    from evalkit.graders import syntax as syntax_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    assertions_code = later("evalkit.graders.assertions")
    degenerate = later("evalkit.graders.degenerate")
    gold_code = later("evalkit.systems.gold")
    stages_execute = later("evalkit.stages.execute")
    syntax_code = later("evalkit.graders.syntax")


class _CaseKey(TypedDict):
    """The fields naming the case a Validation is about."""

    suite: str
    case_id: str


class Validation(Model):
    """validation.json of one patch case."""

    suite: str
    """Suite name."""
    case_id: str
    """Case id."""
    status: Literal["valid", "broken", "infra_error", "unchecked"]
    """valid: the reference passes its case (patch: gold resolves and empty does not); broken: the
    case cannot tell systems apart; unchecked: the case has no reference to check."""
    reason: str = ""
    """Why the case is broken (or the infrastructure error)."""
    environment_broken: bool = False
    """patch: gold and no patch both timed out, or both failed at import or collection of every listed test,
    so the environment (not a patch) is at fault; the systems' execute stage records `broken` from this
    validation without running their patches."""


def validation_path(work: Path, case: Case) -> Path:
    return work / "validation" / case.suite / f"{case.id}.json"


def environment_broken(cfg: Config, case: Case) -> str | None:
    """The reason of a patch case's validation that found its environment broken, else None."""
    try:
        data = json.loads(validation_path(cfg.work_path, case).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return (data.get("reason") or "broken environment") if data.get("environment_broken") else None


def validation_status(cfg: Config, case: Case) -> tuple[str, str] | None:
    """(status, reason) of the case's validation, when it has run."""
    p = validation_path(cfg.work_path, case)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return data["status"], data.get("reason", "")


def _incomplete(text: str, language: str, legacy: str | None) -> list[str]:
    """Where a reference file elides code (evalkit.graders.degenerate; empty when that check is absent)."""

    is_complete = getattr(degenerate, "is_complete", None)
    elisions = getattr(degenerate, "elisions", None)
    if is_complete is not None and is_complete(text, language):
        return []
    found = elisions(text, language, legacy) if elisions is not None else []
    return found or (["incomplete"] if is_complete is not None else [])


def reference_problems(case: Case) -> tuple[list[str], bool]:
    """What is wrong with the answer the `gold` system gives for a non-patch case, and whether
    there was an answer to check at all."""


    sample = gold_code.gold_sample(case)
    if sample.status != "ok" or not (sample.files or sample.deleted_files or sample.text or sample.patch or sample.tasks):
        return [], False  # no reference answer (e.g. a generation case graded by criteria only)
    return sample_problems(case, sample, "gold"), True


def sample_problems(case: Case, sample: Sample, who: str) -> list[str]:
    """What the case's own checks that cost nothing find wrong with ``sample`` (``who`` names it in the
    lines): its assertions, the main file's presence, syntax and completeness, and the kind's own checks
    (``Kind.gold_problems``: incidents kept). Validation asks it of the gold answer; case health of the
    partial answers derived from it."""


    problems: list[str] = []
    mf = main_file(case)
    results, _score = assertions_code.run_assertions(case.assertions, sample, case.language, mf, case=case)
    failed = [r for r in results if not r.passed]
    if failed:
        problems.append(f"{who} fails its assertion(s): " + "; ".join(
            f"{r.description}" + (f" ({r.detail})" if r.detail else "") for r in failed[:3])
            + (f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""))
    deleted = bool(mf and mf in sample.deleted_files and mf not in sample.files)
    text = sample.files.get(mf) if mf else None
    if mf and not deleted:
        if not (text or "").strip():
            problems.append(f"{who} has no content for {mf}")
        else:
            syntax = syntax_code.check_syntax(text or "", case.language)
            if syntax.valid is False:
                problems.append(f"{who} does not parse ({'; '.join(syntax.issues[:2])})")
            elided = _incomplete(text or "", case.language, case.read("inputs.legacy_file"))
            if elided:
                problems.append(f"{who} is not complete: " + "; ".join(elided[:3]))
    problems += [p.replace("gold ", f"{who} ", 1) for p in kind(case.kind).gold_problems(case, text, deleted)]
    return problems


def validate_reference(cfg: Config, case: Case) -> Validation:
    """Validation of a migration, generation, rag or agentic case (see the module docstring)."""
    base: _CaseKey = {"suite": case.suite, "case_id": case.id}
    problems, checked = reference_problems(case)
    more, checked_more = kind(case.kind).more_validation(cfg, case)
    problems += more
    checked = checked or checked_more
    if problems:
        return Validation(**base, status="broken", reason="; ".join(problems))
    if not checked:
        return Validation(**base, status="unchecked", reason="no reference answer to check")
    return Validation(**base, status="valid")


def validate_case(cfg: Config, case: Case) -> Validation:
    base: _CaseKey = {"suite": case.suite, "case_id": case.id}
    if not case.ok:
        return Validation(**base, status="broken", reason="; ".join(p.message for p in case.problems))
    return kind(case.kind).validate(cfg, case)


def validate_patch(cfg: Config, case: Case) -> Validation:
    """A patch case's harness validation: the gold patch resolves it and no patch does not."""

    base: _CaseKey = {"suite": case.suite, "case_id": case.id}

    # one after the other: the two runs at once raced on the case's checkout (tests/test_executors.py saw
    # "cannot check out ... cannot change to" from a moved project's repository)
    gold = stages_execute.run_patch(cfg, case, case.read("reference.patch_file"), trusted=True)
    empty = stages_execute.run_patch(cfg, case, None)
    if gold["status"] == "timeout" and empty["status"] == "timeout":
        return Validation(**base, status="broken", environment_broken=True,
                          reason=f"broken environment: the tests time out with the gold patch and with no patch "
                                 f"(limit {case.inputs_as(PatchInputs).timeout_s:g} s): the tests hang or need what the "
                                 "sandbox lacks (a package, the network); the systems' patches are not run")
    gold_import, empty_import = collection_failure(gold), collection_failure(empty)
    if gold_import and empty_import:
        return Validation(**base, status="broken", environment_broken=True,
                          reason=f"broken environment: the tests fail at import or collection with the gold patch and "
                                 f"with no patch ({gold_import}): a dependency missing from the image, or tests that "
                                 "need what the sandbox lacks (the network, data); the systems' patches are not run")
    for name, run in (("gold", gold), ("empty", empty)):
        if run["status"] == "infra_error":
            return Validation(**base, status="infra_error", reason=f"{name}: {run['reason']}")
        if run["status"] == "case_error":
            return Validation(**base, status="broken", reason=run["reason"])
    if not gold.get("resolved"):
        failing = sorted(t for t, s in {**gold.get("fail_to_pass", {}), **gold.get("pass_to_pass", {})}.items()
                         if s != "passed")
        detail = f"failing: {', '.join(failing[:5])}" if failing else gold.get("reason", "")
        ran = {t.split(" ", 1)[0] for t in gold.get("tests", {})} | set(gold.get("tests", {}))
        cut = [t for t in failing if "[" in t and not t.endswith("]") and t not in ran]
        if cut:  # only when the grader could not match them to a test that ran
            detail += (f"; {len(cut)} id(s) look cut at a space (SWE-bench's log parser splits at whitespace) and "
                       f"match no test that ran, e.g. {cut[0]!r}")
        return Validation(**base, status="broken", reason=f"gold patch does not resolve ({gold['status']}; {detail})")
    if empty.get("resolved"):
        return Validation(**base, status="broken", reason="resolved without any patch: FAIL_TO_PASS tests already pass")
    return Validation(**base, status="valid")
