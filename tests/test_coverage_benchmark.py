"""benchmarks/coverage.py --smoke runs and prints one JSON line with a coverage per population, method and n."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import REPO


def test_coverage_benchmark_smoke() -> None:
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "coverage.py"), "--smoke"], capture_output=True,
                         text=True, timeout=300, check=True)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert result["ns"] == [5, 10] and len(result["coverage"]) == 2
    for by_method in result["coverage"].values():
        assert set(by_method) == {"skew-aware", "studentized-or-t", "studentized", "bca", "t"}
        for by_n in by_method.values():
            assert all(0 <= c <= 100 for c in by_n.values())
    assert result["chosen"] in {"skew-aware", "studentized-or-t", "studentized", "bca", "t"}
    assert result["in_use"] == {"method": "skew-aware", "approximate_below": 30}
    for m, row in result["n_ge_10"].items():
        assert row["width_vs_bca"] > 0 and (m != "bca" or row["width_vs_bca"] == 1.0)
