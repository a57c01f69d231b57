"""run_tests: check a case and a patch, run the tests in a sandbox, and judge the outcome."""

from __future__ import annotations

import logging
import time
import traceback
from typing import Literal

from evalkit.isolation import for_run
from evalkit.llm.keys import seal
from evalkit.sandbox.backends import backend as sandbox_backend
from evalkit.sandbox.image_errors import ImageUnavailable
from evalkit.sandbox.outcome import Verdict, interpret
from evalkit.sandbox.patchcheck import PatchRejected, check_patch
from evalkit.sandbox.phase import PhaseOutcome, Sandbox, SandboxError
from evalkit.sandbox import guards
from evalkit.sandbox.script import control_files, rerun_command, sentinel_expected, split_junit_path
from evalkit.sandbox.spec import ExecutionResult, TestRunSpec
from evalkit.sandbox.tamper import screen, test_files
from evalkit.sandbox.outcome import test_output
from evalkit.swebench.verdict import harness_fields

log = logging.getLogger(__name__)

Backend = str
"""``auto`` or a registered sandbox backend's name (evalkit.sandbox.backends)."""


def resolve_backend(backend: Backend) -> str:
    """The backend that runs: ``backend`` itself, or for ``auto`` the most preferred available one (Docker
    when a daemon answered at this run's start, else local): decided once per process
    (``isolation.for_run``), so a daemon dying mid-run gives infra errors, not host runs."""
    return for_run(backend).chosen


def _early(status, reason: str, isolation: Literal["docker", "local"], t0: float, **kw) -> ExecutionResult:
    return ExecutionResult(status=status, reason=reason, isolation=isolation,
                           duration_s=round(time.monotonic() - t0, 3), **kw)


def run_tests(spec: TestRunSpec, backend: Backend = "auto") -> ExecutionResult:
    """Run ``spec``'s tests against its patch in a sandbox; never raises for a bad case or patch.

    Order of checks: the case (FAIL_TO_PASS list, test patch, JUnit paths) -> ``case_error``;
    the system's patch (safety, on the host, before any container) -> ``patch_failed``; its changes
    to test infrastructure -> ``tampered_with_tests`` or reverted (``spec.test_changes``); then the
    sandbox (image, daemon, container) -> ``infra_error`` when it fails; then the run itself.
    """
    t0 = time.monotonic()
    seal()  # no API key in this process's environment while a system's code runs beside it
    name = resolve_backend(backend)
    part = sandbox_backend(name)
    chosen = part.isolation
    notes = [] if backend != "auto" or chosen == "docker" else ["no Docker daemon answered when the run started: local backend"]

    if not spec.fail_to_pass:
        return _early("case_error", "no FAIL_TO_PASS tests: cannot decide resolution", chosen, t0)
    if spec.tree_in_image and not part.uses_images:
        return _early("infra_error", f"the tree is in the image {spec.image} ({spec.tree_in_image}): "
                      f"the run needs Docker (sandbox backend {name!r} runs no image)", chosen, t0)
    host_tree = None if spec.tree_in_image else spec.tree
    test_paths: tuple[str, ...] = ()
    try:
        for pattern in spec.junit_paths:
            split_junit_path(pattern)
        if spec.test_patch:
            test_paths = check_patch(spec.test_patch).paths
    except (PatchRejected, ValueError) as exc:
        return _early("case_error", f"the case is unusable: {exc}", chosen, t0)
    patch_paths: tuple[str, ...] = ()
    if spec.patch is not None:
        try:
            patch_paths = check_patch(spec.patch).paths
            tests_guard = screen(spec.patch, spec.test_changes, host_tree, patch_paths, test_paths,
                                 tuple(spec.test_paths), test_files([*spec.fail_to_pass, *spec.pass_to_pass]))
        except PatchRejected as exc:
            return _early("patch_failed", f"patch refused before running: {exc}", chosen, t0)
        except Exception as exc:  # noqa: BLE001 - a patch nothing can read is the system's failure, never a bug
            log.exception("reading the system's patch failed")
            return _early("patch_failed", f"patch refused before running: it could not be read "
                          f"({type(exc).__name__}: {exc})", chosen, t0)
    else:
        tests_guard = screen(None, spec.test_changes, host_tree, (), test_paths)
    if tests_guard.refused:  # tests decide, not the patch: the system's failure, before any sandbox
        return _early("tampered_with_tests", tests_guard.note, chosen, t0, resolved=False,
                      test_changes=tests_guard.listed)
    if tests_guard.note:
        notes.append(tests_guard.note)

    try:
        sentinel = guards.on("sentinel") and sentinel_expected(spec)
        ctl = control_files(spec, test_paths, patch_paths, tests_guard.revert, sentinel)
        with part.open(spec, ctl) as box:
            verdict = _run_phases(spec, box, sentinel)
            image_digest = box.image_digest
            notes += box.notes
    except ImageUnavailable as exc:
        return _early("infra_error", str(exc), chosen, t0)
    except SandboxError as exc:
        return _early("infra_error", f"sandbox failure: {exc}", chosen, t0)
    except Exception as exc:  # a crash of the sandbox machinery is the harness's failure, retried next run
        log.exception("sandbox crashed")
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return _early("infra_error", f"sandbox crash: {type(exc).__name__}: {exc} "
                      f"({where.filename.rsplit('/', 1)[-1]}:{where.lineno})", chosen, t0)
    reason = "; ".join([verdict.reason, *notes])
    result = verdict.result(reason=reason, isolation=chosen, image_digest=image_digest,
                            duration_s=round(time.monotonic() - t0, 3))
    if spec.log_parser:  # a SWE-bench case: the official harness grades the main run's output too

        main_out = test_output(verdict.phases[0])[0].decode("utf-8", "replace") if verdict.phases else None
        result = result.model_copy(update=harness_fields(spec, result, main_out))
    if tests_guard.found:
        result = result.model_copy(update={"test_changes": [*tests_guard.listed, *result.test_changes]})
    return result


def _run_phases(spec: TestRunSpec, box: Sandbox, sentinel: bool = False) -> Verdict:
    main = box.run_phase("main", None)
    verdict = interpret(spec, main, sentinel)
    if verdict.status != "completed" or spec.reruns == 0:
        return verdict
    wanted = dict.fromkeys([*spec.fail_to_pass, *spec.pass_to_pass])
    failing = [t for t in wanted if verdict.tests.get(t) in ("failed", "error")]
    for i in range(1, spec.reruns + 1):
        if not failing:
            break
        phase: PhaseOutcome = box.run_phase(f"rerun{i}", rerun_command(spec, failing))
        failing = verdict.add_rerun(spec, phase, failing)
    return verdict
