"""Benchmark: what the executor seam costs per stage call, in-process (the `local` executor).

    python benchmarks/executor_calls.py [--repeat 200]

On a copy of the demo's migration and patch suites: the pickled size of a generate, execute and
grade call for one case of each (files travel as digests, not bytes), and the time to build a call
and check its files on the host (what `local` adds to each stage; the stage itself excluded). Last
line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--smoke", action="store_true", help="a small run that takes seconds (CI runs it: the benchmark still works and prints its JSON)")
    args = ap.parse_args()
    if args.smoke:
        args.repeat = 3
    from evalkit.executors import build_call, run_call
    from evalkit.executors.call import view
    from evalkit.project import load

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for suite in ("migration", "patch"):
            shutil.copytree(REPO / "cases" / suite, root / "cases" / suite)
        (root / "evalkit.yaml").write_text(
            "release: b\nsystems:\n"
            '  - {name: naive, adapter: command, command: ["{python}", "-m", "evalkit.demo_systems.naive_rewriter"],'
            " suites: [migration]}\n"
            '  - {name: bot, adapter: command, command: ["{python}", "-m", "evalkit.demo_systems.patch_bot"], suites: [patch]}\n'
            "sandbox: {backend: local}\n", encoding="utf-8")
        loaded = load(str(root / "evalkit.yaml"))
        cfg = loaded.config
        out: dict[str, object] = {}
        for label, key, system, stages in (("migration", "migration/jpa-entity", "naive", ("generate", "grade")),
                                           ("patch", "patch/round-half-up", "bot", ("generate", "execute", "grade"))):
            case = loaded.project.case(key)
            inputs: dict[str, object] = {}
            for stage in stages:
                call = build_call(cfg, stage, cfg.system(system), case, dict(inputs))  # type: ignore[arg-type]
                inputs[stage] = run_call(call)
                out[f"{label}_{stage}_pickled_bytes"] = len(pickle.dumps(call))
            out[f"{label}_case_files"] = len(case.files)
            call = build_call(cfg, "grade", cfg.system(system), case, dict(inputs))  # type: ignore[arg-type]
            start = time.perf_counter()
            for _ in range(args.repeat):
                view(build_call(cfg, "grade", cfg.system(system), case, dict(inputs)))  # type: ignore[arg-type]
            out[f"{label}_overhead_ms_per_call"] = round((time.perf_counter() - start) / args.repeat * 1000, 3)
            start = time.perf_counter()
            for _ in range(args.repeat):
                pickle.loads(pickle.dumps(call))
            out[f"{label}_pickle_roundtrip_ms"] = round((time.perf_counter() - start) / args.repeat * 1000, 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
