"""Benchmark: a Verified-sized project (500 cases x 4 systems) on a real Dask cluster of 1, 2, 4, 8, 16 workers.

    python benchmarks/scale.py [--workers 1,2,4,8,16] [--cases 500] [--sleep 0.4] [--quick]

What is measured is evalkit's own part of a cluster run: the coordinator (doit, building and pickling
each call, the Dask client, writing every artifact), the scheduler, shipping files to the workers and
the artifacts back. The sandbox is synthetic: a sandbox backend ``sleep`` (registered in the
coordinator and, by a ``--preload`` of this file, in every worker) whose test phase is
``time.sleep(SLEEP)`` **in the worker process** (no container, no subprocess) and which returns what
the runner would (exit status 0 and a pytest summary in which every FAIL_TO_PASS and PASS_TO_PASS
test passed), so the execute stage, its grading and the container-run cache (on the coordinator,
through the cache service) all run as in a real run. Each case's validation (two sandbox runs: the
reference, and no patch) sleeps too: a Verified-size run is 1,000 validation + 2,000 execute sandbox runs,
7,000 worker calls (validate, health, then generate, execute and grade per pair) and 2,000 score calls
on the coordinator.

The project: ``cases`` patch cases on a two-file source tree, each its own gold patch and test patch,
and four ``recorded`` systems reading a SWE-bench predictions JSONL each, every prediction distinct
(no sandbox run is another's cache hit). Each worker is a ``dask worker --nthreads 2 --resources
containers=1`` process (tests/cluster_procs.py): one sandbox slot per worker, so ideal throughput is
N / SLEEP sandbox runs a second.

**Size per worker count.** One worker doing all 3,000 sandbox runs of 0.4 s takes 1,200 s; the runs
are scaled instead: N workers get ``ceil(cases x N / max(workers))`` cases (500 at 16 workers, 32 at
one), so every configuration ideally takes the same time (3,000 x SLEEP / 16 s, 75 s at 0.4 s) and the
whole benchmark about seven minutes on an idle 2-core machine. Speed-up is therefore one of throughput:
(pairs a second over the run at N) / (pairs a second at one worker); ``projected_500x4_s`` is the
time the full project would take at that throughput. The wall time of each run (``evalkit run``, from
start to exit) includes planning, score, summarize and render; ``calls_span_s`` is the stage calls alone
(first submitted to last back, from ``<work>/cluster-run.json``).

**Coordinator**: CPU seconds (user + sys) and peak RSS of the ``evalkit run`` process (``wait4``); the
scheduler's and workers' CPU seconds from /proc. ``--profile N`` runs the N-worker configuration a second
time with its coordinator under cProfile (in every thread, timed by the thread's CPU clock) and prints its
top functions to stderr.

**Model** (docs/operations/scale.md): wall(N) = a + pairs x max((SLEEP x runs per pair + o) / N, c):
fitted ``a`` (fixed seconds: start, plan, summarize, render), ``o`` (seconds each pair adds to a slot
beyond the sleep: shipping, scheduling, the stage's own work) and ``c`` (coordinator seconds per
pair: the ceiling of calls a second one coordinator sustains, whatever the workers).

Last line: one JSON object. Target (issue 32): speed-up >= 0.8 x N up to 16 workers.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Literal

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SYSTEMS = 4
SLEEP_ENV = "EVALKIT_SCALE_SLEEP_S"
"""Seconds a synthetic sandbox phase sleeps (set for the workers and the coordinator by the benchmark)."""


# ---- the synthetic sandbox (imported in the workers by `dask worker --preload`) ---------------------------

class SleepSandbox:
    """A sandbox whose test phase sleeps and reports every wanted test passed."""

    isolation: Literal["docker", "local"] = "local"

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.image_digest: str | None = None
        self.notes: list[str] = ["synthetic sandbox: the phase slept, no test ran"]

    def __enter__(self) -> "SleepSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_phase(self, phase: str, command: str | None) -> Any:
        from evalkit.sandbox.phase import PhaseOutcome, new_nonce  # deferred: only where a sandbox runs

        seconds = float(os.environ.get(SLEEP_ENV, "0.4"))
        time.sleep(seconds)
        nonce = new_nonce()
        fixed = self.spec.patch is not None  # without a patch (validation's no-patch run) FAIL_TO_PASS fails
        log = "".join(f"{'PASSED' if fixed else 'FAILED'} {t}\n" for t in self.spec.fail_to_pass)
        log += "".join(f"PASSED {t}\n" for t in self.spec.pass_to_pass) + f"==== done in {seconds:.2f}s ====\n"
        files = {"runner.txt": b"synthetic\n", "method": f"{nonce} {'git-apply' if fixed else '-'}\n".encode(),
                 "status": f"{nonce} {0 if fixed else 1}\n".encode(), "log": log.encode()}
        return PhaseOutcome(phase=phase, nonce=nonce, state="exited", exit_code=0 if fixed else 1, files=files,
                            duration_s=seconds)

    def close(self) -> None:
        pass


class SleepBackend:
    """The ``sleep`` sandbox backend (see the module docstring)."""

    isolation: Literal["docker", "local"] = "local"
    auto_preference: int | None = None
    auto_reason = ""
    uses_images = False

    def available(self) -> bool:
        return True

    def image_id(self, spec: Any) -> str | None:
        return None

    def open(self, spec: Any, ctl: Any) -> SleepSandbox:
        return SleepSandbox(spec)


def register() -> None:
    """Register the ``sleep`` backend in this process (idempotent)."""
    from evalkit.plugins import registry

    registry("sandbox_backends").register("sleep", SleepBackend(), replace=True)


def dask_setup(worker: object) -> None:
    """``dask worker --preload benchmarks/scale.py``: the worker knows the ``sleep`` backend."""
    register()


# ---- the project ----------------------------------------------------------------------------------------

def _gold(i: int, tag: str = "") -> str:
    return ("diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,2 +1,2 @@\n"
            f"-VALUE = 0\n+VALUE = {i}{tag}\n def value():\n")


def _test_patch(i: int) -> str:
    return (f"diff --git a/tests/test_c{i}.py b/tests/test_c{i}.py\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/tests/test_c{i}.py\n@@ -0,0 +1,5 @@\n+from pkg.mod import VALUE\n+\n+\n"
            f"+def test_value():\n+    assert VALUE == {i}\n")


def make_project(root: Path, cases: int, backend: str = "sleep") -> None:
    """``cases`` patch cases and four recorded systems (predictions distinct per system and case)."""
    suite = root / "cases" / "scale"
    src = suite / "_src" / "tree"
    (src / "pkg").mkdir(parents=True)
    (src / "tests").mkdir()
    (src / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (src / "pkg" / "mod.py").write_text("VALUE = 0\ndef value():\n    return VALUE\n", encoding="utf-8")
    (src / "tests" / "test_mod.py").write_text("from pkg.mod import value\n\n\ndef test_base():\n    assert value() >= 0\n",
                                               encoding="utf-8")
    (suite / "suite.yaml").write_text(
        "kind: patch\ntrusted: true\nlanguage: python\ndefaults:\n  source_dir: ../_src/tree\n"
        "  test_command: synthetic-tests\n  timeout_s: 60\n", encoding="utf-8")
    for i in range(cases):
        case = suite / f"c{i:04d}"
        case.mkdir()
        (case / "gold.patch").write_text(_gold(i), encoding="utf-8")
        (case / "test.patch").write_text(_test_patch(i), encoding="utf-8")
        (case / "case.yaml").write_text(
            f"id: c{i:04d}\ninputs:\n  problem_statement: VALUE must be {i}\n  test_patch_file: test.patch\n"
            f"reference:\n  patch_file: gold.patch\n  fail_to_pass: [tests/test_c{i}.py::test_value]\n"
            "  pass_to_pass: [tests/test_mod.py::test_base]\n", encoding="utf-8")
    lines = ["release: scale", f"sandbox: {{backend: {backend}}}", "systems:"]
    for k in range(SYSTEMS):
        preds = root / f"preds-{k}.jsonl"
        preds.write_text("".join(json.dumps({"instance_id": f"c{i:04d}", "model_name_or_path": f"s{k}",
                                             "model_patch": _gold(i, f"  # s{k}")}) + "\n" for i in range(cases)),
                         encoding="utf-8")
        lines.append(f"  - {{name: s{k}, adapter: recorded, path: {preds.name}}}")
    (root / "evalkit.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---- one configuration ----------------------------------------------------------------------------------

def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a live process (and its waited-for children), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def listen_drops() -> int:
    """SYNs this host's kernel dropped because a listen queue was full (``TcpExt: ListenDrops``, every socket)."""
    try:
        head, values = [line.split() for line in Path("/proc/net/netstat").read_text().splitlines()[:2]]
    except (OSError, ValueError):
        return 0
    return int(dict(zip(head, values)).get("ListenDrops", 0))


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def run_one(base: Path, workers: int, cases: int, sleep: float, profile: bool = False) -> dict[str, Any]:
    sys.path.insert(0, str(REPO / "tests"))
    from cluster_procs import LocalCluster

    root = base / f"w{workers}"
    make_project(root, cases)
    env = {SLEEP_ENV: str(sleep), "DASK_DISTRIBUTED__WORKER__PRELOAD": json.dumps([str(Path(__file__).resolve())])}
    load_before, drops = _load(), listen_drops()
    with LocalCluster(root / "cluster", workers=workers, env=env, threads=2) as cluster:
        others = {"scheduler": cluster.procs[0].pid, **{f"w{i}": p.pid for i, p in enumerate(cluster.workers)}}
        cpu0 = {k: _proc_cpu(pid) for k, pid in others.items()}
        run_env = {**os.environ, **env, "PYTHONPATH": str(REPO), "EVALKIT_CONFIG": str(root / "evalkit.yaml")}
        argv = [sys.executable, str(Path(__file__).resolve()), "--coordinator"]
        argv += ["--profile-to", str(root / "coordinator.prof")] if profile else []
        argv += ["--", "run", "-q", "--cluster", cluster.address, "-n", str(max(8, 4 * workers))]
        start = time.perf_counter()
        with open(root / "coordinator.log", "wb") as log:
            proc = subprocess.Popen(argv, env=run_env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        cpu1 = {k: _proc_cpu(pid) for k, pid in others.items()}
    if proc.returncode != 0:
        raise SystemExit(f"evalkit run at {workers} workers exited {proc.returncode}:\n"
                         f"{(root / 'coordinator.log').read_text(errors='replace')[-4000:]}")
    record = json.loads((root / ".evalkit" / "cluster-run.json").read_text(encoding="utf-8"))
    executions = list((root / ".evalkit" / "artifacts").rglob("execution.json"))
    statuses: dict[str, int] = {}
    for p in executions:
        s = json.loads(p.read_text(encoding="utf-8")).get("status", "?")
        statuses[s] = statuses.get(s, 0) + 1
    ship = record["shipping"]
    span = record["last_back"] - record["first_submitted"]
    pairs = cases * SYSTEMS
    out: dict[str, Any] = {
        "workers": workers, "cases": cases, "pairs": pairs, "wall_s": round(elapsed, 2),
        "calls_span_s": round(span, 2), "worker_calls": ship["calls"],
        "calls_per_s": round(ship["calls"] / span, 1), "pairs_per_s": round(pairs / elapsed, 3),
        "coordinator_cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "coordinator_peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "scheduler_cpu_s": round(cpu1["scheduler"] - cpu0["scheduler"], 2),
        "workers_cpu_s": round(sum(cpu1[k] - cpu0[k] for k in cpu1 if k != "scheduler"), 2),
        "overhead_ms_per_call": round((ship["round_trip_s"] - ship["stage_s"]) / ship["calls"] * 1000, 1),
        # where a call's time goes on the worker: in the stage (the sleep, the stage's own work and its cache
        # requests to the coordinator) and fetching blobs from the coordinator
        "stage_ms_per_call": round(ship["stage_s"] / ship["calls"] * 1000, 1),
        "sleep_ms_per_call": round(sleep * cases * 6 / ship["calls"] * 1000, 1),
        "fetch_ms_per_call": round(ship["fetch_s"] / ship["calls"] * 1000, 1),
        "execution_statuses": statuses, "load_before": load_before, "load_after": _load(),
        "host_listen_drops": listen_drops() - drops,
        "calls_per_worker": sorted(s["calls"] for s in record["workers"].values()),
    }
    out["coordinator_cpu_ms_per_pair"] = round(out["coordinator_cpu_s"] / pairs * 1000, 1)
    return out


# ---- the model --------------------------------------------------------------------------------------------

def fit(rows: list[dict[str, Any]], sleep: float) -> dict[str, float]:
    """wall(N) = a + pairs x max((s + o) / N, c), s = SLEEP x sandbox runs per pair (1.5: its execute and a
    quarter of a case's two validation runs); least squares: a grid over c and o, a their mean residual."""
    s = sleep * (1 + 2 / SYSTEMS)
    best: tuple[float, float, float, float] | None = None
    cs = sorted({0.0} | {r["wall_s"] / r["pairs"] * f for r in rows for f in (0.2, 0.4, 0.6, 0.8, 1.0)}
                | {r["coordinator_cpu_s"] / r["pairs"] for r in rows})
    for c in cs:
        for o in [x / 1000 for x in range(0, 2001, 5)]:
            preds = [r["pairs"] * max((s + o) / r["workers"], c) for r in rows]
            a = statistics.fmean(r["wall_s"] - p for r, p in zip(rows, preds))
            if a < 0:
                continue
            err = sum((r["wall_s"] - a - p) ** 2 for r, p in zip(rows, preds))
            if best is None or err < best[0]:
                best = (err, a, o, c)
    assert best is not None
    err, a, o, c = best
    return {"a_s": round(a, 1), "o_s_per_pair": round(o, 3), "c_s_per_pair": round(c, 4),
            "rms_s": round(math.sqrt(err / len(rows)), 1), "s_s_per_pair": round(s, 3)}


# ---- entry points -----------------------------------------------------------------------------------------

class ThreadProfiles:
    """cProfile in every thread of this process, timed by each thread's own CPU clock (``time.thread_time``):
    doit runs the stage actions in threads, which a plain cProfile (main thread only) does not see, and under
    load wall-clock profiles count the time a thread waits for the CPU or the GIL."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []

    def _start(self, *_: object) -> None:
        sys.setprofile(None)
        prof = cProfile.Profile(time.thread_time)
        self.profiles.append(prof)
        prof.enable()

    def __enter__(self) -> "ThreadProfiles":
        threading.setprofile(self._start)
        main = cProfile.Profile(time.thread_time)
        self.profiles.append(main)
        main.enable()
        return self

    def __exit__(self, *exc: object) -> None:
        threading.setprofile(None)  # type: ignore[arg-type]
        self.profiles[0].disable()

    def dump(self, path: str) -> None:
        stats = pstats.Stats(self.profiles[0])
        for prof in self.profiles[1:]:
            prof.create_stats()
            if getattr(prof, "stats", None):
                stats.add(prof)
        stats.dump_stats(path)


def coordinator(argv: list[str], profile_to: str | None) -> None:
    """``evalkit <argv>`` in this process with the ``sleep`` backend registered (the benchmark's coordinator);
    ``profile_to``: profile every thread's CPU time and write the stats there."""
    register()
    from evalkit.cli import entry, main

    sys.argv = ["evalkit", *argv]
    if profile_to is None:
        entry()  # exits as `evalkit` does
    profiles = ThreadProfiles()
    try:
        with profiles:
            code = main(argv)
    finally:
        profiles.dump(profile_to)
    raise SystemExit(code)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--workers", default="1,2,4,8,16", help="worker counts (default 1,2,4,8,16)")
    ap.add_argument("--cases", type=int, default=500, help="cases at the largest worker count (default 500)")
    ap.add_argument("--sleep", type=float, default=0.4, help="seconds each synthetic sandbox phase sleeps (default 0.4)")
    ap.add_argument("--profile", type=int, default=0, help="run the coordinator under cProfile at this worker count")
    ap.add_argument("--quick", "--smoke", action="store_true",
                    help="a small run that takes about a minute: 1 and 2 workers, 6 cases at 2, 0.2 s sleeps (tests run it)")
    ap.add_argument("--coordinator", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--profile-to", default=None, help=argparse.SUPPRESS)
    ap.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.coordinator:
        coordinator(args.rest, args.profile_to)
        return
    if args.quick:
        args.workers, args.cases, args.sleep = "1,2", 6, 0.2
    counts = sorted({int(x) for x in args.workers.split(",")})
    top = max(counts)
    rows: list[dict[str, Any]] = []
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="evalkit-scale-") as tmp:
        for n in counts:
            cases = max(2, math.ceil(args.cases * n / top))
            row = run_one(Path(tmp), n, cases, args.sleep)
            rows.append(row)
            print(f"{n:>2} workers: {cases} cases, wall {row['wall_s']} s, span {row['calls_span_s']} s, "
                  f"{row['calls_per_s']} calls/s, coordinator {row['coordinator_cpu_s']} s CPU "
                  f"{row['coordinator_peak_rss_mb']} MB, load {row['load_before']}->{row['load_after']}", file=sys.stderr)
            if args.profile == n:  # a second run, profiled (the profiler's own cost is not in the figures above)
                shutil.rmtree(Path(tmp) / f"w{n}")
                run_one(Path(tmp), n, cases, args.sleep, profile=True)
                stats = pstats.Stats(str(Path(tmp) / f"w{n}" / "coordinator.prof"), stream=sys.stderr)
                stats.sort_stats("cumulative").print_stats(45)
                stats.sort_stats("tottime").print_stats(25)
    one = rows[0]
    for r in rows:
        r["speedup"] = round(r["pairs_per_s"] / one["pairs_per_s"] * one["workers"], 2)
        r["speedup_calls_span"] = round((r["worker_calls"] / r["calls_span_s"])
                                        / (one["worker_calls"] / one["calls_span_s"]) * one["workers"], 2)
        r["efficiency"] = round(r["speedup"] / r["workers"], 2)
        r["projected_500x4_s"] = round(500 * SYSTEMS / r["pairs_per_s"], 0)
    out: dict[str, Any] = {"sleep_s": args.sleep, "cpus": os.cpu_count(), "uptime_start": uptime,
                           "uptime_end": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
                           "rows": rows}
    if len(rows) >= 3:
        out["model"] = fit(rows, args.sleep)
    out["target_met"] = all(r["speedup"] >= 0.8 * r["workers"] for r in rows)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
