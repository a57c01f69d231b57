"""patch: a repository and an issue; the answer is a unified diff the sandbox applies and tests
(SWE-bench style: FAIL_TO_PASS and PASS_TO_PASS)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.artifacts import Sample
from evalkit.casemodels import PatchInputs, PatchReference
from evalkit.contracts import AnyKindScorer
from evalkit.diffsplit import partial_patches
from evalkit.health_models import Ablation, AblationRun
from evalkit.kinds.base import Execution, Judging, Kind
from evalkit.lazy_modules import later
import evalkit.kinds.patch.metrics  # noqa: F401  (the kind's metrics: registered whenever the kind is)

if TYPE_CHECKING:
    from evalkit.artifacts import OutputArtifact
    from evalkit.cases import Case
    from evalkit.checks_deep import Locator
    from evalkit.config import Config, System
    from evalkit.errors import Problem
    from evalkit.stages.validate import Validation

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.graders import canaries
    from evalkit.stages import health as health_code
    from evalkit.kinds.patch import score as patch_score
    from evalkit.stages import score_entropy as score_entropy_code
    from evalkit.stages import score_judge as score_judge_code
    from evalkit.stages import execute as stages_execute
    from evalkit.stages import validate as validate_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    canaries = later("evalkit.graders.canaries")
    health_code = later("evalkit.stages.health")
    patch_score = later("evalkit.kinds.patch.score")
    score_entropy_code = later("evalkit.stages.score_entropy")
    score_judge_code = later("evalkit.stages.score_judge")
    stages_execute = later("evalkit.stages.execute")
    validate_code = later("evalkit.stages.validate")

ABLATION_CAP = 64
"""Ablations derived per case before `validation.ablations` keeps the first few (the count shown beside them)."""

LOCALIZATION = tuple(f"{unit}_{what}@{k}" for k in (1, 3, 5, 10, 20) for unit in ("file", "function")
                     for what in ("recall", "hit"))


class Patch(Kind):
    name = "patch"
    description = "A repository and an issue; the answer's diff is applied and the tests run in the sandbox."
    inputs = PatchInputs
    reference = PatchReference
    execution = Execution(executed=True, validated=True, execute_reads_validation=True, validation_label="harness validation")
    judging = Judging(changes_judge=True)
    metrics = ("resolved", "pass_at_1", "pass_at_k", "pass_hat_k", "patch_applied", "f2p_pass_rate", "p2p_pass_rate", "flaky_tests", "sandbox_timeout",
               "tampered_with_tests", *LOCALIZATION)
    leaderboard = ("resolved", "f2p_pass_rate")

    def gold(self, case: Case) -> Sample:
        return Sample(patch=case.read("reference.patch_file") or "")

    def canary(self, case: Case, variant: str) -> Sample | None:
        if variant == "empty":
            return Sample()
        if variant == "unchanged":  # the tree as it is: an empty diff
            return Sample(patch="")
        if variant == "placeholder":
            return Sample(patch=canaries.placeholder_patch())
        if variant == "truncated":
            half = canaries.half_patch(case.read("reference.patch_file") or "")
            return Sample(patch=half) if half else None
        return None

    def environment_broken(self, cfg: Config, case: Case) -> str | None:
        return validate_code.environment_broken(cfg, case)  # validated once: gold and no patch both time out

    def execute(self, cfg: Config, system: System, case: Case, output: OutputArtifact) -> list[dict[str, object]]:
        return [stages_execute.run_patch(cfg, case, sample.patch) for sample in output.samples]

    def validate(self, cfg: Config, case: Case) -> Validation:
        return validate_code.validate_patch(cfg, case)

    ablations_checked_by = "tests"

    def ablations(self, case: Case) -> list[Ablation]:
        gold = case.read("reference.patch_file") or ""
        return [Ablation(name=p.name, description=p.description, sample=Sample(patch=p.patch))
                for p in partial_patches(gold, ABLATION_CAP)]

    def no_ablation_reason(self, case: Case) -> str:
        return ("the gold patch is one change (one hunk, one block of lines): without it, it is the empty "
                "answer validation already fails; no partial answer to try")

    def try_ablation(self, cfg: Config, case: Case, ablation: Ablation) -> AblationRun:
        """The case's FAIL_TO_PASS and PASS_TO_PASS tests on the partial patch, through `stages_execute.run_patch` (the
        sandbox and its content-addressed cache, as every run)."""

        run = stages_execute.run_patch(cfg, case, ablation.sample.patch, trusted=True)
        out = {"name": ablation.name, "description": ablation.description,
               "container": run.get("isolation") is not None}
        status = run.get("status")
        if status in ("infra_error", "case_error"):
            return AblationRun(**out, outcome="error", detail=f"{status}: {run.get('reason', '')}"[:500],
                               infra=status == "infra_error")
        if status == "patch_failed":
            return AblationRun(**out, outcome="error", detail="the partial patch does not apply")
        if run.get("resolved"):
            return AblationRun(**out, outcome="passed", detail="every FAIL_TO_PASS and PASS_TO_PASS test passes "
                                                               "without it")
        failing = sorted(t for t, st in {**run.get("fail_to_pass", {}), **run.get("pass_to_pass", {})}.items()
                         if st != "passed")
        detail = (f"failing: {', '.join(failing[:3])}" + (f" (and {len(failing) - 3} more)" if len(failing) > 3 else "")
                  if failing else f"{status}: {run.get('reason', '')}"[:300])
        return AblationRun(**out, outcome="noticed", detail=detail)

    def leaks(self, cfg: Config, case: Case) -> list[str] | None:
        if case.inputs_as(PatchInputs).tree_in_image:
            return None  # the tree is inside the image: not looked at here
        try:
            tree = stages_execute.source_tree(cfg, case)
        except stages_execute.TreeUnavailable:
            return None
        return health_code.tree_leaks(tree, health_code.post_images(tree, case.read("reference.patch_file") or ""))

    def scorers(self) -> list[AnyKindScorer]:
        return [score_judge_code.judge_metrics, patch_score.patch_metrics, score_entropy_code.entropy_metrics]

    def sandbox_image(self, case: Case) -> bool:
        return True

    def deep_checks(self, case: Case, cfg: Config, scratch: Path, where: Locator) -> list[Problem]:
        problems = []
        if not case.reference_as(PatchReference).fail_to_pass:
            problems.append(where.problem(case, ("reference", "fail_to_pass"),
                                          "reference.fail_to_pass is empty: nothing would show that a fix works; "
                                          "expected at least one test id that fails before the fix"))
        return problems + super().deep_checks(case, cfg, scratch, where)


KIND = Patch()
