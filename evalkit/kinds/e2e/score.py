"""End-to-end metrics: final pass rate, iterations to stable, interventions, total migration time."""

from __future__ import annotations

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact, Usage
from evalkit.kinds.e2e.models import E2EReference
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.contracts import ScoreResult


def e2e_metrics(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                grades: GradesArtifact) -> ScoreResult:
    run = execution.runs[0] if execution is not None and execution.runs else None
    total = len(case.reference_as(E2EReference).tests)
    if output.status != "ok" or run is None or run.status != "completed":
        # no usable answer: nothing migrated, a person does all of it
        why = ("no answer" if output.status != "ok" else "no test run" if run is None
               else f"the migration loop ended {run.status.replace('_', ' ')}")
        return ScoreResult({"e2e_resolved": 0.0, "e2e_pass_rate": 0.0, "e2e_iterations": None,
                            "e2e_interventions": None, "e2e_time_s": output.first.wall_s},
                           explanations={"e2e_resolved": why})
    resolved = run.stable_at is not None
    usage = sum((r.usage for r in run.iterations or []), Usage())
    rounds = len(run.iterations or [])
    why = (f"every required test passes after round {run.stable_at}" if run.stable_at is not None
           else f"{run.passed or 0} of {total} required tests pass after {rounds} round{'s' if rounds != 1 else ''}"
           + (f"; {run.reason}" if run.reason and run.reason != "max_iterations" else ""))
    return ScoreResult({
        "e2e_resolved": float(resolved),
        "e2e_pass_rate": (run.passed or 0) / total if total else None,
        "e2e_iterations": float(run.stable_at) if run.stable_at is not None else None,
        # counted where the run resolved: an unresolved run is not "fewer interventions" (e2e_resolved says it failed)
        "e2e_interventions": float(run.help_requests or 0) if resolved else None,
        "e2e_time_s": round((run.system_s or 0.0) + (run.test_s or 0.0), 3),
        # the system ran once per iteration: its time and tokens are the loop's, not the first run's
        "wall_s": run.system_s if run.system_s is not None else output.first.wall_s,
        "cost_usd": usage.cost_usd,
        "tokens": float(usage.input_tokens + usage.output_tokens),
    }, explanations={"e2e_resolved": why})
