"""Resolution: do the FAIL_TO_PASS and PASS_TO_PASS tests pass? Flaky tests by policy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from evalkit.sandbox.spec import TestStatus


@dataclass
class Grade:
    """Per-id statuses for the two lists, and the verdict with its explanation."""

    fail_to_pass: dict[str, TestStatus]
    pass_to_pass: dict[str, TestStatus]
    resolved: bool
    notes: list[str] = field(default_factory=list)


def merge_rerun(
    tests: dict[str, TestStatus], rerun: dict[str, TestStatus], ids: list[str]
) -> tuple[dict[str, TestStatus], list[str]]:
    """Fold one rerun of failing ``ids`` into ``tests``: an id that now passes has flipped -> flaky.

    Returns the new statuses and the ids still failing (to rerun again).
    """
    out = dict(tests)
    still_failing = []
    for test_id in ids:
        if rerun.get(test_id) == "passed":
            out[test_id] = "flaky"
        else:
            still_failing.append(test_id)
    return out, still_failing


def lookup(tests: dict[str, TestStatus], test_id: str) -> TestStatus | None:
    """Status of an expected id; an id SWE-bench's log parser cut at the first space
    (`test_x[a-b` for `test_x[a-b c]`) stands for every result id it is the first word of:
    passed only when all of those passed. None when nothing matches."""
    if test_id in tests:
        return tests[test_id]
    if "[" not in test_id or "]" in test_id:
        return None
    cut: list[TestStatus] = [status for full, status in tests.items()
                             if " " in full and full.split(" ", 1)[0] == test_id]
    if not cut:
        return None
    return "passed" if all(st == "passed" for st in cut) else next(st for st in cut if st != "passed")


def grade(
    tests: dict[str, TestStatus],
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    flaky_policy: Literal["fail", "pass", "exclude"] = "fail",
) -> Grade:
    """Resolved = every FAIL_TO_PASS and every PASS_TO_PASS id passed; an absent id counts as failed.

    Flaky ids count as failed (``fail``), passed (``pass``) or are left out (``exclude``); when
    every FAIL_TO_PASS id is left out, nothing shows the fix works, so it is not resolved.
    """
    f2p: dict[str, TestStatus] = {t: lookup(tests, t) or "failed" for t in fail_to_pass}
    p2p: dict[str, TestStatus] = {t: lookup(tests, t) or "failed" for t in pass_to_pass}
    notes: list[str] = []

    def ok(status: TestStatus) -> bool | None:
        if status == "flaky":
            return {"fail": False, "pass": True, "exclude": None}[flaky_policy]
        return status == "passed"

    f2p_ok = [v for v in map(ok, f2p.values()) if v is not None]
    p2p_ok = [v for v in map(ok, p2p.values()) if v is not None]
    absent = [t for t in [*fail_to_pass, *pass_to_pass] if lookup(tests, t) is None]
    if absent:
        notes.append(f"{len(absent)} expected test id(s) absent from the results (counted as failed)")
    if fail_to_pass and not f2p_ok:
        notes.append("every FAIL_TO_PASS test is flaky and excluded: nothing shows the fix works")
    resolved = bool(f2p_ok) and all(f2p_ok) and all(p2p_ok)
    return Grade(f2p, p2p, resolved, notes)
