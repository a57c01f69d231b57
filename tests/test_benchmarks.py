"""Every benchmark runs in its small mode (`--smoke`: seconds) and prints its JSON line (issue 27, item 7):
benchmarks are not timed in CI, but they must not rot (benchmarks/summarize.py failed on a typed
reference for weeks). Only that each runs and ends with one JSON object is asserted, not its figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import REPO

BENCHMARKS = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py"))
NEEDS_DOCKER = {"sandbox", "cluster", "demo"}
OWN_TEST = {"scale"}
"""Benchmarks with a test of their own below (their small mode is checked more closely)."""


def smoke(name: str, timeout: float = 300, flag: str = "--smoke") -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("EVALKIT_CONFIG", None)
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / f"{name}.py"), flag], cwd=str(REPO),
                          env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{name}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    last = proc.stdout.strip().splitlines()[-1]
    out = json.loads(last)
    assert isinstance(out, dict) and out, last
    return out


def test_every_benchmark_is_listed() -> None:
    assert set(BENCHMARKS) == {"cluster", "coverage", "demo", "eta_replay", "executor_calls", "incremental", "judge",
                               "judge_faults", "providers", "sandbox", "scale", "site", "summarize"}, "a new benchmark: add it to the smoke runs below"


@pytest.mark.parametrize("name", [b for b in BENCHMARKS if b not in NEEDS_DOCKER | OWN_TEST])
def test_benchmark_smoke(name: str) -> None:
    out = smoke(name)
    if name == "summarize":
        assert out["cases"] == 20 and isinstance(out["score_summarize_s"], float)
    if name == "eta_replay":
        (figures,) = out.values()
        assert isinstance(figures, dict) and 0 <= figures["within30"] <= 1


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(NEEDS_DOCKER))
def test_docker_benchmark_smoke(name: str, docker_engine: str) -> None:
    out = smoke(name, timeout=600)
    if name == "demo":  # one patch case: its validation and systems ran in containers the run counted
        assert isinstance(out["containers_started"], int) and out["containers_started"] >= 1, out
        machine, evalkit = out["machine_cpu_s"], out["evalkit_cpu_s"]
        assert isinstance(machine, float) and isinstance(evalkit, float) and 0 < evalkit <= machine, out
        floor, floor_without = out["floor_s"], out["floor_without_evalkit_s"]
        assert isinstance(floor, float) and isinstance(floor_without, float) and floor_without <= floor, out


def test_scale_quick() -> None:
    """benchmarks/scale.py --quick: a real scheduler and one, then two, worker processes on 127.0.0.1 run a small
    project end to end with the synthetic sandbox; every call is counted, every execution completes, both workers
    of the two-worker cluster take calls, and the coordinator's CPU and memory are measured (figures not asserted:
    they are timings on a shared machine)."""
    out = smoke("scale", timeout=600, flag="--quick")
    rows = out["rows"]
    assert isinstance(rows, list) and [r["workers"] for r in rows] == [1, 2]
    for r in rows:
        cases = r["cases"]
        assert r["pairs"] == 4 * cases
        # per case: validate and health, then generate, execute and grade for each of the 4 systems
        assert r["worker_calls"] == cases * (2 + 3 * 4), r
        assert r["execution_statuses"] == {"ok": r["pairs"]}, r
        assert sum(r["calls_per_worker"]) == r["worker_calls"] and len(r["calls_per_worker"]) == r["workers"]
        assert min(r["calls_per_worker"]) > 0, r
        assert r["coordinator_cpu_s"] > 0 and r["coordinator_peak_rss_mb"] > 20 and r["scheduler_cpu_s"] > 0
        assert r["calls_span_s"] > 0 and r["calls_per_s"] > 0
    assert rows[0]["speedup"] == 1.0 and "load" in str(out["uptime_start"])
