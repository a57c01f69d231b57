#!/usr/bin/env python3
"""Acceptance run: case health (test strength by ablation) on the real SWE-bench Lite rows of pydicom.

The rows come from ../shared/realdata (offline_candidates_lite_dev.json); the source tree needs a local git
clone of pydicom/pydicom, which CI does not have (no GitHub is reachable there), so this is a script, not a
test. It imports the four pydicom rows that run with python3 + pytest, runs `evalkit run health` in Docker,
prints one JSON line (each row's strength and its ablations' outcomes) and exits 0 when the verdicts are
the ones recorded in docs/guide/case-health.md.

Usage: scripts/case-health-pydicom.py --repo PATH/TO/pydicom.git [--data ROWS.json] [--keep]
Needs: docker with evalkit/python-pytest:bookworm (scripts/build-base-image.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "realdata" / "swebench" / "offline_candidates_lite_dev.json"
ROWS = ("pydicom__pydicom-1139", "pydicom__pydicom-1256", "pydicom__pydicom-1413", "pydicom__pydicom-1694")
EXPECTED = {"pydicom__pydicom-1139": "weak", "pydicom__pydicom-1256": "skipped",
            "pydicom__pydicom-1413": "strong", "pydicom__pydicom-1694": "strong"}


def evalkit(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALKIT_CONFIG": str(root / "evalkit.yaml")}
    return subprocess.run([sys.executable, "-m", "evalkit", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=1800)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True, type=Path, help="a local git clone (bare is fine) of pydicom/pydicom")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--keep", action="store_true", help="keep the temporary project")
    opts = ap.parse_args()
    rows = [r for r in json.loads(opts.data.read_text()) if r["instance_id"] in ROWS]
    root = Path(tempfile.mkdtemp(prefix="health-pydicom-"))
    try:
        (root / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        proc = evalkit(root, "import", "swebench", "rows.jsonl", "--repo", f"pydicom/pydicom={opts.repo}",
                       "--suite-dir", "cases/swe")
        if proc.returncode != 0:
            print(proc.stdout + proc.stderr, file=sys.stderr)
            return 1
        (root / "evalkit.yaml").write_text(
            "release: r1\nsystems:\n  - {name: gold, adapter: gold}\n"
            f"sandbox:\n  backend: docker\n  repos: {{pydicom/pydicom: {opts.repo}}}\n")
        proc = evalkit(root, "run", "health")
        if proc.returncode != 0:
            print(proc.stdout + proc.stderr, file=sys.stderr)
            return 1
        verdicts = {cid: json.loads((root / ".evalkit" / "health" / "swe" / f"{cid}.json").read_text())
                    for cid in ROWS}
        summary = {cid: {"strength": h["strength"], "reason": h.get("reason"),
                         "ablations": [(a["name"], a["outcome"]) for a in h["ablations"]]}
                   for cid, h in verdicts.items()}
        print(json.dumps(summary))
        return 0 if {cid: s["strength"] for cid, s in summary.items()} == EXPECTED else 1
    finally:
        if opts.keep:
            print(f"project kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
