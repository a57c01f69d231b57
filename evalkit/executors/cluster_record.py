"""What a cluster run leaves below the work folder (``cluster-run.json``), apart from the executor itself:
the report reads it on every run, and a local run should not import Dask's side of evalkit to learn it is
not there."""

from __future__ import annotations

from evalkit.models import Model

__all__ = ["ENV", "RECORD", "ClusterRun", "ShippingStats", "WorkerStats"]

RECORD = "cluster-run.json"
"""The cluster run's record below the work folder (`ClusterRun`)."""
ENV = "EVALKIT_CLUSTER"
"""Environment variable naming the scheduler's address (also set by ``evalkit run --cluster``)."""


class WorkerStats(Model):
    """What one worker did for this run (the coordinator's count)."""

    calls: int = 0
    """Calls whose artifact came back from it."""
    seconds: float = 0.0
    """Wall time it spent in the stages of those calls."""
    running: int = 0
    """Calls submitted and not back yet that the scheduler placed on it (as last seen)."""


class ShippingStats(Model):
    """The shipping overhead of the calls of this run (benchmarks/cluster.py reads it)."""

    calls: int = 0
    """Calls whose artifact came back."""
    round_trip_s: float = 0.0
    """Seconds from submission to the artifact back, summed (queueing included when calls wait for a worker)."""
    stage_s: float = 0.0
    """Seconds the workers spent in the stages themselves, summed."""
    fetch_s: float = 0.0
    """Seconds the workers spent fetching blobs from the coordinator, summed."""
    blobs_fetched: int = 0
    """Blobs fetched by workers (each at most once per worker)."""
    submitted: int = 0
    """Calls submitted (pickled) in this run."""
    pickled_bytes: int = 0
    """Size of the pickled calls submitted, summed (mean: ``pickled_bytes / submitted``; a list of every size made
    each save of the record cost time in the number of calls so far)."""
    pickled_bytes_max: int = 0
    """Size of the largest pickled call."""


class ClusterRun(Model):
    """``<work>/cluster-run.json``: the last cluster run of this project, per worker and in total."""

    scheduler: str
    """The scheduler's address."""
    workers: dict[str, WorkerStats] = {}
    """Worker address -> what it did."""
    shipping: ShippingStats = ShippingStats()
    """Calls, round trips and blobs of the run."""
    queued: int = 0
    """Calls submitted and not back yet."""
    first_submitted: float = 0.0
    """When the run's first call was submitted (epoch seconds, the coordinator's clock)."""
    last_back: float = 0.0
    """When the run's last artifact came back (epoch seconds, the coordinator's clock)."""
