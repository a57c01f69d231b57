"""The official harness's verdict on a sandbox run, kept beside evalkit's (stricter) one."""

from __future__ import annotations

from typing import Any

from evalkit.sandbox.spec import ExecutionResult, TestRunSpec
from evalkit.swebench.harness import HarnessUnavailable, grade_text, harness_log, test_spec

#: Run statuses whose tests never ran to the end: the harness would not resolve them either.
NOT_RESOLVED = {"patch_failed": "the patch did not apply", "timeout": "the tests timed out",
                "oom": "the tests ran out of memory"}


def harness_fields(spec: TestRunSpec, result: ExecutionResult, main_output: str | None) -> dict[str, Any]:
    """ExecutionResult fields from grading the main run's test output with ``spec.log_parser``.

    Only the main run is graded (the harness does not rerun tests); its exit status is the one
    evalkit recorded under its nonce. A run whose tests did not run for another reason (evalkit
    refused the patch, the sandbox failed) has no harness verdict.
    """

    out: dict[str, Any] = {"harness_parser": spec.log_parser}
    if result.status in NOT_RESOLVED:
        return {**out, "harness_resolved": False, "harness_note": f"{NOT_RESOLVED[result.status]}: not resolved"}
    if result.status != "completed" or main_output is None:
        return {**out, "harness_note": f"the tests did not run ({result.status}): no harness verdict"}
    try:
        hspec = test_spec("case", "", spec.log_parser or "", spec.fail_to_pass, spec.pass_to_pass)
        report = grade_text(hspec, harness_log(main_output, result.exit_code), spec.patch or "")
    except HarnessUnavailable as exc:
        return {**out, "harness_note": str(exc)}
    status = report.get("tests_status")
    note = "" if report.get("patch_successfully_applied") else "the harness found no trustworthy test results in the log"
    if report.get("infra_failure"):
        note = f"the harness flags an environment failure ({report.get('infra_failure_reason')})"
    return {**out, "harness_resolved": bool(report.get("resolved")), "harness_tests_status": status,
            "harness_infra_failure": bool(report.get("infra_failure")), "harness_note": note}
