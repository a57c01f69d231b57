"""The demo's report numbers stay what they were before the code was reorganised (#13).

tests/data/demo_report_numbers.json holds every number of the demo's report.json except the
time-like ones (tests/report_numbers.py says which), made from the demo run at the commit before
the redesign. A refactor that moves a number fails here with the paths that moved. A deliberate
change of a metric regenerates it: EVALKIT_UPDATE_GOLDEN=1 python3 -m pytest tests/test_report_identical.py
"""

from __future__ import annotations

import html
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import long_floats
from tests.report_numbers import differences, numbers

GOLDEN = Path(__file__).parent / "data" / "demo_report_numbers.json"


@pytest.fixture(scope="module")
def demo_site(demo_run: tuple[Path, Any]) -> Path:
    """The release folder of conftest.demo_run: the whole demo, run once per session (--strict only sets the
    exit status)."""
    project, _ = demo_run
    (report_file,) = (project / "site").glob("*/report.json")
    return report_file.parent


def test_demo_report_numbers_are_unchanged(demo_site: Path) -> None:
    found = numbers(json.loads((demo_site / "report.json").read_text(encoding="utf-8")))
    if os.environ.get("EVALKIT_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(found, sort_keys=True, indent=0, separators=(",", ":")) + "\n", encoding="utf-8")
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    moved = differences(expected, found)
    assert not moved, "demo report numbers moved:\n" + "\n".join(moved)
    # #30: every number a person reads on the demo's pages has a few significant digits (the same run, no other)
    site = demo_site.parent
    report = json.loads((demo_site / "report.json").read_text(encoding="utf-8"))
    assert len(list((demo_site / "cases").rglob("*.html"))) == len(report["cases"]) > 20  # a page per case, read below
    assert not long_floats(site), long_floats(site)
    # #31: every suite of the demo shows its case-health table, the kinds without a reference run too
    suite_pages = sorted((demo_site / "suites").glob("*.html"))
    assert {p.stem for p in suite_pages} >= {"agentic", "e2e", "generation", "migration", "patch", "rag"}
    assert [p.stem for p in suite_pages if 'id="case-health"' not in p.read_text(encoding="utf-8")] == []


class _Ids(HTMLParser):
    """Every id attribute of a page, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids += [v for k, v in attrs if k == "id" and v is not None]


def test_every_demo_page_has_each_id_once(demo_site: Path) -> None:
    """An id names one element of its page: a section a template renders twice (the suite page's case health was)
    repeats its ids, and a link to it (#case-health) or a script looking it up finds only the first."""
    repeated = {}
    for page in sorted(demo_site.parent.rglob("*.html")):
        found = _Ids()
        found.feed(page.read_text(encoding="utf-8"))
        twice = sorted({i for i in found.ids if found.ids.count(i) > 1})
        if twice:
            repeated[str(page.relative_to(demo_site.parent))] = twice
    assert not repeated, repeated


PPI_LINE = re.compile(r'<span class="ppi" data-ppi="(\w+)">(.*?)</span>\.\s*\n', re.S)


def test_demo_judge_reliability_shows_a_ppi_estimate_offline(demo_site: Path) -> None:
    """Offline, the demo's recorded judge (cases/migration/_recorded) scores outputs people labelled, so the judge
    reliability section corrects the judge by people: a number with an interval, not "no labelled output"."""
    report = json.loads((demo_site / "report.json").read_text(encoding="utf-8"))
    fields = {f["metric"]: f for f in report["calibration"]["fields"]}
    sem = fields["judge_semantic_equivalence"]["ppi"]
    assert sem["n_labelled"] == 4 and sem["low"] < sem["value"] < sem["high"]
    assert sem["correction"] < 0  # the recorded judge rated the kept message-driven bean above the people
    page = html.unescape((demo_site / "index.html").read_text(encoding="utf-8"))
    section = page[page.index('id="judge-calibration"'):]
    lines = dict(PPI_LINE.findall(section))
    text = re.sub(r"<[^>]+>", "", lines["judge_semantic_equivalence"])
    assert "no labelled output" not in text
    shown = re.match(r"Corrected by people \(PPI\): (\d\.\d\d) \[(\d\.\d\d), (\d\.\d\d)\]", text)
    assert shown, text
    value, low, high = (float(g) for g in shown.groups())
    assert (value, low, high) == tuple(round(sem[k], 2) for k in ("value", "low", "high"))
    assert low < value < high
    assert "recorded-assistant" in text and f"n = {sem['n_labelled']} labelled" in text
