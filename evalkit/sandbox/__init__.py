"""Sandboxed execution of tests against a patched source tree (Docker, or local fallback).

Public API::

    run_tests(spec, backend="auto") -> ExecutionResult
    run_tests_cached(spec, store, backend="auto") -> ExecutionResult
    docker_available() -> bool
    ensure_image(name, dockerfile_dir=None) -> image id

See ``spec`` for TestRunSpec / ExecutionResult, ``script`` for the in-sandbox runner,
``outcome`` for the trust rules, ``grading`` for resolution and flakiness.
"""

from evalkit.sandbox.cache import run_tests_cached
from evalkit.sandbox.dockerclient import docker_available
from evalkit.sandbox.images import ImageUnavailable, ensure_image
from evalkit.sandbox.runner import run_tests
from evalkit.sandbox.spec import ExecutionResult, SandboxLimits, TestRunSpec, TestStatus

__all__ = [
    "ExecutionResult",
    "ImageUnavailable",
    "SandboxLimits",
    "TestRunSpec",
    "TestStatus",
    "docker_available",
    "ensure_image",
    "run_tests",
    "run_tests_cached",
]
