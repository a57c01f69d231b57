"""Patch-suite metrics: resolution the SWE-bench way, test pass counts, flakiness, localization."""

from __future__ import annotations

import json
from collections.abc import Mapping

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact
from evalkit.casemodels import PatchReference
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.metrics.localization import gold_locations, localization
from evalkit.metrics.metric_info import Metrics
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
                  grades: GradesArtifact) -> Metrics:
    out: Metrics = {}
    ref = case.reference_as(PatchReference)
    if output.status != "ok" or execution is None or not execution.runs:
        out.update(resolved=0.0, patch_applied=0.0, **_failed(ref))
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
    out.update(pass_k_metrics(output, execution))
    out.update(localization_metrics(cfg, case, output))
    return out


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
