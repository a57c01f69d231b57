"""execute: apply a system's patch to the case's source tree and run its tests in the sandbox."""

from __future__ import annotations

import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from evalkit import tempdirs
from evalkit.artifacts import ExecutionArtifact, OutputArtifact, Provenance
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.fsutil import atomic_write_text, digest, ensure_dir
from evalkit.stages.slices import execute_slice
from evalkit.store import ContentStore

_tree_lock = threading.Lock()

# sandbox status -> artifact status: the system's failures, ours, and the case's.
STATUS = {"completed": "ok", "patch_failed": "ok", "tampered_with_tests": "ok", "timeout": "ok", "oom": "ok",
          "infra_error": "infra_error", "case_error": "broken"}


class TreeUnavailable(RuntimeError):
    """The case's source tree could not be materialised (bad repo or commit)."""


def source_tree(cfg: Config, case: Case) -> Path:
    """The case's source tree: its folder, or `git archive` of repo@base_commit (cached)."""
    folder = case.ref_path("inputs.source_dir")
    if folder is not None:
        return folder
    repo, commit = case.inputs.get("repo"), case.inputs.get("base_commit")
    if not repo or not commit:
        raise TreeUnavailable("patch case needs inputs.source_dir, or inputs.repo and inputs.base_commit")
    dest = cfg.work_path / "cache" / "trees" / digest([repo, commit])[:24]
    with _tree_lock:
        if (dest / ".evalkit-complete").exists():
            return dest
        src = Path(repo) if not str(repo).startswith(("http://", "https://", "git@")) else None
        with tempfile.TemporaryDirectory(prefix=tempdirs.prefix("evalkit-tree-")) as tmp:
            if src is None:
                proc = subprocess.run(["git", "clone", "--quiet", "--no-checkout", repo, tmp + "/r"],
                                      capture_output=True, text=True)
                if proc.returncode:
                    raise TreeUnavailable(f"cannot clone {repo}: {proc.stderr.strip()[:300]}")
                src = Path(tmp) / "r"
            ensure_dir(dest)
            archive = subprocess.run(["git", "-C", str(src), "archive", "--format=tar", commit],
                                     capture_output=True)
            if archive.returncode:
                raise TreeUnavailable(f"cannot check out {commit} of {repo}: "
                                      f"{archive.stderr.decode(errors='replace').strip()[:300]}")
            subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
        atomic_write_text(dest / ".evalkit-complete", commit)
    return dest


def host_refusal(cfg: Config, case: Case) -> dict[str, Any] | None:
    """An infra_error run record when this run's isolation may not execute the case's suite
    (``auto`` found no daemon at the start and the suite is not trusted); None when it may."""
    from evalkit.isolation import for_run, refusal

    why = refusal(for_run(cfg.sandbox.backend), case.suite, case.trusted)
    return None if why is None else {"status": "infra_error", "reason": why, "isolation": None}


def run_spec(cfg: Config, case: Case, patch: str | None) -> Any:
    """The sandbox request for one patch on one case."""
    from evalkit.sandbox import SandboxLimits, TestRunSpec

    inputs, ref = case.inputs, case.reference
    sb = cfg.sandbox
    return TestRunSpec(
        image=inputs["image"], tree=str(source_tree(cfg, case)), patch=patch or None,
        test_patch=case.read("inputs.test_patch_file"), test_command=inputs["test_command"],
        junit_paths=inputs.get("junit_paths", []), fail_to_pass=ref.get("fail_to_pass", []),
        pass_to_pass=ref.get("pass_to_pass", []), reruns=sb.reruns, flaky_policy=sb.flaky_policy,
        limits=SandboxLimits(memory_mb=sb.memory_mb, cpus=sb.cpus, pids=sb.pids, timeout_s=inputs["timeout_s"],
                             log_limit_bytes=sb.log_limit_bytes),
        dockerfile_dir=str(case.ref_path("inputs.dockerfile_dir")) if case.ref_path("inputs.dockerfile_dir") else None,
        test_changes=case.test_changes, log_parser=_harness_parser(case.inputs))


def _harness_parser(inputs: dict[str, Any]) -> str | None:
    """The official SWE-bench harness's log parser of a SWE-bench case (None for other patch cases)."""
    from evalkit.swebench.harness import case_parser

    return case_parser(inputs)


def app_test_run(cfg: Config, case: Case, patch: str | None, test_ids: list[str]) -> dict[str, Any]:
    """Run an agentic or e2e case's tests on its tree plus `patch`: `test_ids` must all pass
    (as FAIL_TO_PASS: an id absent from the results counts as failed). Content-addressed."""
    from evalkit.sandbox import SandboxLimits, TestRunSpec, run_tests_cached

    inputs, sb = case.inputs, cfg.sandbox
    refused = host_refusal(cfg, case)
    if refused:
        return refused
    try:
        tree = source_tree(cfg, case)
    except TreeUnavailable as exc:
        return {"status": "case_error", "reason": str(exc), "isolation": "local"}
    spec = TestRunSpec(
        image=inputs["image"], tree=str(tree), patch=patch or None, test_command=inputs["test_command"],
        junit_paths=inputs.get("junit_paths", []), fail_to_pass=test_ids, reruns=sb.reruns,
        flaky_policy=sb.flaky_policy,
        limits=SandboxLimits(memory_mb=sb.memory_mb, cpus=sb.cpus, pids=sb.pids, timeout_s=inputs["timeout_s"],
                             log_limit_bytes=sb.log_limit_bytes),
        test_changes=case.test_changes)
    store = ContentStore(cfg.work_path / "cache", "sandbox")
    return run_tests_cached(spec, store, cfg.sandbox.backend).model_dump(mode="json")


def run_patch(cfg: Config, case: Case, patch: str | None) -> dict[str, Any]:
    """Run one patch (content-addressed: the same tree, patch and settings never run twice)."""
    from evalkit.sandbox import run_tests_cached

    refused = host_refusal(cfg, case)
    if refused:
        return refused
    try:
        spec = run_spec(cfg, case, patch)
    except TreeUnavailable as exc:
        return {"status": "case_error", "reason": str(exc), "isolation": "local"}
    store = ContentStore(cfg.work_path / "cache", "sandbox")
    return run_tests_cached(spec, store, cfg.sandbox.backend).model_dump(mode="json")


def execute(cfg: Config, system: Any, case: Case, output: OutputArtifact) -> ExecutionArtifact:
    base = {"system": system.name, "suite": case.suite, "case_id": case.id}
    prov = Provenance(inputs=digest([output.provenance, case.digest]), config=digest(execute_slice(cfg)))
    if output.status != "ok" or not case.ok:
        return ExecutionArtifact(**base, status=output.status if case.ok else "error",
                                 reason=output.reason, provenance=prov)
    if case.kind == "agentic":
        from evalkit.stages.execute_agentic import recheck

        runs = [recheck(cfg, case, sample) for sample in output.samples]
    elif case.kind == "e2e":
        from evalkit.stages.execute_e2e import iterate

        runs = [iterate(cfg, system, case, sample, i) for i, sample in enumerate(output.samples)]
    else:
        runs = [run_patch(cfg, case, sample.patch) for sample in output.samples]
    first = runs[0]
    status = STATUS[first["status"]]
    return ExecutionArtifact(**base, status=status, reason=first.get("reason", "") if status != "ok" else "",
                             runs=runs, isolation=first.get("isolation"), provenance=prov)
