"""From what a phase left behind (marker files, JUnit reports, output) to a verdict.

Trust rules, so that a patch printing fake ``PASSED`` lines cannot pass:

* markers (patch method, exit status) count only when they carry the phase's nonce;
* JUnit XML fetched from the sandbox is preferred to printed output; printed failures still
  count against a test (the worse status wins);
* when ``junit_paths`` are given but no report was produced, printed outcomes are not trusted;
* a non-zero exit status with no failing test reported means the output lies: not resolved.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from evalkit.sandbox.grading import grade, merge_rerun
from evalkit.sandbox.parsing import apply_collection_errors, parse_junit, parse_pytest_summary, worse
from evalkit.sandbox.phase import PhaseOutcome
from evalkit.sandbox.script import PATCH_FAILED_EXIT, RUNNER_ERROR, TEST_PATCH_FAILED_EXIT
from evalkit.sandbox.spec import ExecutionResult, RunStatus, TestRunSpec, TestStatus

NOT_FOUND_EXITS = (126, 127)


def _excerpt(data: bytes, limit: int = 2000) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else text[:limit] + " [...]"


def test_output(phase: PhaseOutcome) -> tuple[bytes, int, bool]:
    """The kept test output of a phase (head, a cut marker, tail), its full size, whether it was cut."""
    head, tail = phase.files.get("log", b""), phase.files.get("tail", b"")
    try:
        rest = int(phase.files.get("rest", b"0").strip() or 0)
    except ValueError:
        rest = 0
    omitted = max(rest - len(tail), 0)
    if omitted:
        return head + f"\n[... {omitted} bytes of output not kept ...]\n".encode() + tail, len(head) + rest, True
    return head + tail, len(head) + rest, False


def phase_tests(spec: TestRunSpec, phase: PhaseOutcome) -> tuple[dict[str, TestStatus], bool]:
    """Test statuses of one phase and whether a JUnit report was found."""
    wanted = [*spec.fail_to_pass, *spec.pass_to_pass]
    printed = parse_pytest_summary(test_output(phase)[0].decode("utf-8", "replace"))
    junit: dict[str, TestStatus] = {}
    found = False
    for name, data in sorted(phase.files.items()):
        if name.startswith("junit/"):
            try:
                parsed = parse_junit(data, wanted)
            except ValueError:
                continue
            found = True
            for test_id, status in parsed.items():
                junit[test_id] = worse(junit.get(test_id), status)
    if found:
        tests = junit
        for test_id, status in printed.items():
            if status in ("failed", "error"):
                tests[test_id] = worse(tests.get(test_id), status)
    else:
        tests = printed
    return apply_collection_errors(tests, wanted), found


@dataclass
class SentinelReport:
    """What evalkit's pytest plugin wrote in one phase (every pytest process of it)."""

    tests: dict[str, TestStatus] = field(default_factory=dict)
    tampered: list[str] = field(default_factory=list)
    finished: bool = False
    """At least one pytest process wrote its final results, and none was left at its start."""


def sentinel_report(phase: PhaseOutcome) -> SentinelReport:
    """The plugin's results of ``phase`` (unreadable files count as unfinished)."""
    out = SentinelReport()
    states = []
    for raw in phase.sentinel:
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            states.append("unreadable")
            continue
        if not isinstance(data, dict):
            states.append("unreadable")
            continue
        states.append(str(data.get("state")))
        for what in data.get("tampered") or []:
            if str(what) not in out.tampered:
                out.tampered.append(str(what))
        tests = data.get("tests")
        for test_id, status in (tests.items() if isinstance(tests, dict) else ()):
            if status in ("passed", "failed", "error", "skipped"):
                out.tests[str(test_id)] = worse(out.tests.get(str(test_id)), status)
    out.finished = bool(states) and all(st == "finished" for st in states)
    return out


def sentinel_tests(spec: TestRunSpec, phase: PhaseOutcome, report: SentinelReport) -> dict[str, TestStatus]:
    """The plugin's statuses; a failure the output prints can only make a test worse."""
    tests = dict(report.tests)
    printed = parse_pytest_summary(test_output(phase)[0].decode("utf-8", "replace"))
    for test_id, status in printed.items():
        if status in ("failed", "error"):
            tests[test_id] = worse(tests.get(test_id), status)
    return apply_collection_errors(tests, [*spec.fail_to_pass, *spec.pass_to_pass])


@dataclass
class Verdict:
    """What the run found so far; becomes an ExecutionResult."""

    spec: TestRunSpec
    status: RunStatus
    reason: str
    phases: list[PhaseOutcome] = field(default_factory=list)
    patch_applied: bool = False
    patch_method: str | None = None
    tests: dict[str, TestStatus] = field(default_factory=dict)
    exit_code: int | None = None
    trusted: bool = True
    notes: list[str] = field(default_factory=list)
    sentinel: bool = False
    """evalkit's pytest plugin ran: the results are its, and it must have finished."""
    tampered: list[str] = field(default_factory=list)

    def add_rerun(self, spec: TestRunSpec, phase: PhaseOutcome, ids: list[str]) -> list[str]:
        """Fold a rerun of ``ids`` in; returns the ids still failing (empty to stop rerunning)."""
        self.phases.append(phase)
        if phase.state != "exited":
            self.notes.append(f"{phase.phase} ended by {phase.state}: its tests count as failed")
            return []
        rc = phase.marker("status")
        rerun, _ = phase_tests(spec, phase)
        if self.sentinel:
            report = sentinel_report(phase)
            if report.tampered:
                self.status, self.tampered = "tampered_with_tests", report.tampered
                self.reason = f"{phase.phase}: the tests' run was tampered with: {'; '.join(report.tampered[:3])}"
                return []
            if not report.finished:
                self.notes.append(f"{phase.phase}: evalkit's pytest plugin left no complete result; ignored")
                return []
            rerun = sentinel_tests(spec, phase, report)
        if rc is None or (rc != "0" and not any(rerun.get(t) in ("failed", "error") for t in ids)):
            self.notes.append(f"{phase.phase}: no trustworthy exit status or output; ignored")
            return []
        self.tests, still = merge_rerun(self.tests, rerun, ids)
        return still

    def result(self, *, reason: str, isolation: Literal["docker", "local"], image_digest: str | None,
               duration_s: float) -> ExecutionResult:
        log, truncated, total = self._log()
        kw: dict[str, Any] = {}
        if self.status == "tampered_with_tests":
            kw = dict(resolved=False, test_changes=[f"(at run time): {t}" for t in self.tampered])
        if self.status == "completed":
            g = grade(self.tests, list(self.spec.fail_to_pass), list(self.spec.pass_to_pass), self.spec.flaky_policy)
            kw = dict(fail_to_pass=g.fail_to_pass, pass_to_pass=g.pass_to_pass, resolved=g.resolved and self.trusted)
            reason = "; ".join([reason, *g.notes])
        flaky = sorted(t for t, s in self.tests.items() if s == "flaky")
        if flaky:
            reason += f"; {len(flaky)} flaky test(s) counted per flaky_policy={self.spec.flaky_policy}"
        return ExecutionResult(
            status=self.status, reason="; ".join([reason, *self.notes]) if self.notes else reason,
            isolation=isolation, patch_applied=self.patch_applied, patch_method=self.patch_method,
            tests=dict(sorted(self.tests.items())), exit_code=self.exit_code, flaky=flaky, log=log,
            log_truncated=truncated, log_bytes=total, duration_s=duration_s, image_digest=image_digest, **kw,
        )

    def _log(self) -> tuple[str, bool, int]:
        parts: list[bytes] = []
        total = 0
        truncated = False
        for ph in self.phases:
            runner = ph.files.get("runner.txt", ph.crash_output)
            out, size, cut = test_output(ph)
            truncated = truncated or cut or ph.files_capped
            total += len(runner) + size
            parts += [f"===== {ph.phase}: runner =====\n".encode(), runner,
                      f"\n===== {ph.phase}: test output =====\n".encode(), out]
        blob = b"".join(parts)
        limit = self.spec.limits.log_limit_bytes
        if len(blob) > limit:  # keep both ends: the start says what ran, the end how it finished
            cut_mark = b"\n[... log cut ...]\n"
            half = max((limit - len(cut_mark)) // 2, 0)
            blob, truncated = blob[:half] + cut_mark + blob[len(blob) - half:], True
        return blob.decode("utf-8", "replace"), truncated, total


def interpret(spec: TestRunSpec, main: PhaseOutcome, sentinel: bool = False) -> Verdict:
    """The verdict of the main phase (before reruns); ``sentinel``: evalkit's pytest plugin ran."""
    v = Verdict(spec, "completed", "", [main], sentinel=sentinel)
    if main.state == "timeout":
        v.status, v.reason = "timeout", f"the run did not finish within {spec.limits.timeout_s:g} s and was killed"
        return v
    if main.state == "oom":
        v.status, v.reason = "oom", f"the run exceeded the memory limit of {spec.limits.memory_mb} MiB and was killed"
        return v
    if "runner.txt" not in main.files:
        v.status = "infra_error"
        v.reason = f"the sandbox runner did not start (exit {main.exit_code}): {_excerpt(main.crash_output, 500)}"
        return v
    method = main.marker("method")
    runner_text = _excerpt(main.files["runner.txt"], 1500)
    if method == "none" or main.exit_code == PATCH_FAILED_EXIT and method is None:
        v.status, v.reason = "patch_failed", f"the patch does not apply with any method: {runner_text}"
        return v
    if method == "error" or (main.exit_code or 0) >= RUNNER_ERROR:
        v.status, v.reason = "infra_error", f"the sandbox runner failed (exit {main.exit_code}): {runner_text}"
        return v
    if main.marker("testpatch") == "failed" or main.exit_code == TEST_PATCH_FAILED_EXIT:
        v.status, v.reason = "case_error", f"the test patch does not apply over the base files: {runner_text}"
        return v
    if spec.patch is not None and method not in (None, "-"):
        v.patch_applied, v.patch_method = True, method
    elif spec.patch is not None:
        v.patch_applied = True
        v.notes.append("the patch-method marker was overwritten during the tests")
    rc_text = main.marker("status")
    v.tests, junit_found = phase_tests(spec, main)
    if rc_text is None or not rc_text.lstrip("-").isdigit():
        v.trusted = False
        v.reason = "the run left no trustworthy exit status (missing, or overwritten by test code): not resolved"
        return v
    v.exit_code = int(rc_text)
    if v.exit_code in NOT_FOUND_EXITS and not v.tests:
        v.status = "case_error"
        v.reason = f"the test command could not run (exit {v.exit_code}: not found or not executable); no test ran"
        return v
    v.reason = f"tests ran; exit status {v.exit_code}"
    if sentinel:
        report = sentinel_report(main)
        if report.tampered:
            v.status, v.tampered = "tampered_with_tests", report.tampered
            v.reason = ("the tests' run was tampered with (evalkit's pytest plugin saw it): "
                        + "; ".join(report.tampered[:3]) + (f" (and {len(report.tampered) - 3} more)"
                                                            if len(report.tampered) > 3 else ""))
            return v
        if not report.finished:
            v.trusted = False
            v.notes.append("evalkit's pytest plugin left no complete result (pytest did not run, was cut short or "
                           "kept from finishing): outcomes not trusted")
        else:
            v.tests = sentinel_tests(spec, main, report)
            junit_found = True  # the plugin's results stand in for any report
    if spec.junit_paths and not junit_found:
        v.trusted = False
        v.notes.append("no JUnit report was produced although junit_paths are set: printed outcomes not trusted")
    if v.exit_code != 0 and not any(s in ("failed", "error") for s in v.tests.values()):
        v.trusted = False
        v.notes.append(f"exit status {v.exit_code} but no failing test reported: printed outcomes not trusted")
    if main.files_capped:
        v.notes.append("results were larger than the fetch cap and were cut")
    return v
