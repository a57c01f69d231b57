"""Results in SWE-bench's report.json shape, and re-grading a saved test log without a container.

SWE-bench's harness writes, per instance::

    {instance_id: {"patch_is_None": bool, "patch_exists": bool, "patch_successfully_applied": bool,
                   "resolved": bool,
                   "tests_status": {"FAIL_TO_PASS": {"success": [...], "failure": [...]},
                                    "PASS_TO_PASS": {...}, "FAIL_TO_FAIL": {...}, "PASS_TO_FAIL": {...}}}}

`tests_status` is present only when tests ran on the applied patch, as in SWE-bench. FAIL_TO_FAIL
and PASS_TO_FAIL are always empty: evalkit cases (like SWE-bench's datasets) list neither.
``infra_failure`` is SWE-bench 5.x's flag of an environment fault, with ``infra_failure_reason``: raised by
the official harness when it graded the run; by evalkit when the case's validation found its environment
broken (the tests time out, or fail at import or collection, with the gold patch and with no patch: no
system's patch ran, so the entry is not an ordinary unresolved result); or when the run's log matches one of
SWE-bench's own environment signatures (``swebench.harness.infra_failure.classify_text``, tier
"environment": Docker daemon errors, out of memory, no network...; read when the swebench package is
installed). For SWE-bench's cases (see evalkit.swebench.harness)
``resolved`` and ``tests_status`` are the official harness's; where evalkit's stricter verdict
differs it is added as ``evalkit_resolved``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

from pydantic import BaseModel

from evalkit.artifacts import artifact_path, read_optional
from evalkit.cases import discover
from evalkit.config import load_config
from evalkit.errors import InputError, Problem
from evalkit.fsutil import atomic_write_text, confine_writes
from evalkit.models import Model
from evalkit.sandbox.grading import grade
from evalkit.sandbox.parsing import apply_collection_errors, parse_pytest_summary
from evalkit.sandbox.spec import ExecutionResult, TestStatus


class Regraded(Model):
    """Verdict re-computed from a saved test log (same fields as ExecutionResult where they mean the same)."""

    status: Literal["completed", "no_tests"]
    """completed: the log holds test outcomes; no_tests: it holds none (the tests did not run)."""
    reason: str = ""
    """Notes from grading (absent ids, flaky exclusions)."""
    patch_applied: bool = True
    """Whether the patch was applied (as the caller knows it; a log alone does not say reliably)."""
    tests: dict[str, TestStatus] = {}
    """Every test outcome found in the log."""
    resolved: bool = False
    """All FAIL_TO_PASS and PASS_TO_PASS ids passed."""
    fail_to_pass: dict[str, TestStatus] = {}
    """Status of each FAIL_TO_PASS id (absent = failed)."""
    pass_to_pass: dict[str, TestStatus] = {}
    """Status of each PASS_TO_PASS id (absent = failed)."""


def regrade_from_log(log_text: str, fail_to_pass: list[str], pass_to_pass: list[str], *,
                     patch_applied: bool = True, flaky_policy: Literal["fail", "pass", "exclude"] = "fail") -> Regraded:
    """Grade pytest ``-rA`` output again (e.g. a SWE-bench test_output.txt or an execution.json log).

    No container runs. A log is only printed text: unlike a sandbox run, there are no nonce
    markers or JUnit reports to check it against, so a patch that prints fake PASSED lines fools
    this re-grade. Use it to re-score old logs under new FAIL_TO_PASS/PASS_TO_PASS lists, not to trust
    a new patch.
    """
    wanted = [*fail_to_pass, *pass_to_pass]
    tests = apply_collection_errors(parse_pytest_summary(log_text), wanted)
    if not tests or not patch_applied:
        why = "the patch was not applied" if not patch_applied else "no pytest -rA outcome lines in the log"
        return Regraded(status="no_tests", reason=why, patch_applied=patch_applied, tests=dict(sorted(tests.items())),
                        fail_to_pass={t: "failed" for t in fail_to_pass},
                        pass_to_pass={t: "failed" for t in pass_to_pass})
    g = grade(tests, list(fail_to_pass), list(pass_to_pass), flaky_policy)
    return Regraded(status="completed", reason="; ".join(g.notes), patch_applied=True, tests=dict(sorted(tests.items())),
                    resolved=g.resolved, fail_to_pass=g.fail_to_pass, pass_to_pass=g.pass_to_pass)


def _split(statuses: Mapping[str, str]) -> dict[str, list[str]]:
    return {"success": sorted(t for t, s in statuses.items() if s == "passed"),
            "failure": sorted(t for t, s in statuses.items() if s != "passed")}


def instance_report(instance_id: str, result: ExecutionResult | Regraded | Mapping[str, Any] | None,
                    patch: str | None) -> dict[str, Any]:
    """One instance's entry of SWE-bench's report.json from a sandbox result (or a re-grade)."""
    r = result.model_dump(mode="json") if isinstance(result, BaseModel) else dict(result or {})
    applied = bool(r.get("patch_applied")) and patch is not None and bool(patch.strip())
    entry: dict[str, Any] = {
        "patch_is_None": patch is None,
        "patch_exists": patch is not None and bool(patch.strip()),
        "patch_successfully_applied": applied,
        "resolved": bool(r.get("resolved")) and applied,
        "infra_failure": bool(r.get("harness_infra_failure")),
    }
    if r.get("harness_infra_failure"):
        entry["infra_failure_reason"] = r.get("harness_note") or "the official harness flags an environment failure"
    if r.get("harness_resolved") is not None:  # a SWE-bench case: the official harness's verdict and lists
        entry["resolved"] = bool(r["harness_resolved"]) and applied
        if r.get("harness_resolved") != r.get("resolved"):
            entry["evalkit_resolved"] = bool(r.get("resolved"))
        if applied and r.get("harness_tests_status"):
            entry["tests_status"] = {k: r["harness_tests_status"].get(k, {"success": [], "failure": []})
                                     for k in ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")}
        return {instance_id: entry}
    if applied and r.get("status") == "completed":
        empty: dict[str, list[str]] = {"success": [], "failure": []}
        entry["tests_status"] = {
            "FAIL_TO_PASS": _split(r.get("fail_to_pass", {})),
            "PASS_TO_PASS": _split(r.get("pass_to_pass", {})),
            "FAIL_TO_FAIL": dict(empty),
            "PASS_TO_FAIL": dict(empty),
        }
    return {instance_id: entry}


def environment_signature(log: str) -> str | None:
    """The reason of SWE-bench's environment-tier infrastructure signature in a log (None: none, or the swebench
    package is not installed)."""
    try:  # the optional evalkit[swebench] extra: its log classification, where it is installed
        from swebench.harness.infra_failure import TIER_ENVIRONMENT, classify_text  # deferred: swebench, heavy, optional
    except ImportError:
        return None
    found = classify_text(log)
    return found[0] if found is not None and found[1] == TIER_ENVIRONMENT else None


def infra_entry(entry: dict[str, Any], reason: str) -> dict[str, Any]:
    """``entry`` flagged as an environment failure: not resolved, no tests_status (nothing the patch did ran)."""
    out = {k: v for k, v in entry.items() if k != "tests_status"}
    out.update(resolved=False, infra_failure=True, infra_failure_reason=reason)
    return out


def system_report(work: Path, system: str, suite_case_ids: Iterable[tuple[str, str]]) -> tuple[dict[str, Any], list[str]]:
    """Report of one system over (suite, case) pairs from its artifacts; also the cases with no execution.json."""

    report: dict[str, Any] = {}
    missing: list[str] = []
    for suite, case_id in suite_case_ids:
        execution = read_optional(artifact_path(work, "execute", system, suite, case_id), "execute")
        if execution is None:
            missing.append(f"{suite}/{case_id}")
            continue
        output = read_optional(artifact_path(work, "generate", system, suite, case_id), "generate")
        patch = output.first.patch if output is not None and output.samples else None
        run = execution.runs[0] if execution.runs else None
        entry = instance_report(case_id, run, patch)
        if execution.status == "broken":  # the validation found the environment broken: no patch of it ran
            entry[case_id] = infra_entry(entry[case_id], execution.reason)
        elif run is not None and not entry[case_id]["infra_failure"]:
            signature = environment_signature(run.log)
            if signature is not None and not entry[case_id]["resolved"]:
                entry[case_id] = infra_entry(entry[case_id], f"{signature} (SWE-bench's signature, in the test log)")
        report.update(entry)
    return dict(sorted(report.items())), missing


def write_system_report(config: str | None, system: str, out: Path, suites: list[str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """`evalkit swebench-report`: the patch cases of a config's suites, one system, written to ``out``."""

    cfg = load_config(config)
    names = [s.name for s in cfg.systems]
    if system not in names:
        raise InputError(Problem(cfg.path, None, f"no system {system!r} (systems: {', '.join(names)})"))
    project = discover(cfg.cases_path, cfg.suites, cache_dir=None, shown_root=Path(cfg.root))
    unknown = [s for s in suites or [] if s not in project.suites]
    if unknown:
        raise InputError(Problem(cfg.path, None, f"unknown suite(s): {', '.join(unknown)}"))
    pairs = [(c.suite, c.id) for c in project.cases if c.kind == "patch" and (not suites or c.suite in suites)]
    ids = [cid for _s, cid in pairs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise InputError(Problem(cfg.path, None, f"case id(s) in more than one patch suite: {', '.join(dupes)} "
                                                 "(pick one with --suite; report.json is keyed by instance id)"))
    report, missing = system_report(cfg.work_path, system, pairs)
    confine_writes(Path(out).resolve().parent)  # the file the user asked for, besides the project's folders
    atomic_write_text(out, json.dumps(report, indent=2, sort_keys=True) + "\n")
    return report, missing
