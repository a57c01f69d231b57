"""validate: the harness check of a patch case — its gold patch must resolve, no patch must not.

A case that fails is `broken`: excluded from rates and listed in the report with the reason.
Runs share the sandbox cache with the execute stage, so a `gold` system costs nothing extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from evalkit.cases import Case
from evalkit.config import Config
from evalkit.models import Model
from evalkit.stages.execute import run_patch


class Validation(Model):
    """validation.json of one patch case."""

    suite: str
    """Suite name."""
    case_id: str
    """Case id."""
    status: Literal["valid", "broken", "infra_error"]
    """valid: gold resolves and empty does not; broken: the case cannot tell systems apart."""
    reason: str = ""
    """Why the case is broken (or the infrastructure error)."""


def validation_path(work: Path, case: Case) -> Path:
    return work / "validation" / case.suite / f"{case.id}.json"


def validate_case(cfg: Config, case: Case) -> Validation:
    base = {"suite": case.suite, "case_id": case.id}
    if not case.ok:
        return Validation(**base, status="broken", reason="; ".join(p.message for p in case.problems))
    gold = run_patch(cfg, case, case.read("reference.patch_file"))
    empty = run_patch(cfg, case, None)
    for name, run in (("gold", gold), ("empty", empty)):
        if run["status"] == "infra_error":
            return Validation(**base, status="infra_error", reason=f"{name}: {run['reason']}")
        if run["status"] == "case_error":
            return Validation(**base, status="broken", reason=run["reason"])
    if not gold.get("resolved"):
        failing = sorted(t for t, s in {**gold.get("fail_to_pass", {}), **gold.get("pass_to_pass", {})}.items()
                         if s != "passed")
        detail = f"failing: {', '.join(failing[:5])}" if failing else gold.get("reason", "")
        return Validation(**base, status="broken", reason=f"gold patch does not resolve ({gold['status']}; {detail})")
    if empty.get("resolved"):
        return Validation(**base, status="broken", reason="resolved without any patch: FAIL_TO_PASS tests already pass")
    return Validation(**base, status="valid")
