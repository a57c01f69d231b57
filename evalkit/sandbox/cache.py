"""Content-addressed test runs: same spec, same tree contents, same image -> stored result."""

from __future__ import annotations

import logging
from typing import Any

from evalkit.sandbox.archive import tree_digest
from evalkit.sandbox.backends import backend as sandbox_backend
from evalkit.sandbox.image_errors import ImageUnavailable
from evalkit.sandbox.phase import SandboxError
from evalkit.sandbox.runner import Backend, resolve_backend, run_tests
from evalkit.sandbox.spec import ExecutionResult, TestRunSpec
from evalkit.store import ContentStore

log = logging.getLogger(__name__)

#: Outcomes that are final for given inputs. infra_error is the harness's failure: run again next
#: time. A timeout is stored like any run, keyed the same way (its limit, timeout_s, is in the key):
#: a hanging environment costs its timeout once, not once per system and run.
CACHEABLE = frozenset({"completed", "patch_failed", "tampered_with_tests", "case_error", "oom", "timeout"})
KEY_VERSION = 1


def cache_inputs(spec: TestRunSpec, isolation: str, image: str | None) -> dict[str, Any]:
    """Everything the result depends on: the spec without host paths, the tree's contents, the image id;
    ``isolation`` is the backend's name (docker, local, or an outside package's). A backend to which trust makes
    no difference keys a trusted patch as an untrusted one: validation's run of the gold patch and the gold
    system's are one run."""
    # an outside backend written to the contracts.SandboxBackend Protocol may not have the attribute: trust matters
    if spec.patch_trusted and not getattr(sandbox_backend(isolation), "trust_matters", True):
        spec = spec.model_copy(update={"patch_trusted": False})
    return {
        "version": KEY_VERSION,
        "spec": spec.model_dump(mode="json", exclude={"tree", "dockerfile_dir"}),
        "tree": None if spec.tree_in_image else tree_digest(spec.tree),  # else the image id names the tree
        "isolation": isolation,
        "image": image,
    }


def run_tests_cached(spec: TestRunSpec, store: ContentStore, backend: Backend = "auto") -> ExecutionResult:
    """run_tests, answered from ``store`` when the same inputs ran before (infra errors are not stored)."""
    chosen = resolve_backend(backend)
    part = sandbox_backend(chosen)
    image = None
    if part.uses_images:
        try:
            image = part.image_id(spec)
        except SandboxError:
            return run_tests(spec, chosen)  # daemon trouble: run_tests reports it as infra_error, uncached
        if image is None:  # not present yet: run_tests pulls or builds it, then the key is known
            result = run_tests(spec, chosen)
            if result.image_digest and result.status in CACHEABLE:
                store.put(store.key(cache_inputs(spec, chosen, result.image_digest)), result.model_dump(mode="json"))
            return result
    key = store.key(cache_inputs(spec, chosen, image))
    with store.claim(key):  # the same run wanted by two tasks at once (two systems' equal patches) runs once
        hit = store.get(key)
        if hit is not None:
            try:
                return ExecutionResult.model_validate(hit)
            except ValueError:
                log.info("stale sandbox cache entry %s (older schema): running again", key)
        result = run_tests(spec, chosen)
        if result.status in CACHEABLE:
            store.put(key, result.model_dump(mode="json"))
        return result


__all__ = ["CACHEABLE", "ImageUnavailable", "cache_inputs", "run_tests_cached"]
