"""Agentic-suite metrics: task discovery P/R/F1, resolution effectiveness (resolved over the expected tasks),
efficiency per resolved task."""

from __future__ import annotations

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact
from evalkit.kinds.agentic.models import AgenticReference
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.contracts import ScoreResult
from evalkit.graders.incidents import match_tasks
from evalkit.metrics.metric_info import Metrics
from evalkit.outcomes import SandboxRun


def _tests_pass(run: SandboxRun | None, tests: list[str]) -> bool:
    required = (run.required_tests if run is not None else None) or {}
    return all(required.get(t) == "passed" for t in tests)


def agentic_metrics(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                    grades: GradesArtifact) -> ScoreResult:
    reference = case.reference_as(AgenticReference)
    sample = output.first
    discovered = sample.tasks if output.status == "ok" else []
    match = match_tasks(discovered, reference.expected_tasks, reference.line_tolerance)
    out: Metrics = {"discovery_precision": match.precision(), "discovery_recall": match.recall(),
                    "discovery_f1": match.f1()}
    run = execution.runs[0] if execution is not None and execution.runs else None
    incidents = (run.incidents if run is not None else None) or []
    resolved = left = failing = 0
    for _d, e in match.pairs:
        gone = e < len(incidents) and not incidents[e].present
        if gone and _tests_pass(run, reference.expected_tasks[e].tests):
            resolved += 1
        elif gone:
            failing += 1
        else:
            left += 1
    # over the expected tasks, not the discovered ones: finding one task of four and fixing it is 0.25, not 1
    expected = len(reference.expected_tasks)
    out["resolution_effectiveness"] = resolved / expected if expected else None
    out["time_per_resolved_s"] = sample.wall_s / resolved if resolved else None
    out["steps_per_resolved"] = sample.steps / resolved if resolved and sample.steps is not None else None
    unresolved = [f"{n} {what}" for n, what in ((expected - len(match.pairs), "not discovered"),
                                                (left, "with the incident left"), (failing, "with failing tests")) if n]
    why = f"{resolved} of {expected} expected tasks resolved" + (f" ({', '.join(unresolved)})" if unresolved else "")
    return ScoreResult(out, explanations={"resolution_effectiveness": why})
