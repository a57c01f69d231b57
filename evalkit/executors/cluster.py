"""The ``cluster`` executor: generate, execute, grade and validate calls on the workers of a Dask distributed cluster.

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
--resources containers=N``) each execute or validate call holds one unit of it: a worker never runs
more than N such calls (hence containers) at once.
"""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import CancelledError
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.executors.blobs import BlobStore
from evalkit.executors.cache_service import CacheService, ServiceRef, ServiceUnreachable
from evalkit.executors.call import CallResult, StageCall, publish, run_call
from evalkit.executors.cluster_record import ENV, RECORD, ClusterRun, WorkerStats
from evalkit.counters import EXTRA_LINES
from evalkit import store, tempdirs
from evalkit.errors import InputError, Problem
from evalkit.executors import ExecutorFailure, blob_store
from evalkit.executors.call import dispatch, materialized
from evalkit.fsutil import atomic_write_json, confine_writes
from evalkit.stages.handed_trees import HANDED
from urllib.parse import urlsplit
import pickle
import socket

if TYPE_CHECKING:
    from evalkit.config import Config

REMOTE_STAGES = frozenset({"generate", "execute", "grade", "validate", "health"})
"""Stages whose calls go to the workers (score runs on the coordinator)."""
SAVE_EVERY_S = 1.0
"""The run's record (``cluster-run.json``) is saved at most this often while calls are in flight, and whenever
none is: saving it after every call cost ~1 ms of the coordinator's time each, under the executor's lock."""
CONTAINER_STAGES = frozenset({"execute", "validate", "health"})
"""Stages whose calls run containers (each holds one ``containers`` unit of its worker when workers declare them)."""


@dataclass
class _Outcome:
    """What the worker function returns: the artifact, or the stage's exception (an evalkit bug)."""

    worker: str
    artifact: CallResult | None = None
    error: BaseException | None = None
    trace: str = ""
    seconds: float = 0.0
    fetch_seconds: float = 0.0
    fetched: int = 0


SWEEP_EVERY_S = 60.0
"""A worker sweeps its host before its first call, then before a call at most this often (`_sweep_host`)."""
_last_sweep: float | None = None  # monotonic time of this process's last sweep
_sweep_lock = threading.Lock()


def _sweep_host() -> None:
    """Before a worker's first call, then at most every `SWEEP_EVERY_S`: what a killed process left on this host (a
    worker killed mid-call leaves its command system running, in a session of its own) is killed and its folders
    removed, as a run does on its own host (evalkit.tempdirs.sweep). A run's sweep reaches only the coordinator's
    host, and a long-lived worker outlives the other workers of its host that are killed."""
    global _last_sweep
    with _sweep_lock:
        if _last_sweep is not None and time.monotonic() - _last_sweep < SWEEP_EVERY_S:
            return
        tempdirs.sweep(killed=lambda stray: print(
            tempdirs.killed_line(stray, "a killed evalkit process (a worker or a run on this host)"),
            file=sys.stderr, flush=True))
        _last_sweep = time.monotonic()


def _worker_folder() -> Path:
    from distributed import get_worker  # deferred: dask.distributed (heavy), only with --cluster

    worker = get_worker()
    folder = Path(worker.local_directory).parent / "evalkit"  # outlives a worker restart in the same dir
    folder.mkdir(parents=True, exist_ok=True)

    confine_writes(folder)  # this worker's blobs and scratch: the only folder a call writes here
    return folder


def run_on_worker(call: StageCall, service: ServiceRef) -> _Outcome:
    """On a Dask worker: fetch the blobs this worker lacks, materialize the call below this worker's scratch
    folder, run it with the caches and budget of the coordinator, and name this worker in the artifact."""
    from distributed import get_worker  # deferred: dask.distributed (heavy), only with --cluster

    address = get_worker().address
    _sweep_host()
    folder = _worker_folder()
    blobs = BlobStore(folder / "blobs")
    started = time.monotonic()
    fetched = service.fetch_missing(blobs, (ref for _, ref in call.host_files()))
    fetch_seconds = time.monotonic() - started
    view = materialized(call, blobs, folder / "scratch")  # MissingBlob here: shipping failed, Dask retries
    began = time.monotonic()
    with store.remote(service, view.cfg.work_path):
        try:
            artifact = _run_view(call, view)
        except ServiceUnreachable:  # the coordinator's side, not the stage: Dask retries, then infra_error
            raise
        except Exception as exc:  # the stage's own exception: brought back, recorded as a bug by the coordinator
            return _Outcome(address, error=exc, trace=traceback.format_exc(), seconds=time.monotonic() - began,
                            fetch_seconds=fetch_seconds, fetched=fetched)
    provenance = getattr(artifact, "provenance", None)  # a validation has none
    if provenance is not None:
        artifact = artifact.model_copy(update={"provenance": provenance.model_copy(update={"worker": address})})
    return _Outcome(address, artifact=artifact, seconds=time.monotonic() - began, fetch_seconds=fetch_seconds,
                    fetched=fetched)


def _run_view(call: StageCall, view: Any) -> CallResult:
    token = HANDED.set(view.trees)
    try:
        return dispatch(call.stage, view, call.inputs)
    finally:
        HANDED.reset(token)


class ClusterExecutor:
    """Submits generate/execute/grade calls to a Dask scheduler; runs score calls here."""

    name = "cluster"

    def __init__(self, cfg: Config, address: str, *, cache_host: str | None = None) -> None:
        from distributed import Client  # deferred: dask.distributed (heavy), only with --cluster

        self.address = address
        try:
            self.client = Client(address, timeout="20s", set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ExecutorFailure(f"no Dask scheduler at {address}: {exc}") from None
        self.blobs: BlobStore = blob_store(cfg)
        host = cache_host or _reachable_ip(address)
        self.service = CacheService(cfg.work_path, self.blobs, host)
        self.record = ClusterRun(scheduler=address)
        self.record_path = cfg.work_path / RECORD
        self._lock = threading.Lock()
        self._containers = self._has_container_resource()
        self._placed: dict[str, int] = {}
        self._placed_at = 0.0
        self._saved_at = 0.0
        EXTRA_LINES.append(self.progress_line)

    def _has_container_resource(self) -> bool:
        info = self.client.scheduler_info()
        return any("containers" in (w.get("resources") or {}) for w in info.get("workers", {}).values())

    def run(self, call: StageCall) -> CallResult:
        if call.stage not in REMOTE_STAGES:
            return run_call(call)

        from distributed import KilledWorker  # deferred: dask.distributed (heavy), only with --cluster

        publish(call, self.blobs)
        size = len(pickle.dumps(call, protocol=pickle.HIGHEST_PROTOCOL))
        resources = {"containers": 1} if call.stage in CONTAINER_STAGES and self._containers else None
        with self._lock:
            self.record.first_submitted = self.record.first_submitted or time.time()
            self.record.queued += 1
            ship = self.record.shipping
            ship.submitted += 1
            ship.pickled_bytes += size
            ship.pickled_bytes_max = max(ship.pickled_bytes_max, size)
        started = time.monotonic()
        try:
            future = self.client.submit(run_on_worker, call, self.service.ref, pure=False, retries=1,
                                        resources=resources, key=f"{call.stage}-{getattr(call.system, 'name', '')}-{call.case.key}-"
                                                                 f"{os.urandom(4).hex()}")
            outcome: _Outcome = future.result()
        except KilledWorker as exc:
            raise ExecutorFailure(f"the {call.stage} call was lost with its workers ({exc}); retried next run") from None
        except (OSError, TimeoutError, CancelledError) as exc:  # the scheduler lost, the connection closed
            raise ExecutorFailure(f"the cluster at {self.address} failed: {type(exc).__name__}: {exc}") from None
        finally:
            with self._lock:
                self.record.queued -= 1
        with self._lock:
            stats = self.record.workers.setdefault(outcome.worker, WorkerStats())
            stats.calls += 1
            stats.seconds += outcome.seconds
            ship = self.record.shipping
            ship.calls += 1
            ship.round_trip_s += time.monotonic() - started
            ship.stage_s += outcome.seconds
            ship.fetch_s += outcome.fetch_seconds
            ship.blobs_fetched += outcome.fetched
            self.record.last_back = time.time()
            now = time.monotonic()
            if self.record.queued == 0 or now - self._saved_at >= SAVE_EVERY_S:  # the last call back always saves
                self._saved_at = now
                self._save()
        if outcome.error is not None:
            raise outcome.error
        assert outcome.artifact is not None
        return outcome.artifact

    def progress_line(self) -> str:
        """The live display's line: calls queued at the scheduler, and per worker calls placed there and done."""
        now = time.monotonic()
        if now - self._placed_at > 1.0:  # one scheduler query a second at most
            self._placed_at = now
            try:
                processing: dict[str, Any] = self.client.processing()  # type: ignore[assignment]
                self._placed = {w: len(keys) for w, keys in processing.items()}
            except (OSError, TimeoutError):
                pass
        with self._lock:
            done = {w: s.calls for w, s in self.record.workers.items()}
            queued = max(0, self.record.queued - sum(self._placed.values()))
        workers = sorted(set(done) | set(self._placed))
        each = " · ".join(f"{w.rsplit('/', 1)[-1]} {self._placed.get(w, 0)} running {done.get(w, 0)} done" for w in workers)
        return f"cluster {self.address}: {queued} queued" + (f" · {each}" if each else "")

    def _save(self) -> None:
        atomic_write_json(self.record_path, self.record)

    def close(self) -> None:
        self.client.close()
        self.service.close()


def _reachable_ip(address: str) -> str:
    """This host's address on the route to the scheduler (where workers can reach the cache service)."""

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
        raise InputError(Problem("executor: cluster", None, "no scheduler address; expected "
                                 "executor: {cluster: {address: tcp://HOST:PORT}}, --cluster or $EVALKIT_CLUSTER"))
    return address


def cluster(cfg: Config, settings: dict[str, Any] | None = None) -> ClusterExecutor:
    """Factory registered as ``evalkit.executors: cluster`` (settings: ``address``, optional ``cache_host``:
    the coordinator's address as the workers reach it, default its address on the route to the scheduler)."""
    settings = settings or {}
    address = cluster_address(settings)
    if address in _unreachable:  # asked again by every call of the run: said once, not waited for each time

        raise ExecutorFailure(_unreachable[address])
    try:
        return ClusterExecutor(cfg, address, cache_host=settings.get("cache_host"))
    except Exception as exc:
        _unreachable[address] = str(exc)
        raise


_unreachable: dict[str, str] = {}
"""Scheduler address -> why this process could not connect to it."""
