"""patch: a repository and an issue; the answer is a unified diff the sandbox applies and tests
(SWE-bench style: FAIL_TO_PASS and PASS_TO_PASS)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.artifacts import Sample
from evalkit.casemodels import PatchInputs, PatchReference
from evalkit.contracts import AnyKindScorer
from evalkit.kinds.base import Execution, Judging, Kind

if TYPE_CHECKING:
    from evalkit.artifacts import OutputArtifact
    from evalkit.cases import Case
    from evalkit.checks_deep import Locator
    from evalkit.config import Config, System
    from evalkit.errors import Problem
    from evalkit.stages.validate import Validation

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
        from evalkit.graders import canaries  # deferred: stage code; planning tasks needs only the declarations

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
        from evalkit.stages.validate import environment_broken  # deferred: stage code; planning tasks needs only the declarations

        return environment_broken(cfg, case)  # validated once: gold and no patch both time out

    def execute(self, cfg: Config, system: System, case: Case, output: OutputArtifact) -> list[dict[str, object]]:
        from evalkit.stages.execute import run_patch  # deferred: stage code; planning tasks needs only the declarations

        return [run_patch(cfg, case, sample.patch) for sample in output.samples]

    def validate(self, cfg: Config, case: Case) -> Validation:
        from evalkit.stages.validate import validate_patch  # deferred: stage code; planning tasks needs only the declarations

        return validate_patch(cfg, case)

    def scorers(self) -> list[AnyKindScorer]:
        from evalkit.stages.score_entropy import entropy_metrics  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.stages.score_judge import judge_metrics  # deferred: stage code; planning tasks needs only the declarations
        from evalkit.stages.score_patch import patch_metrics  # deferred: stage code; planning tasks needs only the declarations

        return [judge_metrics, patch_metrics, entropy_metrics]

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
