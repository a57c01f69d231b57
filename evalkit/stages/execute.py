"""execute: apply a system's patch to the case's source tree and run its tests in the sandbox."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from evalkit import tempdirs
from evalkit.artifacts import ExecutionArtifact, OutputArtifact, Provenance, Status
from evalkit.outcomes import SandboxRun
from evalkit.casemodels import PatchInputs, PatchReference, SandboxInputs
from evalkit.cases import Case
from evalkit.config import Config, System
from evalkit.fsutil import atomic_write_text, digest, ensure_dir
from evalkit.kind_registry import kind
from evalkit.stages.handed_trees import handed_tree
from evalkit.stages.slices import execute_slice
from evalkit.store import ContentStore
from evalkit.isolation import for_run, refusal
from evalkit.sandbox import SandboxLimits, TestRunSpec, run_tests_cached
from evalkit.swebench.harness import case_parser
from evalkit.swebench.image_names import official_image

_tree_lock = threading.Lock()

# sandbox status -> artifact status: the system's failures, ours, and the case's.
STATUS: dict[str, Status] = {"completed": "ok", "patch_failed": "ok", "tampered_with_tests": "ok", "timeout": "ok",
                             "oom": "ok", "infra_error": "infra_error", "case_error": "broken"}


class TreeUnavailable(RuntimeError):
    """The case's source tree could not be materialised (bad repo or commit)."""


class RepoUnmapped(TreeUnavailable):
    """The case names its repository as `owner/name` and this machine maps it nowhere (retried next run)."""


class RepoUnreachable(RepoUnmapped):
    """The repository's server sent nothing for ``CLONE_STALL_S`` seconds, or the clone outlasted ``CLONE_TIMEOUT_S``:
    this machine's network, not the case (an infrastructure error, retried next run, as an unmapped repository)."""


_OWNER_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_REMOTE = re.compile(r"^(https?://|git@|ssh://|file://)")
CLONE_STALL_S = 60
"""Seconds a clone may receive nothing before it is given up (a server that accepts and never answers; git's
``http.lowSpeedTime``, ssh's keep-alive)."""
CLONE_TIMEOUT_S = 3600
"""Seconds a clone that keeps receiving may take in all."""


def is_remote(repo: str) -> bool:
    """Whether ``inputs.repo`` (as resolved) is a URL git clones, not a folder on this machine."""
    return bool(_REMOTE.match(repo))


def clone(repo: str, dest: str) -> None:
    """``git clone --no-checkout repo dest``, never waiting on a server that does not answer, nor on a prompt:
    no terminal prompt, ssh in batch mode with keep-alives, HTTP given up after ``CLONE_STALL_S`` seconds without
    a byte. Raises RepoUnreachable when it stalls or outlasts ``CLONE_TIMEOUT_S``, TreeUnavailable when git fails."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    env.setdefault("GIT_SSH_COMMAND", f"ssh -o BatchMode=yes -o ConnectTimeout={CLONE_STALL_S} "
                                      f"-o ServerAliveInterval=15 -o ServerAliveCountMax={max(1, CLONE_STALL_S // 15)}")
    argv = ["git", "-c", "http.lowSpeedLimit=1", "-c", f"http.lowSpeedTime={CLONE_STALL_S}", "clone", "--quiet",
            "--no-checkout", repo, dest]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
                              timeout=CLONE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RepoUnreachable(f"cannot clone {repo}: still cloning after {CLONE_TIMEOUT_S} s") from None
    if proc.returncode:
        said = proc.stderr.strip()[:300]
        if "Operation too slow" in said or "Connection timed out" in said or "Timeout, server" in said:
            raise RepoUnreachable(f"cannot clone {repo}: its server sent nothing for {CLONE_STALL_S} s: {said}")
        raise TreeUnavailable(f"cannot clone {repo}: {said}")


def repo_map(cfg: Config) -> dict[str, str]:
    """`owner/name` -> clone or URL: config `sandbox.repos`, then `EVALKIT_REPOS` (`owner/name=DIR,...`)."""
    out = dict(cfg.sandbox.repos)
    for spec in re.split(r"[,;\n]", os.environ.get("EVALKIT_REPOS", "")):
        name, sep, target = spec.partition("=")
        if sep and name.strip() and target.strip():
            out[name.strip()] = target.strip()
    return out


def resolve_repo(cfg: Config, repo: str) -> str:
    """Where a case's `inputs.repo` is: a URL or an existing path as written; `owner/name` (portable
    suites, e.g. SWE-bench imports) through the repo map or a folder of clones."""
    if is_remote(repo) or not _OWNER_NAME.match(repo):
        return repo
    mapped = repo_map(cfg).get(repo)
    if mapped:
        return mapped if is_remote(mapped) else str(cfg.resolve(mapped))
    owner, name = repo.split("/")
    for base in (os.environ.get("EVALKIT_REPOS_DIR"), cfg.sandbox.repos_dir):
        if not base:
            continue
        root = cfg.resolve(base)
        for cand in (root / f"{owner}__{name}", root / owner / name, root / name):
            if cand.is_dir():
                return str(cand)
    if Path(repo).is_dir():  # a relative folder that happens to look like owner/name
        return repo
    raise RepoUnmapped(f"repository {repo} is not mapped on this machine: give `--repo {repo}=DIR` to evalkit run, "
                       "or set sandbox.repos / sandbox.repos_dir in evalkit.yaml (or EVALKIT_REPOS / EVALKIT_REPOS_DIR)")


def tree_in_image(case: Case) -> str | None:
    """The image folder holding a SWE-bench case's tree (None: the tree is the case's, or built from its repo)."""
    return case.inputs.tree_in_image if isinstance(case.inputs, PatchInputs) else None


def source_tree(cfg: Config, case: Case) -> Path:
    """The case's source tree: its folder, or `git archive` of repo@base_commit (cached)."""
    folder = case.ref_path("inputs.source_dir")
    if folder is not None:
        return folder
    inputs = case.inputs
    repo, commit = (inputs.repo, inputs.base_commit) if isinstance(inputs, PatchInputs) else (None, None)
    if not repo or not commit:
        raise TreeUnavailable("patch case needs inputs.source_dir, or inputs.repo and inputs.base_commit")
    handed = handed_tree(str(repo), str(commit))  # inside a stage call: the tree the coordinator made, by content
    if isinstance(handed, Path):
        return handed
    if handed is not None:
        raise (RepoUnmapped if handed.unmapped else TreeUnavailable)(handed.error)
    return tree_at(resolve_repo(cfg, str(repo)), str(commit), cfg.work_path / "cache" / "trees")


def tree_at(repo: str, commit: str, trees: Path) -> Path:
    """The files of ``repo`` (a folder, or a URL: cloned first) at ``commit``, under ``trees`` (made once per
    repository and commit: the folder holds ``.evalkit-complete`` when whole)."""
    dest = trees / digest([repo, commit])[:24]
    with _tree_lock:
        if (dest / ".evalkit-complete").exists():
            return dest
        src = None if is_remote(repo) else Path(repo)
        with tempfile.TemporaryDirectory(prefix=tempdirs.prefix("evalkit-tree-")) as tmp:
            if src is None:
                clone(repo, tmp + "/r")
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

    why = refusal(for_run(cfg.sandbox.backend), case.suite, case.trusted)
    return None if why is None else {"status": "infra_error", "reason": why, "isolation": None}


DEFAULT_TEST_COMMAND = "python3 -m pytest -rA -p no:cacheprovider"
#: The test command of a case with an eval script (the runner exports where it put the script).
EVAL_SCRIPT_COMMAND = 'bash "$EVALKIT_EVAL_SCRIPT"'


def run_spec(cfg: Config, case: Case, patch: str | None, trusted: bool = False) -> TestRunSpec:
    """The sandbox request for one patch on one case (``trusted``: the case's own reference patch)."""

    inputs, ref = case.inputs_as(PatchInputs), case.reference_as(PatchReference)
    sb = cfg.sandbox
    in_image = inputs.tree_in_image
    eval_script = case.read("inputs.eval_script_file") if inputs.eval_script_file else None
    command = inputs.test_command
    if eval_script is not None and in_image and command == DEFAULT_TEST_COMMAND:
        command = EVAL_SCRIPT_COMMAND
    if "EVALKIT_EVAL_SCRIPT" not in command:
        eval_script = None  # carried by the case, unused by its command: not part of the run
    return TestRunSpec(
        image=official_image(cfg, inputs.image) if in_image else inputs.image,
        tree=f"(in the image: {in_image})" if in_image else str(source_tree(cfg, case)), patch=patch or None,
        patch_trusted=trusted and bool(patch),
        tree_in_image=in_image or None, eval_script=eval_script,
        test_patch=case.read("inputs.test_patch_file"), test_command=command,
        junit_paths=inputs.junit_paths, fail_to_pass=ref.fail_to_pass,
        pass_to_pass=ref.pass_to_pass, reruns=sb.reruns, flaky_policy=sb.flaky_policy,
        limits=SandboxLimits(memory_mb=sb.memory_mb, cpus=sb.cpus, pids=sb.pids, timeout_s=inputs.timeout_s,
                             log_limit_bytes=sb.log_limit_bytes),
        dockerfile_dir=str(case.ref_path("inputs.dockerfile_dir")) if case.ref_path("inputs.dockerfile_dir") else None,
        test_changes=case.test_changes, log_parser=_harness_parser(inputs), **_test_paths(case))


def _test_paths(case: Case) -> dict[str, Any]:
    """The suite's `test_paths` for the sandbox request (nothing: the sandbox's defaults)."""
    return {} if case.test_paths is None else {"test_paths": list(case.test_paths)}


def _harness_parser(inputs: PatchInputs) -> str | None:
    """The official SWE-bench harness's log parser of a SWE-bench case (None for other patch cases)."""

    return case_parser(inputs)


def app_test_run(cfg: Config, case: Case, patch: str | None, test_ids: list[str]) -> dict[str, Any]:
    """Run an agentic or e2e case's tests on its tree plus `patch`: `test_ids` must all pass
    (as FAIL_TO_PASS: an id absent from the results counts as failed). Content-addressed."""

    inputs, sb = case.inputs_as(SandboxInputs), cfg.sandbox
    refused = host_refusal(cfg, case)
    if refused:
        return refused
    try:
        tree = source_tree(cfg, case)
    except TreeUnavailable as exc:
        return {"status": "case_error", "reason": str(exc), "isolation": "local"}
    spec = TestRunSpec(
        image=inputs.image, tree=str(tree), patch=patch or None, test_command=inputs.test_command or "",
        junit_paths=inputs.junit_paths, fail_to_pass=test_ids, reruns=sb.reruns,
        flaky_policy=sb.flaky_policy,
        limits=SandboxLimits(memory_mb=sb.memory_mb, cpus=sb.cpus, pids=sb.pids, timeout_s=inputs.timeout_s,
                             log_limit_bytes=sb.log_limit_bytes),
        test_changes=case.test_changes, **_test_paths(case))
    store = ContentStore(cfg.work_path / "cache", "sandbox")
    return run_tests_cached(spec, store, cfg.sandbox.backend).model_dump(mode="json")


def run_patch(cfg: Config, case: Case, patch: str | None, trusted: bool = False) -> dict[str, Any]:
    """Run one patch (content-addressed: the same tree, patch and settings never run twice);
    ``trusted``: the case's reference patch (a system's is never trusted)."""

    refused = host_refusal(cfg, case)
    if refused:
        return refused
    try:
        spec = run_spec(cfg, case, patch, trusted)
    except RepoUnmapped as exc:  # this machine's setup, not the case: retried once the repository is mapped
        return {"status": "infra_error", "reason": str(exc), "isolation": None}
    except TreeUnavailable as exc:
        return {"status": "case_error", "reason": str(exc), "isolation": "local"}
    store = ContentStore(cfg.work_path / "cache", "sandbox")
    return run_tests_cached(spec, store, cfg.sandbox.backend).model_dump(mode="json")


def execute(cfg: Config, system: System, case: Case, output: OutputArtifact) -> ExecutionArtifact:
    base: dict[str, Any] = {"system": system.name, "suite": case.suite, "case_id": case.id}
    prov = Provenance(inputs=digest([output.provenance, case.digest]), config=digest(execute_slice(cfg)))
    if output.status != "ok" or not case.ok:
        return ExecutionArtifact(**base, status=output.status if case.ok else "error",
                                 reason=output.reason, provenance=prov)
    kd = kind(case.kind)
    broken = kd.environment_broken(cfg, case)
    if broken is not None:  # e.g. patch, validated once: gold and no patch both time out; no system's patch runs
        return ExecutionArtifact(**base, status="broken", reason=f"{kd.execution.validation_label}: {broken}", provenance=prov)
    runs = kd.execute(cfg, system, case, output)  # patch: the tests; agentic: re-check; e2e: iterations
    typed = [SandboxRun.model_validate(run) for run in runs]
    first = typed[0]
    status = STATUS[first.status]
    return ExecutionArtifact(**base, status=status, reason=first.reason if status != "ok" else "",
                             runs=typed, isolation=first.isolation, provenance=prov)
