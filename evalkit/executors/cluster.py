"""The ``cluster`` executor: generate, execute and grade calls on the workers of a Dask distributed cluster.

Selected by ``evalkit run --cluster tcp://HOST:PORT``, ``$EVALKIT_CLUSTER`` or ``executor: {cluster:
{address: ...}}`` in evalkit.yaml. doit stays the graph and the up-to-date check on the coordinator
(this process); each generate/execute/grade call is submitted to the scheduler and its artifact comes
back to be written here, as with the local executor. Score calls (cheap, no container, no model)
run here.

**Shipping by content.** A call carries files as digests only (evalkit.executors.call). The
coordinator keeps their bytes in its blob folder (``<work>/cache/blobs``) and serves them from a
small HTTP service (`evalkit.executors.cache_service`); a worker keeps every blob it fetched in its
own folder (``<dask local dir>/evalkit/blobs``) and fetches only the ones it lacks: a blob crosses
the network once per worker. A worker always materializes the call below its own scratch folder,
even when the coordinator's paths happen to exist on its host (one machine in the tests).

**Caches authoritative on the coordinator.** While a call runs on a worker, every ``ContentStore``
entry below its work folder (model responses, container runs, system answers) is read from and
written to the coordinator's ``<work>/cache`` through the same service (`evalkit.store.remote`),
and the judge's budget is checked and charged there: a cached container run or model answer is
never redone on a worker, and what a worker makes is in the coordinator's cache when the call ends.

**Faults.** A worker lost mid-call is the scheduler's to handle: it reruns the call on another
worker; a call whose workers died ``distributed.scheduler.allowed-failures + 1`` times (start the
scheduler with 1: the call fails on two workers) is `ExecutorFailure` -> ``infra_error``, retried
next run. An exception of the stage itself is brought back and re-raised here, recorded as an
evalkit ``bug`` like in-process (never retried by Dask). Shipping errors are retried once by Dask.

**Limits.** When the cluster's workers declare a ``containers`` resource (``dask worker
--resources containers=N``) each execute call holds one unit of it: a worker never runs more than N
execute calls (hence containers) at once.
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.artifacts import ArtifactBase
from evalkit.executors.blobs import BlobStore
from evalkit.executors.cache_service import CacheService, ServiceRef
from evalkit.executors.call import StageCall, publish, run_call

REMOTE_STAGES = frozenset({"generate", "execute", "grade"})
"""Stages whose calls go to the workers (score runs on the coordinator)."""
ENV = "EVALKIT_CLUSTER"
"""Environment variable naming the scheduler's address (also set by ``evalkit run --cluster``)."""
_PUBLISH_LOCK = threading.Lock()


@dataclass
class WorkerStats:
    """What one worker did for this run (the coordinator's count)."""

    calls: int = 0
    """Calls whose artifact came back from it."""
    seconds: float = 0.0
    """Wall time it spent running them (on the worker)."""
    running: int = 0
    """Calls it runs now (as far as the coordinator knows)."""


@dataclass
class ShippingStats:
    """The shipping overhead of the calls of this run (benchmarks/cluster.py reads it)."""

    calls: int = 0
    """Calls submitted."""
    round_trip: float = 0.0
    """Seconds from submission to the artifact back, summed."""
    on_worker: float = 0.0
    """Seconds the workers spent in the stage itself, summed."""
    fetch: float = 0.0
    """Seconds the workers spent fetching blobs, summed (included in round_trip - on_worker)."""
    blobs_fetched: int = 0
    """Blobs fetched by workers (each at most once per worker)."""
    pickled_bytes: list[int] = field(default_factory=list)
    """Size of each pickled call."""


@dataclass
class _Outcome:
    """What the worker function returns: the artifact, or the stage's exception (an evalkit bug)."""

    worker: str
    artifact: ArtifactBase | None = None
    error: BaseException | None = None
    trace: str = ""
    seconds: float = 0.0
    fetch_seconds: float = 0.0
    fetched: int = 0


class StageBug(RuntimeError):
    """A stage raised on a worker and the exception could not be brought back as it was."""


def _worker_folder() -> Path:
    from distributed import get_worker

    worker = get_worker()
    folder = Path(worker.local_directory).parent / "evalkit"  # outlives a worker restart in the same dir
    folder.mkdir(parents=True, exist_ok=True)
    from evalkit.fsutil import confine_writes

    confine_writes(folder)  # this worker's blobs and scratch: the only folder a call writes here
    return folder


def run_on_worker(call: StageCall, service: ServiceRef) -> _Outcome:
    """On a Dask worker: fetch the blobs this worker lacks, materialize the call below this worker's scratch
    folder, run it with the caches and budget of the coordinator, and name this worker in the artifact."""
    from distributed import get_worker

    from evalkit import store
    from evalkit.executors.call import _materialized

    address = get_worker().address
    folder = _worker_folder()
    blobs = BlobStore(folder / "blobs")
    started = time.monotonic()
    fetched = service.fetch_missing(blobs, (ref for _, ref in call.host_files()))
    fetch_seconds = time.monotonic() - started
    view = _materialized(call, blobs, folder / "scratch")  # MissingBlob here: shipping failed, Dask retries
    began = time.monotonic()
    with store.remote(service, view.cfg.work_path):
        try:
            artifact = _run_view(call, view)
        except Exception as exc:  # the stage's own exception: brought back, recorded as a bug by the coordinator
            return _Outcome(address, error=exc, trace=traceback.format_exc(), seconds=time.monotonic() - began,
                            fetch_seconds=fetch_seconds, fetched=fetched)
    if artifact.provenance is not None:
        artifact = artifact.model_copy(update={"provenance": artifact.provenance.model_copy(update={"worker": address})})
    return _Outcome(address, artifact=artifact, seconds=time.monotonic() - began, fetch_seconds=fetch_seconds,
                    fetched=fetched)


def _run_view(call: StageCall, view: Any) -> ArtifactBase:
    from evalkit.executors.call import _dispatch, _handed

    token = _handed.set(view.trees)
    try:
        return _dispatch(call.stage, view, call.inputs)
    finally:
        _handed.reset(token)


class ClusterExecutor:
    """Submits generate/execute/grade calls to a Dask scheduler; runs score calls here."""

    name = "cluster"

    def __init__(self, cfg: Any, address: str, *, cache_host: str | None = None) -> None:
        from distributed import Client

        from evalkit.executors import ExecutorFailure, blob_store

        self.address = address
        try:
            self.client = Client(address, timeout="20s", set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ExecutorFailure(f"no Dask scheduler at {address}: {exc}") from None
        self.blobs: BlobStore = blob_store(cfg)
        host = cache_host or _reachable_ip(address)
        self.service = CacheService(cfg.work_path, self.blobs, host)
        self.workers: dict[str, WorkerStats] = {}
        self.shipping = ShippingStats()
        self.queued = 0
        self._lock = threading.Lock()
        self._containers = self._has_container_resource()

    def _has_container_resource(self) -> bool:
        info = self.client.scheduler_info()
        return any("containers" in (w.get("resources") or {}) for w in info.get("workers", {}).values())

    def run(self, call: StageCall) -> ArtifactBase:
        if call.stage not in REMOTE_STAGES:
            return run_call(call)
        import pickle

        from distributed import KilledWorker

        from evalkit.executors import ExecutorFailure

        with _PUBLISH_LOCK:  # BlobStore.put_file's temporary name is per process: one thread at a time
            publish(call, self.blobs)
        size = len(pickle.dumps(call, protocol=pickle.HIGHEST_PROTOCOL))
        resources = {"containers": 1} if call.stage == "execute" and self._containers else None
        with self._lock:
            self.queued += 1
            self.shipping.calls += 1
            self.shipping.pickled_bytes.append(size)
        started = time.monotonic()
        try:
            future = self.client.submit(run_on_worker, call, self.service.ref, pure=False, retries=1,
                                        resources=resources, key=f"{call.stage}-{call.system.name}-{call.case.key}-"
                                                                 f"{os.urandom(4).hex()}")
            outcome: _Outcome = future.result()
        except KilledWorker as exc:
            raise ExecutorFailure(f"the {call.stage} call was lost with its workers ({exc}); retried next run") from None
        except (OSError, TimeoutError) as exc:
            raise ExecutorFailure(f"the cluster at {self.address} failed: {type(exc).__name__}: {exc}") from None
        finally:
            with self._lock:
                self.queued -= 1
        with self._lock:
            stats = self.workers.setdefault(outcome.worker, WorkerStats())
            stats.calls += 1
            stats.seconds += outcome.seconds
            self.shipping.round_trip += time.monotonic() - started
            self.shipping.on_worker += outcome.seconds
            self.shipping.fetch += outcome.fetch_seconds
            self.shipping.blobs_fetched += outcome.fetched
        if outcome.error is not None:
            raise outcome.error
        assert outcome.artifact is not None
        return outcome.artifact

    def close(self) -> None:
        self.client.close()
        self.service.close()


def _reachable_ip(address: str) -> str:
    """This host's address on the route to the scheduler (where workers can reach the cache service)."""
    import socket
    from urllib.parse import urlsplit

    host = urlsplit(address if "://" in address else f"tcp://{address}").hostname or "127.0.0.1"
    if host in ("127.0.0.1", "localhost", "::1"):
        return "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((host, 9))
        return s.getsockname()[0]


def cluster_address(settings: dict[str, Any]) -> str:
    """The scheduler's address: $EVALKIT_CLUSTER (or --cluster) first, else the config's setting."""
    address = os.environ.get(ENV) or settings.get("address") or settings.get("value")
    if not address or not isinstance(address, str):
        from evalkit.errors import InputError, Problem

        raise InputError(Problem("executor: cluster", None, "no scheduler address; expected "
                                 "executor: {cluster: {address: tcp://HOST:PORT}}, --cluster or $EVALKIT_CLUSTER"))
    return address


def cluster(cfg: Any, settings: dict[str, Any] | None = None) -> ClusterExecutor:
    """Factory registered as ``evalkit.executors: cluster`` (settings: ``address``, optional ``cache_host``:
    the coordinator's address as the workers reach it, default its address on the route to the scheduler)."""
    settings = settings or {}
    return ClusterExecutor(cfg, cluster_address(settings), cache_host=settings.get("cache_host"))
