"""e2e: a whole application to migrate until its tests pass; the system is re-invoked with the failing
tests' output up to max_iterations times."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.artifacts import Sample, SystemArtifacts
from evalkit.kinds.e2e.models import E2EInputs, E2EReference
from evalkit.contracts import AnyKindScorer
from evalkit.kinds.base import Execution, Judging, Kind
from evalkit.lazy_modules import later
import evalkit.kinds.e2e.metrics  # noqa: F401  (the kind's metrics: registered whenever the kind is)

if TYPE_CHECKING:
    from evalkit.artifacts import ExecutionArtifact, OutputArtifact
    from evalkit.cases import Case
    from evalkit.config import Config, System
    from evalkit.case_detail import CaseDetail

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.kinds.e2e import execute as e2e_execute
    from evalkit.kinds.e2e import page as e2e_page
    from evalkit.kinds.e2e import score as e2e_score
    from evalkit.stages import score_entropy as score_entropy_code
    from evalkit.stages import score_judge as score_judge_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    e2e_execute = later("evalkit.kinds.e2e.execute")
    e2e_page = later("evalkit.kinds.e2e.page")
    e2e_score = later("evalkit.kinds.e2e.score")
    score_entropy_code = later("evalkit.stages.score_entropy")
    score_judge_code = later("evalkit.stages.score_judge")


class E2E(Kind):
    name = "e2e"
    description = "A whole application migrated until its tests pass, iterating on the failures."
    inputs = E2EInputs
    reference = E2EReference
    execution = Execution(executed=True, final_tree_after_execute=True)
    judging = Judging(changes_judge=True)
    metrics = ("e2e_resolved", "e2e_pass_rate", "e2e_iterations", "e2e_interventions", "e2e_time_s")
    leaderboard = ("e2e_resolved", "e2e_pass_rate")

    def canary(self, case: Case, variant: str) -> Sample | None:
        if variant == "empty":
            return Sample()
        if variant == "unchanged":  # the application as it is: an empty diff, every iteration
            return Sample(patch="")
        return None

    def execute(self, cfg: Config, system: System, case: Case, output: OutputArtifact) -> list[dict[str, object]]:
        return [e2e_execute.iterate(cfg, system, case, sample, i) for i, sample in enumerate(output.samples)]

    def answer_changes(self, case: Case, sample: Sample, execution: ExecutionArtifact | None) -> tuple[str | None, dict[str, str]]:
        runs = (execution.runs if execution is not None else None) or []
        first = runs[0] if runs else None  # the final iteration's diff
        final = first.get("final_patch") if isinstance(first, dict) else getattr(first, "final_patch", None)
        return final or None, {}

    def scorers(self) -> list[AnyKindScorer]:
        return [score_judge_code.judge_metrics, e2e_score.e2e_metrics, score_entropy_code.entropy_metrics]

    def detail(self, case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any] | None:
        return e2e_page.e2e_detail(case, arts)


KIND = E2E()
