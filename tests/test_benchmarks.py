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
NEEDS_DOCKER = {"sandbox", "cluster"}


def smoke(name: str, timeout: float = 300) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("EVALKIT_CONFIG", None)
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / f"{name}.py"), "--smoke"], cwd=str(REPO),
                          env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{name}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    last = proc.stdout.strip().splitlines()[-1]
    out = json.loads(last)
    assert isinstance(out, dict) and out, last
    return out


def test_every_benchmark_is_listed() -> None:
    assert set(BENCHMARKS) == {"cluster", "coverage", "executor_calls", "incremental", "judge", "judge_faults",
                               "providers", "sandbox", "site", "summarize"}, "a new benchmark: add it to the smoke runs below"


@pytest.mark.parametrize("name", [b for b in BENCHMARKS if b not in NEEDS_DOCKER])
def test_benchmark_smoke(name: str) -> None:
    out = smoke(name)
    if name == "summarize":
        assert out["cases"] == 20 and isinstance(out["score_summarize_s"], float)


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(NEEDS_DOCKER))
def test_docker_benchmark_smoke(name: str, docker_engine: str) -> None:
    smoke(name, timeout=600)
