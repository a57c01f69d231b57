"""Patch-suite metrics: resolution the SWE-bench way, test pass counts, flakiness, localization."""

from __future__ import annotations

import json
from collections.abc import Mapping

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact
from evalkit.casemodels import PatchReference
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.contracts import ScoreResult
from evalkit.metrics.localization import gold_locations, localization
from evalkit.metrics.metric_info import Metrics
from evalkit.outcomes import SandboxRun
from evalkit.stages.execute import TreeUnavailable, source_tree
from evalkit.stages.validate import validation_path
from evalkit.stats import pass_at_k, pass_hat_k


def _fraction(statuses: Mapping[str, str]) -> float | None:
    return sum(1 for s in statuses.values() if s == "passed") / len(statuses) if statuses else None


def _failed(ref: PatchReference) -> Metrics:
    """f2p/p2p of a patch that does not apply or changes nothing: 0 where the case lists such tests."""
    return {"f2p_pass_rate": 0.0 if ref.fail_to_pass else None, "p2p_pass_rate": 0.0 if ref.pass_to_pass else None}


def _applies_something(output: OutputArtifact) -> bool:
    return bool((output.first.patch or "").strip())


def patch_metrics(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                  grades: GradesArtifact) -> ScoreResult:
    out: Metrics = {}
    ref = case.reference_as(PatchReference)
    if output.status != "ok" or execution is None or not execution.runs:
        out.update(resolved=0.0, patch_applied=0.0, **_failed(ref))
        why = "no answer" if output.status != "ok" else "no test run"
    else:
        run = execution.runs[0]
        # SWE-bench's cases: the official harness's verdict, so the rate matches the leaderboard's
        # (evalkit's stricter one stays in the execution artifact and on the case page)
        harness = run.harness_resolved
        out["resolved"] = float(bool(run.resolved if harness is None else harness))
        out["patch_applied"] = float(run.patch_applied)
        if run.patch_applied and _applies_something(output):
            out["f2p_pass_rate"] = _fraction(run.fail_to_pass)
            out["p2p_pass_rate"] = _fraction(run.pass_to_pass)
        else:  # one n/a rule: a patch that does not apply (or is empty) fails both, never n/a
            out.update(_failed(ref))
        out["flaky_tests"] = float(len(run.flaky))
        out["sandbox_timeout"] = float(run.status == "timeout")
        out["tampered_with_tests"] = float(bool(run.test_changes))
        why = _why_resolved(run, harness, _applies_something(output))
    out.update(pass_k_metrics(output, execution))
    out.update(localization_metrics(cfg, case, output))
    return ScoreResult(out, explanations={"resolved": why})


_SHOWN_TESTS = 3
"""How many failing tests the explanation of `resolved` names (the rest are counted)."""


def _failing(kind: str, statuses: Mapping[str, str]) -> str:
    bad = sorted(t for t, st in statuses.items() if st != "passed")
    if not bad:
        return ""
    more = len(bad) - _SHOWN_TESTS
    return (f"{len(bad)} of {len(statuses)} {kind} tests fail ({', '.join(bad[:_SHOWN_TESTS])}"
            f"{f', and {more} more' if more > 0 else ''})")


def _why_resolved(run: SandboxRun, harness: bool | None, applies_something: bool) -> str:
    """`resolved`'s explanation, from the run's record: how the run ended and which required tests failed."""
    if run.status == "patch_failed":
        return "the patch did not apply"
    if run.status == "tampered_with_tests":
        changed = ", ".join(c.partition(":")[0] for c in run.test_changes[:_SHOWN_TESTS])
        return "the patch changes the tests" + (f": {changed}" if changed else "")
    if run.status != "completed":
        return f"the test run ended {run.status.replace('_', ' ')}"
    if not applies_something:
        return "the patch is empty"
    failing = "; ".join(f for f in (_failing("FAIL_TO_PASS", run.fail_to_pass),
                                    _failing("PASS_TO_PASS", run.pass_to_pass)) if f)
    own = "every FAIL_TO_PASS and PASS_TO_PASS test passes" if run.resolved else failing or "not resolved"
    if harness is None or harness == bool(run.resolved):
        return own
    return f"the SWE-bench harness says {'resolved' if harness else 'not resolved'} (evalkit's own check: {own})"


def pass_k_metrics(output: OutputArtifact, execution: ExecutionArtifact | None) -> Metrics:
    """pass@1, pass@k and pass^k of a system with k > 1 samples (evalkit.stats.pass_at_k / pass_hat_k, k = the
    samples drawn): a sample resolves the case as ``resolved`` says for the first (the harness's verdict when
    there is one); a sample that failed or has no run does not."""
    n = len(output.samples)
    if n < 2:
        return {}
    runs = execution.runs if execution is not None and output.status == "ok" else []
    c = 0
    for i, sample in enumerate(output.samples):
        if sample.status != "ok" or i >= len(runs):
            continue
        run = runs[i]
        c += bool(run.resolved if run.harness_resolved is None else run.harness_resolved)
    return {"pass_at_1": pass_at_k(n, c, 1), "pass_at_k": pass_at_k(n, c, n), "pass_hat_k": pass_hat_k(n, c, n)}


def localization_metrics(cfg: Config, case: Case, output: OutputArtifact) -> Metrics:
    """File/function recall@k and hit@k of the context the system reports, against the gold patch."""
    sample = output.first
    if not sample.context_files and not sample.context_functions:
        return {}

    gold_patch = case.read("reference.patch_file") or ""
    try:
        tree = source_tree(cfg, case)
    except TreeUnavailable:
        return {}

    def read(path: str) -> str | None:
        p = tree / path
        return p.read_text(encoding="utf-8", errors="replace") if p.is_file() else None

    gold = gold_locations(gold_patch, read, case.language)
    return localization(sample.context_files, sample.context_functions, gold, ks=tuple(cfg.metrics.ks)).as_metrics()


def validation_status(cfg: Config, case: Case) -> tuple[str, str] | None:
    """(status, reason) of the case's harness validation, when it has run."""

    p = validation_path(cfg.work_path, case)
    if not p.exists():
        return None
    data = json.loads(p.read_text(encoding="utf-8"))
    return data["status"], data.get("reason", "")
