"""Sandboxed execution of tests against a patched source tree (Docker, or local fallback).

Public API::

    run_tests(spec, backend="auto") -> ExecutionResult
    run_tests_cached(spec, store, backend="auto") -> ExecutionResult
    docker_available() -> bool
    ensure_image(name, dockerfile_dir=None) -> image id

See ``spec`` for TestRunSpec / ExecutionResult, ``script`` for the in-sandbox runner,
``outcome`` for the trust rules, ``grading`` for resolution and flakiness.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalkit.sandbox.cache import run_tests_cached
    from evalkit.sandbox.dockerclient import docker_available
    from evalkit.sandbox.images import ImageUnavailable, ensure_image
    from evalkit.sandbox.runner import run_tests
    from evalkit.sandbox.spec import ExecutionResult, SandboxLimits, TestRunSpec, TestStatus

_WHERE = {"run_tests_cached": "cache", "docker_available": "dockerclient", "ImageUnavailable": "images",
          "ensure_image": "images", "run_tests": "runner", "ExecutionResult": "spec", "SandboxLimits": "spec",
          "TestRunSpec": "spec", "TestStatus": "spec"}


def __getattr__(name: str) -> Any:
    """The public names, imported on first use: importing a submodule (``backends``, ``worktree``) does not
    import docker-py."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)


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
