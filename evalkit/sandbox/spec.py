"""What a sandboxed test run is asked to do (TestRunSpec); what it found (ExecutionResult) is in evalkit.outcomes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalkit.models import Model
from evalkit.outcomes import ExecutionResult, RunStatus, TestStatus
from evalkit.sandbox.tamper import DEFAULT_TEST_PATHS

__all__ = ["ExecutionResult", "RunStatus", "SandboxLimits", "TestRunSpec", "TestStatus", "PATCH_METHODS"]

TestChanges = Literal["refuse", "revert"]

#: Patch methods tried in this order; the first that applies cleanly wins.
PATCH_METHODS = ("git apply", "git apply --3way", "git apply --reject", "patch --fuzz=3")


class SandboxLimits(Model):
    """Resource limits of one sandboxed run."""

    memory_mb: int = Field(default=1024, gt=0)
    """Memory limit in MiB (Docker mem_limit, swap included; local: RLIMIT_AS)."""
    cpus: float = Field(default=1.0, gt=0)
    """CPU quota in cores (Docker nano_cpus; not enforced by the local backend)."""
    pids: int = Field(default=256, gt=0)
    """Maximum number of processes (Docker pids_limit; local: RLIMIT_NPROC above the user's current count)."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Wall-clock limit of one phase (setup + patches + tests, or one rerun); the sandbox is killed after it."""
    log_limit_bytes: int = Field(default=1_000_000, gt=0)
    """At most this many bytes of output are kept per phase and in the final log."""


class TestRunSpec(Model):
    """One request to run a case's tests against a system's patch in a sandbox."""

    __test__ = False  # not a pytest test class, despite the name

    image: str
    """Docker image to run in, e.g. ``evalkit/python-pytest:bookworm``."""
    tree: str
    """Host path of the source tree; it is copied (without ``.git``), never modified, never executed on the host."""
    patch: str | None = None
    """The system's unified diff (untrusted); None runs the tests on the unmodified tree."""
    patch_trusted: bool = False
    """The patch is the case's own (its reference, checked by validation), not a system's output."""
    test_patch: str | None = None
    """The case's test diff, applied strictly (``git apply``) after the system patch, over base versions of its files."""
    test_command: str
    """Shell command run in the tree, e.g. ``python3 -m pytest -rA -p no:cacheprovider tests``."""
    rerun_command: str = "{test_command} {ids}"
    """Rerun template; ``{ids}``: shell-quoted failing ids (the default also reruns a folder the command names)."""
    junit_paths: list[str] = []
    """JUnit XML files to collect after each run, relative to the tree; glob characters are allowed in the file name only."""
    fail_to_pass: list[str]
    """Test ids that fail before the fix and must pass after it."""
    pass_to_pass: list[str] = []
    """Test ids that pass before the fix and must still pass after it."""
    reruns: int = Field(default=0, ge=0)
    """Rerun failing FAIL_TO_PASS/PASS_TO_PASS tests up to this many times to detect flakiness."""
    flaky_policy: Literal["fail", "pass", "exclude"] = "fail"
    """How a flaky FAIL_TO_PASS/PASS_TO_PASS test counts for resolution: as failed, as passed, or left out."""
    limits: SandboxLimits = SandboxLimits()
    """Resource limits of the run."""
    dockerfile_dir: str | None = None
    """Host folder with a Dockerfile to build ``image`` from when it is neither present nor pullable."""
    tree_in_image: str | None = None
    """Folder of the image holding the tree already (SWE-bench's `/testbed`): ``tree`` is not copied in (Docker only)."""
    eval_script: str | None = None
    """A script the test command may run (written to ``ctl/eval.sh``; SWE-bench's eval script)."""
    test_changes: TestChanges = "refuse"
    """What to do when the patch changes test infrastructure (conftest.py, pytest settings, plugins): refuse it (``tampered_with_tests``) or revert those files to base before the tests run."""
    test_paths: list[str] = list(DEFAULT_TEST_PATHS)
    """Where the tests live (``name/``: a folder at any depth; ``test_*.py``: file names; with ``/``: whole
    paths): whatever the patch did to files there, they are put back to base before the test patch."""
    log_parser: str | None = None
    """SWE-bench harness log parser (a ``PARSER_REGISTRY`` name) of a SWE-bench case: the harness's verdict is recorded too."""
