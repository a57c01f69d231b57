"""A real Dask cluster on 127.0.0.1 for tests and benchmarks: `dask scheduler` and `dask worker` processes.

Workers run without a nanny (``--no-nanny``), so a worker's process id is the process the test
started and SIGKILL loses it at once; they import evalkit from this checkout (PYTHONPATH).
The scheduler allows one failure per task (``allowed-failures: 1``): a call lost with two workers
is the executor's infrastructure error.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


class LocalCluster:
    """A scheduler and ``workers`` workers of ``threads`` threads, each declaring ``containers`` resource units."""

    def __init__(self, folder: Path, workers: int = 2, containers: int = 1, env: dict[str, str] | None = None,
                 threads: int = 1) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "PYTHONPATH": str(REPO), "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1",
                    **(env or {})}
        self.containers = containers
        self.threads = threads
        self.procs: list[subprocess.Popen[bytes]] = []
        scheduler_file = folder / "scheduler.json"
        self._start([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                     "--no-dashboard", "--scheduler-file", str(scheduler_file)], "scheduler")
        deadline = time.monotonic() + 60
        while not scheduler_file.is_file() or not scheduler_file.read_text().strip():
            if time.monotonic() > deadline or self.procs[0].poll() is not None:
                self.close()
                raise RuntimeError(f"dask scheduler did not start: {(folder / 'scheduler.log').read_text()}")
            time.sleep(0.1)
        self.address: str = json.loads(scheduler_file.read_text())["address"]
        self.workers: list[subprocess.Popen[bytes]] = []
        for i in range(workers):
            self.add_worker(f"w{i}")
        self.wait_for(workers)

    def _start(self, argv: list[str], name: str) -> subprocess.Popen[bytes]:
        log = open(self.folder / f"{name}.log", "wb")
        proc = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=self.folder)
        log.close()
        self.procs.append(proc)
        return proc

    def add_worker(self, name: str) -> subprocess.Popen[bytes]:
        proc = self._start([sys.executable, "-m", "dask", "worker", self.address, "--nworkers", "1", "--nthreads", str(self.threads),
                            "--no-nanny", "--no-dashboard", "--host", "127.0.0.1", "--resources",
                            f"containers={self.containers}", "--local-directory", str(self.folder / name)], name)
        self.workers.append(proc)
        return proc

    def client(self) -> Any:
        from distributed import Client

        return Client(self.address, timeout="30s", set_as_default=False)

    def wait_for(self, n: int) -> None:
        with self.client() as c:
            c.wait_for_workers(n, timeout=90)

    def worker_pids(self) -> dict[str, int]:
        """Worker address -> process id (as the scheduler knows them)."""
        with self.client() as c:
            return dict(c.run(os.getpid))

    def kill(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
