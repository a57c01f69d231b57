"""The release page's decision summary: better / worse / no detectable difference / not testable per suite and
headline metric, against the baseline and the previous release, with the minimum detectable difference (at the
level Holm held each comparison to) when neither better nor worse.

A real project (recorded systems, `evalkit run` twice) whose outcomes are designed case by case; the
page is parsed as HTML and its rows compared with what the recorded outputs imply.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evalkit.power import score_detectability
from tests.helpers import evalkit

N_BIG = 24  # suite "mig": enough cases to decide
N_TINY = 3  # suite "tiny": nothing can be decided

SUITE_YAML = "kind: migration\nlanguage: java\ndescription: synthetic cases for the decision summary\n"
LEGACY = "package demo;\n\npublic class C{i} {{\n    // TODO mark\n    private int value{i};\n}}\n"


def good_in(system: str, i: int, release: str) -> bool:
    """Whether ``system``'s answer to case i holds the asserted marker."""
    if system == "base":
        return i % 2 == 0  # half the cases
    if system == "up":
        return True  # every case: +0.5 on 24 pairs, 12 of them changed, all the same way
    if system == "down":
        return release == "r2"  # none in r1 (worse than base), all in r2 (better than r1)
    if system == "mixed":
        return i % 4 in (0, 3)  # half, but 6 cases gained and 6 lost against base: no evidence either way
    raise AssertionError(system)


def make(root: Path) -> Path:
    (root / "templates").mkdir(parents=True)
    import shutil

    from tests.helpers import REPO

    shutil.rmtree(root / "templates")
    shutil.copytree(REPO / "templates", root / "templates")
    for suite, n in (("mig", N_BIG), ("tiny", N_TINY)):
        sdir = root / "cases" / suite
        sdir.mkdir(parents=True)
        (sdir / "suite.yaml").write_text(SUITE_YAML, encoding="utf-8")
        for i in range(n):
            cdir = sdir / f"c{i:02d}"
            (cdir / "legacy").mkdir(parents=True)
            (cdir / "expected").mkdir()
            (cdir / "legacy" / f"C{i}.java").write_text(LEGACY.format(i=i), encoding="utf-8")
            (cdir / "expected" / f"C{i}.java").write_text(
                LEGACY.format(i=i).replace("TODO mark", "GOOD"), encoding="utf-8")
            (cdir / "case.yaml").write_text(
                f"id: c{i:02d}\ndescription: synthetic case {i}\ninputs:\n  file_path: src/C{i}.java\n"
                f"  legacy_file: legacy/C{i}.java\n  incidents:\n    - rule_id: mark-00001\n"
                "      description: mark the class\n      message: add the GOOD marker\n      line: 4\n"
                f"reference:\n  expected_file: expected/C{i}.java\n"
                "assertions:\n  - type: contains\n    value: \"GOOD\"\n", encoding="utf-8")
    return root


def record(root: Path, release: str) -> None:
    """The systems' answers of ``release``, recorded in their own folder (a recorded output is cached by
    the system's settings, so a new recording goes in a new folder), and the config of that release."""
    (root / "evalkit.yaml").write_text(
        f"release: {release}\nbaseline: base\ntemplates_dir: templates\nsystems:\n"
        + "".join(f"  - {{name: {s}, adapter: recorded, path: rec-{release}/{s}}}\n"
                  for s in ("base", "up", "down", "mixed")), encoding="utf-8")
    for system in ("base", "up", "down", "mixed"):
        for suite, n in (("mig", N_BIG), ("tiny", N_TINY)):
            folder = root / f"rec-{release}" / system / suite
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                body = LEGACY.format(i=i).replace("TODO mark", "GOOD" if good_in(system, i, release) else "edited")
                (folder / f"c{i:02d}.json").write_text(json.dumps({"files": {f"src/C{i}.java": body}}),
                                                       encoding="utf-8")


class Rows(HTMLParser):
    """Rows of the decision tables: data-* attributes and the text of each cell."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict] = []
        self.same: list[dict] = []  # "identical" entries: system, against, metrics
        self.suite: str | None = None
        self.row: dict | None = None
        self.cell: list[str] | None = None
        self.in_section = False
        self.identical_suite: str | None = None
        self.power_notes: dict[str, str] = {}  # suite -> text of its "nothing detectable" note
        self.note_suite: str | None = None
        self.note: list[str] = []
        self.section_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "section" and a.get("id") == "decision":
            self.in_section = True
        if tag == "table" and "decision" in (a.get("class") or "").split():
            self.suite = a["data-suite"]
        if tag == "span" and "same" in (a.get("class") or "").split():
            self.same.append({"system": a["data-system"], "against": a["data-against"],
                              "metrics": a["data-metrics"].split(), "suite": self.identical_suite})
        if tag == "p" and "power-note" in (a.get("class") or "").split():
            self.note_suite, self.note = a["data-suite"], []
        if tag == "p" and "identical" in (a.get("class") or "").split():
            self.identical_suite = a["data-suite"]
        if tag == "tr" and self.suite and "data-verdict" in a:
            self.row = {"suite": self.suite, **{k[5:]: v for k, v in a.items() if k.startswith("data-")}, "cells": []}
        if tag in ("td", "th") and self.row is not None:
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.row is not None and self.cell is not None:
            self.row["cells"].append(" ".join("".join(self.cell).split()))
            self.cell = None
        if tag == "tr" and self.row is not None:
            self.rows.append(self.row)
            self.row = None
        if tag == "table":
            self.suite = None
        if tag == "section":
            self.in_section = False
        if tag == "p" and self.note_suite is not None:
            self.power_notes[self.note_suite] = " ".join("".join(self.note).split())
            self.note_suite = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)
        if self.in_section:
            self.section_text.append(data)
        if self.note_suite is not None:
            self.note.append(data)


def parse(page: Path) -> Rows:
    p = Rows()
    p.feed(page.read_text(encoding="utf-8"))
    return p


def find(rows: list[dict], suite: str, system: str, against: str, metric: str) -> dict:
    hits = [r for r in rows if (r["suite"], r["system"], r["against"], r["metric"]) == (suite, system, against, metric)]
    assert len(hits) == 1, (suite, system, against, metric, hits)
    return hits[0]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make(tmp_path_factory.mktemp("decision") / "proj")
    record(root, "r1")
    evalkit(root, "run")
    record(root, "r2")
    evalkit(root, "run")
    return root / "site"


def test_first_release_has_no_previous_comparison(site: Path) -> None:
    rows = parse(site / "r1" / "index.html").rows
    assert rows and {r["against"] for r in rows} == {"baseline"}


def test_verdicts_against_the_baseline(site: Path) -> None:
    p = parse(site / "r2" / "index.html")
    rows = p.rows
    assert "Decision summary" in "".join(p.section_text)
    up = find(rows, "mig", "up", "baseline", "assertion_score")
    assert up["verdict"] == "better" and "better" in up["cells"][3]
    assert up["cells"][4].startswith("+0.500")  # 12 of 24 cases gained 1
    assert up["cells"][6] == "–"  # no power figures for a decided comparison
    # down in r2 answers every case: better than base too; in r1 it was worse
    r1 = parse(site / "r1" / "index.html").rows
    down1 = find(r1, "mig", "down", "baseline", "assertion_score")
    assert down1["verdict"] == "worse" and "worse" in down1["cells"][3] and down1["cells"][4].startswith("-0.500")
    # the adjusted p printed is the report's Holm-adjusted p
    report = json.loads((site / "r2" / "report.json").read_text(encoding="utf-8"))
    comp = next(c for s in report["suites"] if s["name"] == "mig" for c in s["comparisons"]
                if c["system"] == "up" and c["metric"] == "assertion_score")
    shown = up["cells"][5]
    assert shown == ("< 0.001" if comp["p_holm"] < 0.001 else f"{comp['p_holm']:.3f}")


def test_no_detectable_difference_shows_the_minimum_detectable_difference(site: Path) -> None:
    rows = parse(site / "r2" / "index.html").rows
    mixed = find(rows, "mig", "mixed", "baseline", "assertion_score")
    assert mixed["verdict"] == "no detectable difference" and "no detectable difference" in mixed["cells"][3]
    text = mixed["cells"][6]
    report = json.loads((site / "r2" / "report.json").read_text(encoding="utf-8"))
    comp = next(c for s in report["suites"] if s["name"] == "mig" for c in s["comparisons"]
                if c["system"] == "mixed" and c["metric"] == "assertion_score")
    # sized at the level Holm held it to, not at 0.05 before Holm
    assert comp["holm_family"] > 1 and comp["alpha_holm"] < 0.05 and comp["testable"]
    # 6 cases gained 1 and 6 lost 1, 12 unchanged: the SD of the differences is sqrt(12/23)
    expected = score_detectability(N_BIG, (12 / 23) ** 0.5, alpha=comp["alpha_holm"])
    assert expected.reachable and expected.mdd is not None
    assert expected.mdd > score_detectability(N_BIG, (12 / 23) ** 0.5).mdd  # a stricter level: a larger MDD
    assert f"Minimum detectable difference ±{expected.mdd:.3f}" in text, text
    assert f"80% power at α {comp['alpha_holm']:.3g}, 24 cases" in text
    # observed difference 0: nothing to size "more cases" for (report.detect_difference not set)
    assert "more cases" not in text


def test_previous_release(site: Path) -> None:
    rows = parse(site / "r2" / "index.html").rows
    down = find(rows, "mig", "down", "previous", "assertion_score")
    assert down["verdict"] == "better" and down["cells"][1] == "release r1" and down["cells"][4].startswith("+1.000")
    # nothing changed since r1 for up: one line lists it, no table row
    assert not [r for r in rows if (r["suite"], r["system"], r["against"]) == ("mig", "up", "previous")]
    same = parse(site / "r2" / "index.html").same
    up = [e for e in same if (e["suite"], e["system"], e["against"]) == ("mig", "up", "previous")]
    assert len(up) == 1 and "assertion_score" in up[0]["metrics"]


def test_three_cases_cannot_detect_anything(site: Path) -> None:
    rows = parse(site / "r2" / "index.html").rows
    tiny = [r for r in rows if r["suite"] == "tiny"]
    assert tiny and all(r["verdict"] == "not testable" for r in tiny)
    up = find(rows, "tiny", "up", "baseline", "assertion_score")
    # base holds the marker in cases 0 and 2: up gains case 1 only
    assert "not testable" in up["cells"][3] and "too few nonzero differences" in up["cells"][3]
    text = up["cells"][6]
    assert text.startswith("Nothing detectable with 3 cases (p < 0.0")
    # and the suite says it once, in words, above its table
    page = parse(site / "r2" / "index.html")
    assert page.power_notes.get("tiny", "").startswith(
        f"Not testable: in {len(tiny)} of these comparisons no outcome of the cases compared could have been "
        "significant after Holm's correction")
    assert "mig" not in page.power_notes  # 24 cases: every comparison could detect something
    # the observed +0.333 would take more cases: the page says how many, and it is more than 3
    report = json.loads((site / "r2" / "report.json").read_text(encoding="utf-8"))
    comp = next(c for s in report["suites"] if s["name"] == "tiny" for c in s["comparisons"]
                if c["system"] == "up" and c["metric"] == "assertion_score")
    expected = score_detectability(N_TINY, up_sd(), 1 / 3, "observed", alpha=comp["alpha_holm"])
    assert expected.n_required is not None and expected.n_required > N_TINY
    assert f"About {expected.n_required - N_TINY} more cases ({expected.n_required} in all) would detect" in text


def tiny_same(page: Rows) -> list[tuple[str, str, str]]:
    return [(e["system"], e["against"], m) for e in page.same if e["suite"] == "tiny" for m in e["metrics"]]


def up_sd() -> float:
    """SD of up - base on the tiny suite: differences (0, 1, 0)."""
    m = 1 / 3
    return ((2 * m * m + (1 - m) ** 2) / 2) ** 0.5


def test_report_json_carries_the_decisions(site: Path) -> None:
    report = json.loads((site / "r2" / "report.json").read_text(encoding="utf-8"))
    dec = report["decision"]
    assert dec["previous_release"] == "r1"
    undecided = [d for d in dec["decisions"] if d["verdict"] in ("no detectable difference", "not testable")]
    assert undecided and all(d["detectability"] is not None for d in undecided)
    assert all(d["detectability"] is None for d in dec["decisions"] if d["verdict"] in ("better", "worse"))
    assert {d["verdict"] for d in dec["decisions"]} == {"better", "no detectable difference", "not testable"}
    # the decision's verdict is the one the comparison carries in the suite's table
    for d in dec["decisions"]:
        assert d["verdict"] == d["comparison"]["verdict"]
    page = parse(site / "r2" / "index.html")
    assert [(r["suite"], r["system"], r["against"], r["metric"], r["verdict"]) for r in page.rows] == [
        (d["suite"], d["system"], d["against"], d["metric"], d["verdict"]) for d in dec["decisions"] if not d["identical"]]
    listed = sorted((e["suite"], e["system"], e["against"], m) for e in page.same for m in e["metrics"])
    assert listed == sorted((d["suite"], d["system"], d["against"], d["metric"]) for d in dec["decisions"] if d["identical"])
    # identical means no case differs: every such comparison has difference 0 and nothing discordant
    for d in dec["decisions"]:
        c = d["comparison"]
        if d["identical"]:
            assert c["difference"]["value"] == 0 and (c["discordant"] in ([0, 0], None)) and d["verdict"] == "not testable"


def test_configured_difference_is_what_cases_needed_are_sized_for() -> None:
    """report.detect_difference replaces the observed difference as the target of "cases needed"."""
    from evalkit.config import ReportSettings
    from evalkit.report.decision import detectability
    from evalkit.stats import compare_binary, compare_scores

    def call(model, fn, *args, **kwargs):  # summarize's cached call, without the cache
        return fn(*args, **kwargs)

    base = [0.5, 0.6, 0.4, 0.7, 0.5, 0.6, 0.55, 0.45, 0.5, 0.65]
    other = [b + d for b, d in zip(base, [0.1, -0.1, 0.05, 0.0, 0.2, -0.15, 0.1, 0.0, -0.05, 0.1])]
    c = compare_scores("assertion_score", "a", "b", base, other)
    observed = detectability(call, c, None)
    configured = detectability(call, c, 0.2)
    assert observed.target_source == "observed" and observed.target == pytest.approx(abs(c.difference.value))
    assert configured.target_source == "configured" and configured.target == 0.2
    assert configured.n_required == score_detectability(10, c.sd_difference, 0.2).n_required
    assert configured.n_required < observed.n_required  # a larger difference needs fewer cases
    b = compare_binary("resolved", "a", "b", [True, False] * 10, [True, True] * 10)  # 10 gained, none lost
    assert b.discordant == (0, 10)
    assert detectability(call, b, 0.3).n_required is not None
    with pytest.raises(ValueError):
        ReportSettings(detect_difference=0)
