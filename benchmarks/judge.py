"""Judge throughput against a loopback server with 50 ms latency (no network, no key needed).

- 200 judge calls at concurrency 8 versus concurrency 1 (target speedup >= 6);
- re-reading the 200 cached verdicts (target <= 0.5 s).

Prints the figures; the last line is one JSON object with ``concurrency_speedup`` and
``cached_reread_s``. Run: ``python benchmarks/judge.py [--smoke]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the loopback server (a test double)

from fake_server import FakeAnthropic, Reply  # noqa: E402

from evalkit.graders.migration_judge import Incident, MigrationJudgeInput, judge_many  # noqa: E402
from evalkit.llm.client import ModelClient  # noqa: E402
from evalkit.llm.settings import JudgeSettings  # noqa: E402

N_ITEMS = 200
LATENCY_S = 0.05
VERDICT = json.dumps({
    "semantic_equivalence_score": 4, "rule_adherence_score": 5, "faithfulness_score": 4,
    "code_quality_score": 4, "is_compilable": True, "detailed_notes": "benchmark",
})


def items(tag: str, n_items: int = N_ITEMS) -> list[MigrationJudgeInput]:
    return [
        MigrationJudgeInput(
            item_id=f"{tag}/{n}", source_technology="Java EE", target_technology="Quarkus", language="java",
            legacy_code=f"import javax.ejb.Stateless;\n@Stateless\npublic class Bean{n} {{ }}\n",
            incidents=[Incident(rule_id="ee-to-quarkus-00000", description="Replace @Stateless",
                                message="Use @ApplicationScoped", line=2)],
            generated_code=f"// {tag}\n@ApplicationScoped\npublic class Bean{n} {{ }}\n",
        )
        for n in range(n_items)
    ]


def timed_run(server: FakeAnthropic, cache_root: str, tag: str, concurrency: int,
              n_items: int = N_ITEMS) -> tuple[float, int]:
    settings = JudgeSettings(base_url=server.base_url, concurrency=concurrency, max_retries=0)
    client = ModelClient(settings, cache_root)
    before = server.counts["messages"]
    start = time.perf_counter()
    outcomes = judge_many(items(tag, n_items), client, settings)
    elapsed = time.perf_counter() - start
    assert all(o.status == "judged" for o in outcomes), {o.status for o in outcomes}
    return elapsed, server.counts["messages"] - before


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--smoke", action="store_true",
                    help="a small run that takes seconds (CI runs it: the benchmark still works and prints its JSON)")
    n_items = 16 if ap.parse_args().smoke else N_ITEMS
    warnings.simplefilter("ignore", DeprecationWarning)  # the SDK warns about the default model's end of life
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-benchmark-loopback-only")
    with FakeAnthropic(latency_s=LATENCY_S, responder=lambda body: Reply(text="Reasoning.\n" + VERDICT)) as server, \
            tempfile.TemporaryDirectory() as cache_root:
        serial, serial_calls = timed_run(server, cache_root, "serial", 1, n_items)
        parallel, parallel_calls = timed_run(server, cache_root, "parallel", 8, n_items)
        reread, reread_calls = timed_run(server, cache_root, "parallel", 8, n_items)
    speedup = serial / parallel
    print(f"{n_items} judge calls, {LATENCY_S * 1000:.0f} ms server latency")
    print(f"  concurrency 1: {serial:.2f} s ({serial_calls} calls)")
    print(f"  concurrency 8: {parallel:.2f} s ({parallel_calls} calls)  speedup {speedup:.1f}x (target >= 6)")
    print(f"  cached re-read: {reread:.3f} s ({reread_calls} calls)  (target <= 0.5 s)")
    print(json.dumps({"concurrency_speedup": round(speedup, 2), "cached_reread_s": round(reread, 4),
                      "serial_s": round(serial, 3), "parallel_s": round(parallel, 3), "calls_on_reread": reread_calls}))


if __name__ == "__main__":
    main()
