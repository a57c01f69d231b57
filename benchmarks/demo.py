"""Benchmark: the demo's first run with the defaults (issue 32: "≤ 15 s on 2 cores"), and where the machine's CPU went.

    python benchmarks/demo.py [--repeat 3] [--smoke] [-- evalkit run options]

Each run copies the repository's evalkit.yaml and cases/ into a fresh folder and times `python -m evalkit run`
there (default options unless some follow `--`; Docker must answer). Beside the wall time, four CPU figures over
the run, in CPU seconds:

- ``machine``: everything the machine spent (/proc/stat: user, nice, system, irq, softirq, steal);
- ``evalkit``: `evalkit run` and its children (the systems under test), from getrusage;
- ``containers``: the sandbox containers' processes (runc's init, the runner, git, the tests), from the Docker
  parent cgroup, which keeps a removed container's time (cgroup v1 cpuacct or v2 cpu.stat with Docker's cgroupfs
  driver; null when there is no such cgroup, e.g. the systemd driver);
- ``docker_and_kernel``: the rest, machine − evalkit − containers: dockerd, containerd, the shims, runc, and the
  kernel's work for them (namespaces, cgroups, overlay mounts), with whatever else ran on the machine.

This benchmark's own CPU (it polls each container's cgroup every 0.1 s, to find the largest container's share) is
taken out of ``machine``.

And two floors on this machine: ``floor_s`` = machine / cores, the wall time of a perfectly packed run; and
``floor_without_evalkit_s`` = (machine − evalkit) / cores, the wall time the run could not beat even if evalkit
itself took no CPU at all. Before each run the machine's own background is measured for a second
(``background_cores``) and the load average is recorded. `--smoke` runs one patch case (seconds). Figures per run
and medians; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from evalkit.config import Config
from evalkit.report.run_notes import BUDGET_RECORD
from evalkit.sandbox.budget import BudgetRecord

REPO = Path(__file__).resolve().parents[1]
SMOKE_SELECT = "patch/round-half-up"
CGROUP_USAGE = (
    (Path("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage"), 1e-9),  # cgroup v1, nanoseconds
    (Path("/sys/fs/cgroup/cpu,cpuacct/docker/cpuacct.usage"), 1e-9),
    (Path("/sys/fs/cgroup/docker/cpu.stat"), 1e-6),  # cgroup v2 with the cgroupfs driver: usage_usec
)


def machine_cpu_s() -> float:
    """CPU seconds the whole machine spent since boot, idle and iowait left out."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def docker_cgroup() -> tuple[Path, float] | None:
    """Docker's parent cgroup usage file and its unit, the first of `CGROUP_USAGE` that reads; None when none does."""
    for path, unit in CGROUP_USAGE:
        if _usage_s(path, unit) is not None:
            return path, unit
    return None


def containers_cpu_s() -> float | None:
    """CPU seconds Docker's containers spent since the daemon made its parent cgroup; None when not found."""
    found = docker_cgroup()
    return None if found is None else _usage_s(*found)


def _usage_s(path: Path, unit: float) -> float | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    if path.name == "cpu.stat":
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) * unit
        return None
    return int(text.strip()) * unit


class ContainerWatch:
    """Polls each container's own cgroup while the run goes (every 0.1 s), keeping the most CPU seen per container:
    how the containers' time splits (a container removed between two polls loses at most 0.1 s of its figure).
    Containers already there when the watch starts are others' and left out of `new`."""

    def __init__(self) -> None:
        self.seen: dict[str, float] = {}
        self._cgroup = docker_cgroup()
        self._before: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> ContainerWatch:
        self._poll_once()
        self._before = set(self.seen)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def new(self) -> list[float]:
        """The CPU seconds of each container that started while watched, largest first."""
        return sorted((v for k, v in self.seen.items() if k not in self._before), reverse=True)

    def _poll_once(self) -> None:
        if self._cgroup is None:
            return
        usage, unit = self._cgroup
        for child in usage.parent.iterdir():
            used = _usage_s(child / usage.name, unit) if child.is_dir() else None
            if used is not None:
                self.seen[child.name] = max(used, self.seen.get(child.name, 0.0))

    def _poll(self) -> None:
        while not self._stop.wait(0.1):
            self._poll_once()
        self._poll_once()


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def background_cores(seconds: float = 1.0) -> float:
    """Cores the machine keeps busy while this benchmark sleeps: other users' work that the figures include."""
    before = machine_cpu_s()
    time.sleep(seconds)
    return (machine_cpu_s() - before) / seconds


def one_run(folder: Path, options: list[str]) -> dict[str, object]:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    shutil.copy(REPO / "evalkit.yaml", folder / "evalkit.yaml")
    shutil.copytree(REPO / "cases", folder / "cases")
    env = {k: v for k, v in os.environ.items() if k != "EVALKIT_CONFIG"}
    load = os.getloadavg()[0]
    idle = background_cores()
    machine0, containers0, evalkit0, own0 = machine_cpu_s(), containers_cpu_s(), children_cpu_s(), own_cpu_s()
    with ContainerWatch() as watch:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "evalkit", "run", *options], cwd=folder, env=env,
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
    each = watch.new()
    machine, evalkit, own = machine_cpu_s() - machine0, children_cpu_s() - evalkit0, own_cpu_s() - own0
    machine -= own  # the watch's polls are this benchmark's, not the run's
    containers1 = containers_cpu_s()
    if proc.returncode != 0:
        sys.exit(f"evalkit run failed (exit status {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    containers = None if containers0 is None or containers1 is None else containers1 - containers0
    cores = os.cpu_count() or 1
    try:  # the container budget's record of the run (evalkit.report.run_notes.budget_notes writes it)
        started: int | None = BudgetRecord.model_validate_json(
            (folder / Config.model_fields["work_dir"].default / BUDGET_RECORD).read_text(encoding="utf-8")).started
    except (OSError, ValueError):
        started = None
    return {"wall_s": round(wall, 2), "machine_cpu_s": round(machine, 2), "evalkit_cpu_s": round(evalkit, 2),
            "containers_cpu_s": None if containers is None else round(containers, 2),
            "docker_and_kernel_cpu_s": None if containers is None else round(machine - evalkit - containers, 2),
            "containers_started": started, "cores": cores,
            "largest_container_cpu_s": round(each[0], 2) if each else None,
            "other_containers_cpu_s": round(sum(each[1:]), 2) if each else None,
            "floor_s": round(machine / cores, 2), "floor_without_evalkit_s": round((machine - evalkit) / cores, 2),
            "background_cores": round(idle, 3), "load_before": round(load, 2)}


def median_of(rows: list[dict[str, object]], key: str) -> float | int | None:
    values = [v for r in rows if isinstance(v := r[key], (int, float))]
    if not values:
        return None
    if all(isinstance(v, int) for v in values):  # a count: the median run's count
        return int(statistics.median_low(values))
    return round(statistics.median(float(v) for v in values), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="first runs, each in a fresh folder")
    ap.add_argument("--smoke", action="store_true", help=f"one run of one patch case (--select {SMOKE_SELECT})")
    ap.add_argument("options", nargs="*", help="evalkit run options (after --)")
    args = ap.parse_args()
    options = list(args.options)
    if args.smoke:
        args.repeat, options = 1, [*options, "--select", SMOKE_SELECT]
    root = Path(tempfile.mkdtemp(prefix="evalkit-demo-bench-"))
    rows = []
    try:
        for i in range(args.repeat):
            row = one_run(root / f"run-{i}", options)
            rows.append(row)
            print(", ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    keys = [k for k in rows[0] if k not in ("cores",)]
    print(json.dumps({"runs": len(rows), "options": options, "cores": rows[0]["cores"],
                      **{k: median_of(rows, k) for k in keys}, "each": rows}))


if __name__ == "__main__":
    main()
