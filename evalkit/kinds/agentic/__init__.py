"""agentic: an application tree and its analyzer incidents; the system finds the tasks and changes the
tree; discovery is matched against the expected tasks and the incidents are re-checked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.artifacts import DiscoveredTask, Sample, SystemArtifacts
from evalkit.kinds.agentic.models import AgenticInputs, AgenticReference
from evalkit.contracts import AnyKindScorer
from evalkit.health_models import Ablation, AblationRun
from evalkit.kinds.base import Execution, Judging, Kind
from evalkit.lazy_modules import later
import evalkit.kinds.agentic.metrics  # noqa: F401  (the kind's metrics: registered whenever the kind is)

if TYPE_CHECKING:
    from evalkit.artifacts import OutputArtifact
    from evalkit.cases import Case
    from evalkit.config import Config, System
    from evalkit.case_detail import CaseDetail

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.kinds.agentic import execute as agentic_execute
    from evalkit.kinds.agentic import page as agentic_page
    from evalkit.kinds.agentic import score as agentic_score
    from evalkit.systems import gold as gold_code
    from evalkit.stages import health as health_code
    from evalkit.graders import incidents as incidents_code
    from evalkit import recorded_judge as recorded_judge_code
    from evalkit.stages import score_entropy as score_entropy_code
    from evalkit.stages import execute as stages_execute
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    agentic_execute = later("evalkit.kinds.agentic.execute")
    agentic_page = later("evalkit.kinds.agentic.page")
    agentic_score = later("evalkit.kinds.agentic.score")
    gold_code = later("evalkit.systems.gold")
    health_code = later("evalkit.stages.health")
    incidents_code = later("evalkit.graders.incidents")
    recorded_judge_code = later("evalkit.recorded_judge")
    score_entropy_code = later("evalkit.stages.score_entropy")
    stages_execute = later("evalkit.stages.execute")


class Agentic(Kind):
    name = "agentic"
    description = "An application to analyse and migrate; discovered tasks against expected, incidents re-checked."
    inputs = AgenticInputs
    reference = AgenticReference
    execution = Execution(executed=True, validated=True)
    judging = Judging(takes_rubric=True)
    metrics = ("discovery_precision", "discovery_recall", "discovery_f1", "resolution_effectiveness",
               "time_per_resolved_s", "steps_per_resolved")
    leaderboard = ("resolution_effectiveness", "discovery_f1", "discovery_recall")

    def gold(self, case: Case) -> Sample:
        tasks = [t.model_dump(include={"rule_id", "file", "line"})
                 for t in case.reference_as(AgenticReference).expected_tasks]
        return gold_code.reference_sample(case, tasks=tasks)

    def canary(self, case: Case, variant: str) -> Sample | None:
        tasks = [DiscoveredTask.model_validate(t.model_dump(include={"rule_id", "file", "line"}))
                 for t in case.reference_as(AgenticReference).expected_tasks]
        if variant == "empty":
            return Sample()
        if variant == "unchanged":  # every task found, the tree left as it is
            return Sample(tasks=tasks)
        if variant == "placeholder":  # one task found, nothing changed
            return Sample(tasks=tasks[:1])
        return None

    def execute(self, cfg: Config, system: System, case: Case, output: OutputArtifact) -> list[dict[str, object]]:
        return [agentic_execute.recheck(cfg, case, sample) for sample in output.samples]

    def more_validation(self, cfg: Config, case: Case) -> tuple[list[str], bool]:
        """The gold patch applied on the host; every expected task's incident must be gone."""

        if not case.reference_as(AgenticReference).patch_file:
            return [], False
        host_only = case.with_inputs(test_command=None)
        result = agentic_execute.recheck(cfg, host_only, self.gold(case))
        if result["status"] != "completed":
            return [f"gold patch: {result['status']}: {result.get('reason', '')}"], True
        kept = [i for i in result.get("incidents", []) if i["present"]]
        if kept:
            return [f"gold keeps {len(kept)} incident(s): "
                    + ", ".join(f"{i['rule_id']} in {i['file']}" for i in kept[:5])], True
        return [], True

    def ablations(self, case: Case) -> list[Ablation]:
        """The expected task list minus one task, each in turn (a reference of two or more tasks)."""
        gold = self.gold(case)
        if len(gold.tasks) < 2:
            return []
        return [Ablation(name=f"without-task-{n}", description=f"the expected tasks without task {n} "
                         f"({t.rule_id} in {t.file}" + (f", line {t.line})" if t.line else ")"),
                         sample=gold.model_copy(update={"tasks": gold.tasks[:n - 1] + gold.tasks[n:]}))
                for n, t in enumerate(gold.tasks, 1)]

    def no_ablation_reason(self, case: Case) -> str:
        return "the reference expects fewer than two tasks: no task list to leave one out of"

    def try_ablation(self, cfg: Config, case: Case, ablation: Ablation) -> AblationRun:
        """Task matching (as the discovery metrics match): the list without a task must miss one."""

        ref = case.reference_as(AgenticReference)
        match = incidents_code.match_tasks(ablation.sample.tasks, ref.expected_tasks, ref.line_tolerance)
        recall = match.recall()
        if recall is not None and recall < 1:
            return AblationRun(name=ablation.name, description=ablation.description, outcome="noticed",
                               detail=f"discovery recall {recall:.2f}")
        return AblationRun(name=ablation.name, description=ablation.description, outcome="passed",
                           detail="every expected task still matches a discovered one")

    def leaks(self, cfg: Config, case: Case) -> list[str] | None:
        """`.git` in the application tree, or a file holding the reference patch's post-image."""

        try:
            tree = stages_execute.source_tree(cfg, case)
        except stages_execute.TreeUnavailable:
            return None
        patch = case.read("reference.patch_file") if case.reference_as(AgenticReference).patch_file else None
        return health_code.tree_leaks(tree, health_code.post_images(tree, patch) if patch else {})

    def scorers(self) -> list[AnyKindScorer]:
        return [recorded_judge_code.recorded_judge_metrics, agentic_score.agentic_metrics, score_entropy_code.entropy_metrics]

    def detail(self, case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any] | None:
        return agentic_page.agentic_detail(case, arts)


KIND = Agentic()
