"""Benchmark: score and summarize 1,000 cases x 4 systems, bootstrap intervals of 2,000 resamples.

    python benchmarks/summarize.py [--cases 1000] [--systems 4] [--smoke]

Builds a synthetic patch suite and synthetic upstream artifacts (output, execution, grades) with
realistic values, then times the score stage for every (system, case) and the summarize stage
(aggregates with Wilson and BCa intervals, paired comparisons with Holm, tag breakdowns, the
per-case JSON). Last line: one JSON object with `score_summarize_s`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def build(root: Path, n_cases: int, n_systems: int) -> None:
    suite = root / "cases" / "patch"
    suite.mkdir(parents=True)
    (suite / "suite.yaml").write_text("kind: patch\nlanguage: python\n")
    for i in range(n_cases):
        d = suite / f"c{i:04d}"
        d.mkdir()
        (d / "gold.patch").write_text(f"--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = {i}\n+x = {i + 1}\n")
        (d / "case.yaml").write_text(f"id: c{i:04d}\ntags: [t{i % 9}, area{i % 4}]\ninputs: {{}}\n"
                                     f"reference:\n  patch_file: gold.patch\n  fail_to_pass: [tests/t.py::test_{i}]\n")
    systems = "".join(f"  - {{name: s{j}, adapter: empty}}\n" for j in range(n_systems))
    (root / "evalkit.yaml").write_text(f"release: bench\nsystems:\n{systems}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--systems", type=int, default=4)
    ap.add_argument("--smoke", action="store_true", help="a small run that takes seconds (CI runs it: the benchmark still works and prints its JSON)")
    args = ap.parse_args()
    if args.smoke:
        args.cases, args.systems = 20, 2
    root = Path(tempfile.mkdtemp(prefix="evalkit-sumbench-"))
    build(root, args.cases, args.systems)
    os.environ["EVALKIT_CONFIG"] = str(root / "evalkit.yaml")
    from evalkit.artifacts import (ExecutionArtifact, GradesArtifact, OutputArtifact, Provenance, Sample, Usage,
                                   artifact_path, write_artifact)
    from evalkit.project import load
    from evalkit.report.summarize import summarize
    from evalkit.stages.score import score

    loaded = load()
    cfg, project = loaded.config, loaded.project
    rng = random.Random(0)
    inputs = []
    for j, system in enumerate(cfg.systems):
        skill = 0.3 + 0.15 * j
        for case in project.cases:
            base = {"system": system.name, "suite": case.suite, "case_id": case.id}
            prov = Provenance(inputs=f"{system.name}/{case.key}", config="bench")
            resolved = rng.random() < skill
            tid = next(iter(case.reference.fail_to_pass))  # a typed reference (the patch kind's model)
            out = OutputArtifact(**base, provenance=prov, samples=[Sample(
                patch="diff", wall_s=rng.uniform(0.5, 30), usage=Usage(input_tokens=rng.randint(500, 9000),
                                                                     output_tokens=rng.randint(50, 900),
                                                                     cost_usd=rng.uniform(0.001, 0.05)))])
            run = {"status": "completed", "resolved": resolved, "patch_applied": rng.random() < 0.9,
                   "fail_to_pass": {tid: "passed" if resolved else "failed"},
                   "pass_to_pass": {f"tests/t.py::p{k}": "passed" if rng.random() < 0.95 else "failed" for k in range(4)},
                   "flaky": [], "isolation": "docker"}
            exe = ExecutionArtifact(**base, provenance=prov, runs=[run], isolation="docker")
            grades = GradesArtifact(**base, provenance=prov, assertion_score=rng.random())
            inputs.append((system, case, out, exe, grades))
    start = time.perf_counter()
    for system, case, out, exe, grades in inputs:
        write_artifact(artifact_path(cfg.work_path, "score", system.name, case.suite, case.id),
                       score(cfg, system, case, out, exe, grades))
    scored = time.perf_counter() - start
    for system, case, out, exe, grades in inputs:  # the per-case JSON reads the upstream artifacts
        for stage, art in (("generate", out), ("execute", exe), ("grade", grades)):
            write_artifact(artifact_path(cfg.work_path, stage, system.name, case.suite, case.id), art)
    start = time.perf_counter()
    report = summarize(cfg, project)
    summarized = time.perf_counter() - start
    start = time.perf_counter()
    summarize(cfg, project)
    resummarized = time.perf_counter() - start
    n_aggs = sum(len(s.metrics) for s in report.systems) + sum(len(m) for su in report.suites for m in su.systems.values())
    print(f"score {len(inputs)} (system, case) pairs: {scored:.2f} s")
    print(f"summarize (first, writes {len(project.cases)} case JSON files): {summarized:.2f} s; "
          f"again with unchanged cases: {resummarized:.2f} s")
    print(f"{n_aggs} system/suite aggregates, {sum(len(su.comparisons) for su in report.suites)} paired comparisons, "
          f"{len(report.breakdowns)} tags, {cfg.report.bootstrap_resamples} resamples")
    print(json.dumps({"cases": args.cases, "systems": args.systems, "score_s": round(scored, 2),
                      "summarize_s": round(summarized, 2), "score_summarize_s": round(scored + summarized, 2)}))


if __name__ == "__main__":
    main()
