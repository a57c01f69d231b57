"""Benchmark: how fast doit decides what to redo, on a synthetic project of C cases x S systems.

    python benchmarks/incremental.py --cases 1000 --systems 4 [--keep DIR]

Times the first run, no-op reruns and reruns after editing one case (process start and case
discovery included: each is a fresh `python -m evalkit run`); the first no-op after the first run is a whole
process that leaves the no-op gate, the next ones are answered by it (`noop_first_s`, `noop_gated_s`: evalkit.noop_gate);
the no-op and the edit are timed
--repeat times (each edit of another case, adding a tag) and their medians reported, since one
run on a shared 2-core machine varies by ±0.3 s; beside each wall time, the CPU time (user + sys) of the
`evalkit run` process and its children, the figure that compares on a loaded machine. Last line: one JSON object.

evalkit's modules are byte-compiled first, as `pip install` does and as any import does unless
PYTHONDONTWRITEBYTECODE is set: without .pyc files every process recompiles ~190 modules (~0.15 s),
which is a property of the environment, not of evalkit.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import resource
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LEGACY = """package com.acme.gen{i};

import javax.inject.Inject;
import javax.persistence.Entity;

@Entity
public class Thing{i} {{
    @Inject
    Helper helper;

    public int value() {{
        return {i} + helper.offset();
    }}
}}
"""


def make_project(root: Path, n_cases: int, n_systems: int) -> None:
    suite = root / "cases" / "migration"
    suite.mkdir(parents=True)
    shutil.copy(REPO / "cases" / "migration" / "suite.yaml", suite / "suite.yaml")
    for i in range(n_cases):
        d = suite / f"case-{i:04d}"
        d.mkdir()
        legacy = LEGACY.format(i=i)
        (d / "Legacy.java").write_text(legacy)
        (d / "Expected.java").write_text(legacy.replace("javax.", "jakarta."))
        (d / "case.yaml").write_text(
            f"id: case-{i:04d}\ntags: [group-{i % 7}]\ninputs:\n  file_path: src/Thing{i}.java\n"
            f"  legacy_file: Legacy.java\n  incidents:\n    - rule_id: javax-to-jakarta-import-00001\n"
            f"      line: 3\nreference:\n  expected_file: Expected.java\nassertions:\n"
            f"  - type: not_contains\n    value: javax.\n")
    pool = [
        'adapter: command\n    command: ["{python}", "-m", "evalkit.demo_systems.naive_rewriter"]\n    pass_env: [PYTHONPATH]',
        'adapter: command\n    command: ["{python}", "-m", "evalkit.demo_systems.rule_rewriter"]\n    pass_env: [PYTHONPATH]',
        "adapter: gold",
        "adapter: empty",
    ]
    systems = "".join(f"  - name: s{j}\n    {pool[j % len(pool)]}\n" for j in range(n_systems))
    (root / "evalkit.yaml").write_text(f"release: bench\nsystems:\n{systems}")


def children_cpu() -> float:
    """User + system CPU seconds of this process's finished children (and theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


CPU: list[float] = []
"""CPU seconds (user + sys) of each timed run, in order: on a loaded machine the figure that compares."""


def timed_run(root: Path, jobs: int) -> tuple[float, int]:
    env = {**os.environ, "EVALKIT_CONFIG": str(root / "evalkit.yaml")}
    cpu, start = children_cpu(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "evalkit", "run", "--jobs", str(jobs)], env=env, cwd=root,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    CPU.append(children_cpu() - cpu)
    if proc.returncode != 0:
        sys.exit(f"run failed (exit status {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return elapsed, sum(1 for line in proc.stdout.splitlines() if line.startswith(".  "))


def byte_compile() -> None:
    """Byte-compile the evalkit the runs will import (the one on this interpreter's path)."""
    spec = importlib.util.find_spec("evalkit")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("evalkit is not importable from this interpreter")
    for folder in spec.submodule_search_locations:
        compileall.compile_dir(folder, quiet=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--systems", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=2, help="parallel tasks for the first run")
    ap.add_argument("--keep", help="leave the generated project in this folder")
    ap.add_argument("--repeat", type=int, default=3,
                    help="no-op reruns, and one-case edits (each of another case), timed; their medians are reported")
    ap.add_argument("--smoke", action="store_true", help="a small run that takes seconds (CI runs it: the benchmark still works and prints its JSON)")
    args = ap.parse_args()
    if args.smoke:
        args.cases, args.systems, args.repeat = 4, 2, 1
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="evalkit-bench-"))
    if root.exists() and any(root.iterdir()):
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    make_project(root, args.cases, args.systems)
    byte_compile()
    first, n_first = timed_run(root, args.jobs)
    print(f"first run: {first:.1f} s ({n_first} tasks)")
    noops, n_noop = [], 0
    for _ in range(args.repeat):
        elapsed, n_noop = timed_run(root, 1)
        noops.append(elapsed)
    noop_cpu = CPU[-args.repeat:]
    print(f"no-op rerun: {fmt(noops)} ({n_noop} tasks); CPU {fmt(noop_cpu)}; the first leaves the no-op gate "
          "(evalkit.noop_gate) that answers the others")
    edits, n_edit = [], 0
    cases = sorted((root / "cases" / "migration").glob("case-*/case.yaml"))
    for i in range(args.repeat):  # each time another case, so no rerun finds its edit done already
        case = cases[(len(cases) // 2 + i * 97) % len(cases)]
        case.write_text(case.read_text().replace("tags: [", f"tags: [edited-{i}, "))
        elapsed, n_edit = timed_run(root, 1)
        edits.append(elapsed)
    edit_cpu = CPU[-args.repeat:]
    print(f"one edited case: {fmt(edits)} ({n_edit} tasks); CPU {fmt(edit_cpu)}")
    print(f"project left in {root}" if args.keep else f"project in {root} (pass --keep DIR to choose)")
    print(json.dumps({"cases": args.cases, "systems": args.systems, "first_run_s": round(first, 2),
                      "noop_s": round(statistics.median(noops), 3), "one_edit_s": round(statistics.median(edits), 3),
                      "noop_runs_s": [round(x, 3) for x in noops], "one_edit_runs_s": [round(x, 3) for x in edits],
                      "noop_cpu_s": round(statistics.median(noop_cpu), 3),
                      "noop_first_s": round(noops[0], 3), "noop_gated_s": round(statistics.median(noops[1:] or noops), 3),
                      "one_edit_cpu_s": round(statistics.median(edit_cpu), 3),
                      "tasks_first": n_first, "tasks_noop": n_noop, "tasks_one_edit": n_edit}))


def fmt(times: list[float]) -> str:
    """The median of the runs, and every run."""
    return f"{statistics.median(times):.2f} s (median of {', '.join(f'{t:.2f}' for t in times)})"


if __name__ == "__main__":
    main()
