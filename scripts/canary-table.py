#!/usr/bin/env python3
"""Print (or write into docs/guide/metrics.md) the table of what each canary, gold and the best real system score on every
suite's headline, from a release's report.json made with `canaries: true` (the demo's, by default).

    python3 scripts/canary-table.py site/demo-2026.11/report.json [--readme docs/guide/metrics.md]

tests/test_canaries.py runs the demo and fails when docs/guide/metrics.md's table differs from this script's output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalkit.report.leaderboard import TABLE_END, TABLE_START, canary_table  # noqa: E402
from evalkit.report.models import Report  # noqa: E402


def replace_table(readme: str, table: str) -> str:
    """``readme`` with the text between the table's markers replaced by ``table`` (ValueError without them)."""
    start, end = readme.index(TABLE_START), readme.index(TABLE_END) + len(TABLE_END)
    return readme[:start] + table + readme[end:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, help="a report.json of a run with canaries: true")
    ap.add_argument("--readme", type=Path, default=None, help="write the table into this README between its markers")
    args = ap.parse_args(argv)
    table = canary_table(Report.model_validate_json(args.report.read_bytes()))
    if args.readme is None:
        print(table)
        return 0
    args.readme.write_text(replace_table(args.readme.read_text(encoding="utf-8"), table), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
