"""Benchmark: how long a run takes when the judge's API is dead or hangs, with the default judge settings.

    python benchmarks/judge_faults.py [--cases 2] [--jobs 1] [--fault dead|hang|both] [--timeout-s 60]

Builds a small project (demo migration cases x naive, rules, gold) whose judge points at
- ``dead``: a 127.0.0.1 port with nothing listening (connection refused), or
- ``hang``: a loopback server that accepts every request and never answers,
and times one ``python -m evalkit run``. Reports the wall time, the HTTP attempts the server saw
(hang only) and the judge statuses recorded. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fake_server import FakeAnthropic, hang  # noqa: E402
from helpers import make_project  # noqa: E402


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def timed_run(root: Path, base_url: str, cases: int, jobs: int, extra: str) -> tuple[float, dict[str, int]]:
    names = sorted(p.name for p in (REPO / "cases" / "migration").iterdir() if p.is_dir())[:cases]
    project = make_project(root, cases=names, extra=f"judge:\n  base_url: {base_url}\n{extra}")
    env = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), "ANTHROPIC_API_KEY": "sk-loopback-only"}
    env.pop("EVALKIT_JUDGE_MODEL", None)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "evalkit", "run", "--jobs", str(jobs)], cwd=root.parent, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    elapsed = time.perf_counter() - start
    statuses: dict[str, int] = {}
    for path in (project / ".evalkit" / "artifacts").rglob("grades.json"):
        judge = json.loads(path.read_text()).get("judge") or {}
        status = judge.get("status") or json.loads(path.read_text()).get("status")
        statuses[status] = statuses.get(status, 0) + 1
    return elapsed, statuses


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--fault", choices=["dead", "hang", "both"], default="both")
    parser.add_argument("--timeout-s", type=float, default=None, help="judge.timeout_s (default: evalkit's)")
    parser.add_argument("--smoke", action="store_true", help="a small run that takes seconds (CI runs it: the benchmark still works and prints its JSON)")
    args = parser.parse_args()
    if args.smoke:
        args.cases, args.timeout_s = 1, 0.5
    extra = f"  timeout_s: {args.timeout_s}\n" if args.timeout_s else ""
    result: dict[str, object] = {"cases": args.cases, "systems": 3, "jobs": args.jobs}
    with tempfile.TemporaryDirectory() as tmp:
        if args.fault in ("dead", "both"):
            elapsed, statuses = timed_run(Path(tmp) / "dead", dead_url(), args.cases, args.jobs, extra)
            print(f"dead endpoint: {elapsed:.1f} s, judge statuses {statuses}")
            result["dead_s"], result["dead_statuses"] = round(elapsed, 1), statuses
        if args.fault in ("hang", "both"):
            with FakeAnthropic(responder=lambda body: hang()) as server:
                elapsed, statuses = timed_run(Path(tmp) / "hang", server.base_url, args.cases, args.jobs, extra)
                attempts = server.counts["messages"]
            print(f"hanging endpoint: {elapsed:.1f} s, {attempts} HTTP attempts, judge statuses {statuses}")
            result["hang_s"], result["hang_attempts"], result["hang_statuses"] = round(elapsed, 1), attempts, statuses
    print(json.dumps(result))


if __name__ == "__main__":
    main()
