"""Stage executors: where a stage call runs.

An executor is any object with ``run(call: StageCall) -> CallResult`` (`Executor`: the artifact; a validate or health call's own model), registered
under a name in the entry-point group ``evalkit.executors`` (evalkit's own ``local`` too), and
chosen by ``executor:`` in evalkit.yaml (default ``local``: in this process). The registered
object is a factory: called with the project's `Config` and the executor's settings (the mapping
given as ``executor: {NAME: {...}}``, empty for ``executor: NAME``), it returns the executor.

The coordinator (the doit action) builds the call, hands it to the executor and writes the
returned artifact atomically. An executor raises `ExecutorFailure` for its own infrastructure
(a worker lost, a file it cannot fetch): recorded as ``infra_error``, retried next run; any other
exception comes from the stage and is recorded as an evalkit ``bug``.
"""

from __future__ import annotations

import threading
from typing import cast

from evalkit.config import Config
from evalkit.contracts import Executor, ExecutorFactory
from evalkit.executors.blobs import BlobStore, FileRef, MissingBlob
from evalkit.executors.call import StageCall, build_call, publish, run_call
from evalkit.plugins import registry


class ExecutorFailure(RuntimeError):
    """The executor itself failed to run a call (not the stage): an infrastructure error, retried next run."""


_cache: dict[tuple[str, str, str], Executor] = {}
_cache_lock = threading.Lock()


def executor_for(cfg: Config) -> Executor:
    """The executor ``cfg.executor`` names (one per process and project), built by its registered factory."""
    name, settings = cfg.executor_name, cfg.executor_settings
    key = (cfg.path, name, repr(sorted(settings.items())))
    found = _cache.get(key)  # every stage call asks: no lock once it is made
    if found is not None:
        return found
    with _cache_lock:  # doit's threads ask at once on the first calls: one executor (one cluster client) each
        if key not in _cache:
            factory = cast(ExecutorFactory, registry("executors").get(name))  # the group's contract
            _cache[key] = factory(cfg, settings)
        return _cache[key]


def blob_store(cfg: Config) -> BlobStore:
    """The coordinator's blob source: ``<work>/cache/blobs``."""
    return BlobStore(cfg.work_path / "cache" / "blobs")


__all__ = ["BlobStore", "Executor", "ExecutorFailure", "FileRef", "MissingBlob", "StageCall", "blob_store",
           "build_call", "executor_for", "publish", "run_call"]
