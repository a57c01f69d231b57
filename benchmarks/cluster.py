"""Benchmark: the demo's patch suite on a Dask cluster of one worker, then two, on this machine.

    python benchmarks/cluster.py [--copies 3] [--smoke]

The patch suite is copied ``--copies`` times (each copy a distinct test command, so no container
run is a cache hit of another copy): 7 cases x copies x 2 systems that patch (patch-bot, gold)
container runs, each in Docker. Each configuration starts from an empty work folder and a fresh
cluster (tests/cluster_procs.py: `dask scheduler` and `dask worker --nthreads 1 --resources
containers=1` processes on 127.0.0.1) and runs ``evalkit run --cluster``.

- speed-up: wall time of the run on one worker / on two (``speedup``), and of its stage calls alone,
  from the first submitted to the last back (``speedup_calls_span``: without the coordinator's own
  work: planning, score, summarize, render); the cases' reference validation (containers on the
  coordinator, not stage calls) runs first, untimed, in both;
- shipping overhead per call: from a third run on one worker with one call in flight (``-n 1``, so no
  call waits in a queue): (round trip - time in the stage) per call, from the executor's record
  (``<work>/cluster-run.json``): publishing and pickling the call, the scheduler, fetching blobs the
  worker lacks, materializing the call, and the artifact back;
- pickled call sizes (mean, max).

Last line: one JSON object. Targets (issue 15): speed-up >= 1.6, overhead <= 50 ms per call.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

SYSTEMS = """release: bench
systems:
  - {name: patch-bot, adapter: command, command: ["{python}", "-m", "evalkit.demo_systems.patch_bot"]}
  - {name: gold, adapter: gold}
sandbox: {backend: docker}
"""


def make_project(root: Path, copies: int, limit: int | None = None) -> int:
    """The patch suite ``copies`` times over (its first ``limit`` cases only, if given); returns the number
    of cases."""
    src = REPO / "cases" / "patch"
    dest = root / "cases" / "patch"
    dest.mkdir(parents=True)
    shutil.copy(src / "suite.yaml", dest / "suite.yaml")
    shutil.copytree(src / "_src", dest / "_src")
    command = "python3 -m pytest -rA -p no:cacheprovider tests"
    n = 0
    for case in sorted(p for p in src.iterdir() if p.is_dir() and not p.name.startswith("_"))[:limit]:
        for k in range(copies):
            copy = dest / f"{case.name}-c{k}"
            shutil.copytree(case, copy)
            text = (copy / "case.yaml").read_text(encoding="utf-8").replace(f"id: {case.name}", f"id: {copy.name}", 1)
            text = text.replace("inputs:\n", f"inputs:\n  test_command: {command} -k 'not zz_copy{k}'\n", 1)
            (copy / "case.yaml").write_text(text, encoding="utf-8")
            n += 1
    (root / "evalkit.yaml").write_text(SYSTEMS, encoding="utf-8")
    return n


def run(root: Path, workers: int, jobs: int | None) -> tuple[float, dict]:
    from cluster_procs import LocalCluster

    with LocalCluster(root / "cluster", workers=workers) as cluster:
        env = {**os.environ, "PYTHONPATH": str(REPO), "EVALKIT_CONFIG": str(root / "evalkit.yaml")}
        argv = [sys.executable, "-m", "evalkit", "run", "-q", "--cluster", cluster.address]
        argv += ["-n", str(jobs)] if jobs else []
        # the cases' reference validation runs on the coordinator (not a stage call): done first, untimed
        subprocess.run([sys.executable, "-m", "evalkit", "run", "-q", "-n", "2", "validate"], env=env, cwd=root,
                       capture_output=True, text=True, timeout=3600, check=True)
        start = time.perf_counter()
        proc = subprocess.run(argv, env=env, cwd=root, capture_output=True, text=True, timeout=3600)
        elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"evalkit run exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    record = json.loads((root / ".evalkit" / "cluster-run.json").read_text(encoding="utf-8"))
    statuses = collections.Counter(json.loads(p.read_text(encoding="utf-8")).get("status")
                                   for p in (root / ".evalkit" / "artifacts").rglob("execution.json"))
    record["executions"] = statuses["ok"]
    record["execution_statuses"] = dict(statuses)
    return elapsed, record


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--copies", type=int, default=7, help="copies of the 6 patch cases (default 7: 42 executions)")
    ap.add_argument("--smoke", action="store_true", help="a small run that takes seconds (CI runs it: the benchmark still works and prints its JSON); one copy, the one-call-in-flight run only)")
    args = ap.parse_args()
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        times, spans = {}, {}
        configs = [("one_worker", 1, None), ("two_workers", 2, None), ("serial", 1, 1)]
        for label, workers, jobs in configs[2:] if args.smoke else configs:
            root = base / label
            cases = make_project(root, 1 if label == "serial" else args.copies, 1 if args.smoke else None)
            out["cases" if label != "serial" else "serial_cases"] = cases
            elapsed, record = run(root, workers, jobs)
            times[label] = elapsed
            ship = record["shipping"]
            out[f"{label}_s"] = round(elapsed, 2)
            out[f"{label}_calls_span_s"] = span = round(record["last_back"] - record["first_submitted"], 2)
            spans[label] = span
            out[f"{label}_executions"] = record["executions"]
            if set(record["execution_statuses"]) != {"ok"}:
                out[f"{label}_execution_statuses"] = record["execution_statuses"]
            out[f"{label}_calls"] = ship["calls"]
            out[f"{label}_calls_per_worker"] = {w: s["calls"] for w, s in record["workers"].items()}
            if label == "serial":
                out["overhead_ms_per_call"] = round((ship["round_trip_s"] - ship["stage_s"]) / ship["calls"] * 1000, 1)
                out["blob_fetch_ms_per_call"] = round(ship["fetch_s"] / ship["calls"] * 1000, 1)
                out["stage_s_per_call"] = round(ship["stage_s"] / ship["calls"], 3)
                out["blobs_fetched"] = ship["blobs_fetched"]
                out["pickled_call_bytes_mean"] = round(ship["pickled_bytes"] / ship["submitted"])
                out["pickled_call_bytes_max"] = ship["pickled_bytes_max"]
            print(f"{label}: {elapsed:.1f} s, {record['executions']} executions, {ship['calls']} calls", file=sys.stderr)
        if not args.smoke:
            out["speedup"] = round(times["one_worker"] / times["two_workers"], 2)
            out["speedup_calls_span"] = round(spans["one_worker"] / spans["two_workers"], 2)
    out["cpus"] = os.cpu_count()
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
