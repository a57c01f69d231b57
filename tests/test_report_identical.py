"""The demo's report numbers stay what they were before the code was reorganised (#13).

tests/data/demo_report_numbers.json holds every number of the demo's report.json except the
time-like ones (tests/report_numbers.py says which), made from the demo run at the commit before
the redesign. A refactor that moves a number fails here with the paths that moved. A deliberate
change of a metric regenerates it: EVALKIT_UPDATE_GOLDEN=1 python3 -m pytest tests/test_report_identical.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.helpers import long_floats
from tests.report_numbers import differences, numbers

GOLDEN = Path(__file__).parent / "data" / "demo_report_numbers.json"


def test_demo_report_numbers_are_unchanged(demo_run: tuple[Path, Any]) -> None:
    project, _ = demo_run  # conftest.demo_run: the whole demo, run once per session (--strict only sets the exit status)
    (report_file,) = (project / "site").glob("*/report.json")
    found = numbers(json.loads(report_file.read_text(encoding="utf-8")))
    if os.environ.get("EVALKIT_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(found, sort_keys=True, indent=0, separators=(",", ":")) + "\n", encoding="utf-8")
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    moved = differences(expected, found)
    assert not moved, "demo report numbers moved:\n" + "\n".join(moved)
    # #30: every number a person reads on the demo's pages has a few significant digits (the same run, no other)
    pages = list((project / "site").rglob("*.html"))
    assert len(pages) > 50
    assert not long_floats(project / "site"), long_floats(project / "site")
