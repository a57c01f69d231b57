"""Any two releases compared: site/compare/<a>..<b>.html with each release, others with `evalkit compare`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from evalkit.report.compare_page import ReleaseComparison, compare_reports
from evalkit.report.models import ReleaseDiff, Report
from helpers import synthetic_site

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_site(tmp_path_factory.mktemp("cmp"), n_systems=2, next_cases=15)


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hrefs += [v for k, v in attrs if k == "href" and v]


def _links(page: Path) -> list[str]:
    p = Links()
    p.feed(page.read_text(encoding="utf-8"))
    return p.hrefs


def _report(site: Path, r: str) -> Report:
    return Report.model_validate_json((site / r / "report.json").read_bytes())


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "evalkit", "compare", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_previous_release_compared_with_each_release(site: Path) -> None:
    assert not (site / "compare").exists() or not list((site / "compare").glob("*..r1.html"))  # r1 had no previous
    page = site / "compare" / "r1..r2.html"
    assert page.exists()
    comp = ReleaseComparison.model_validate_json(page.with_suffix(".json").read_bytes())
    a, b = _report(site, "r1"), _report(site, "r2")
    # resolved -> not resolved and back, per system, exactly where the two reports' cells differ
    before = {(r.suite, r.case_id): r for r in a.cases}
    for direction, flip in (("regressed", (1.0, 0.0)), ("improved", (0.0, 1.0))):
        expected = {(s, r.suite, r.case_id) for r in b.cases if (r.suite, r.case_id) in before
                    for s, cell in r.systems.items()
                    if (before[(r.suite, r.case_id)].systems[s].metrics.get("resolved"),
                        cell.metrics.get("resolved")) == flip}
        got = {(s, c.suite, c.case_id) for s, d in comp.diff.systems.items() for c in getattr(d, direction)
               if c.metric == "resolved"}
        assert got == expected and expected
    assert comp.diff.previous_release == "r1"
    assert comp.added == sorted(f"{r.suite}/{r.case_id}" for r in b.cases
                                if (r.suite, r.case_id) not in {(o.suite, o.case_id) for o in a.cases})
    assert len(comp.added) == 3 and comp.removed == []
    assert "../compare/r1..r2.html" in _links(site / "r2" / "regressions.html")  # reachable from the site
    manifest = json.loads((site / "manifest.json").read_text())
    assert "compare/r1..r2.html" in manifest["compare"] and "compare/r1..r2.json" in manifest["compare"]


def test_every_change_links_to_both_case_pages_that_exist(site: Path) -> None:
    page = site / "compare" / "r1..r2.html"
    comp = ReleaseComparison.model_validate_json(page.with_suffix(".json").read_bytes())
    hrefs = [h for h in _links(page) if not h.startswith(("#", "data:"))]
    for h in hrefs:  # relative links only, each to a file that is there (the site works from file://)
        assert "://" not in h and not h.startswith("/"), h
        assert (page.parent / unquote(h)).resolve().exists(), h
    changed = [c for d in comp.diff.systems.values() for c in d.regressed + d.improved]
    resolved = [c for c in changed if c.metric == "resolved"]
    assert resolved, "the synthetic releases should flip some patch case's resolved"
    html = page.read_text(encoding="utf-8")
    for c in changed:
        for rel in ("r1", "r2"):
            assert f"../{rel}/cases/{c.suite}/{c.case_id}.html" in hrefs
        assert f"{c.suite}/{c.case_id}" in html
    for key in comp.added:
        assert f"../r2/cases/{key}.html" in hrefs


def test_cli_compares_any_pair_either_way(site: Path) -> None:
    res = _cli("r2", "r1", "--site", str(site))
    assert res.returncode == 0, res.stderr
    page = site / "compare" / "r2..r1.html"
    assert page.exists() and "open" in res.stdout
    comp = ReleaseComparison.model_validate_json(page.with_suffix(".json").read_bytes())
    assert len(comp.removed) == 3 and comp.added == []
    # going back, what got worse is what got better going forward
    fwd = compare_reports(_report(site, "r1"), _report(site, "r2"))
    for system, d in fwd.diff.systems.items():
        back = comp.diff.systems[system]
        assert {(c.suite, c.case_id, c.metric) for c in d.improved} == \
            {(c.suite, c.case_id, c.metric) for c in back.regressed}
    assert f"{sum(1 for _ in {(c.suite, c.case_id) for d in comp.diff.systems.values() for c in d.regressed})} case(s) worse" in res.stdout


@pytest.mark.parametrize("args, needle", [(("r1", "nope"), "nope/report.json: no such release"),
                                          (("../r1", "r2"), "no such release"),
                                          (("r1", "r1"), "the same")])
def test_bad_release_names_exit_2(site: Path, args: tuple[str, str], needle: str) -> None:
    res = _cli(*args, "--site", str(site))
    assert res.returncode == 2
    assert needle in res.stderr and ("releases on this site: r2, r1" in res.stderr or needle == "the same")
    assert "Traceback" not in res.stderr


def test_no_site_exit_2(tmp_path: Path) -> None:
    res = _cli("r1", "r2", "--site", str(tmp_path))
    assert res.returncode == 2 and "no report site" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.browser
def test_compare_page_from_file_urls_in_chromium(site: Path) -> None:
    """Opened from file:// (no server): no console error, every case link opens a page of that release."""
    chromium = "/usr/bin/chromium"
    if not os.path.exists(chromium):
        if os.environ.get("CI"):
            pytest.fail(f"{chromium} missing: .ci/run installs Debian's chromium")
        pytest.skip(f"{chromium} not installed")
    from playwright.sync_api import sync_playwright

    page_path = site / "compare" / "r1..r2.html"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_path.as_uri())
        links = page.locator("table.compare-releases a")
        assert links.count() >= 2
        hrefs = page.eval_on_selector_all("table.compare-releases a", "els => els.map(e => e.href)")
        assert "/r1/cases/" in hrefs[0] and "/r2/cases/" in hrefs[1]  # one row: the case in both releases
        for target in (hrefs[0], hrefs[1]):
            page.goto(target)
            assert page.url.startswith("file://") and "/cases/" in page.url
            assert page.locator("h1").count() == 1
        browser.close()
    assert not errors, errors


def test_page_keeps_the_largest_moves_and_the_json_has_all(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalkit.report import compare_page as compare

    monkeypatch.setattr(compare, "PAGE_ROWS", 2)
    page = compare.render_comparison(site, "r2", "r1")
    comp = ReleaseComparison.model_validate_json(page.with_suffix(".json").read_bytes())
    html = page.read_text(encoding="utf-8")
    for d in comp.diff.systems.values():
        n = len({(c.suite, c.case_id) for c in d.regressed})
        assert f"▼ {n} worse" in html
        if n > 2:
            assert f"Got worse: {n} cases (the 2 largest changes" in html
    shown = [h for h in _links(page) if h.startswith("../r1/cases/")]
    assert 0 < len({h for h in shown}) <= 2 * 2 * len(comp.diff.systems) + 2 + len(comp.status_changes[:2])
    assert "more in" in html and len(comp.removed) == 3  # removed: 2 listed, the rest in the JSON
    monkeypatch.undo()
    compare.render_comparison(site, "r2", "r1")


def _moves(diff: ReleaseDiff) -> set[tuple[str, str, str, str, str]]:
    return {(s, direction, c.suite, c.case_id, c.metric) for s, d in diff.systems.items()
            for direction in ("regressed", "improved") for c in getattr(d, direction)}


def test_the_regressions_page_and_the_comparison_show_one_diff_also_after_the_previous_release_changes(
        tmp_path: Path) -> None:
    """The release's regressions page and its comparison with the previous release show the same moves: summarize's
    diff while the previous release's report.json is the one it compared with, both computed again from that file
    once it changed (the previous release summarized again)."""
    from evalkit.report.release_diff import current_diff, release_diff
    from evalkit.report.render import render_site

    site = synthetic_site(tmp_path / "site", n_systems=2, n_cases=9)
    r1, r2 = _report(site, "r1"), _report(site, "r2")
    assert r2.diff.previous_digest and _moves(r2.diff)  # summarize's record of what it compared with
    assert current_diff(site, r2) is r2.diff  # the file is unchanged: the recorded diff is used as it is
    comp = ReleaseComparison.model_validate_json((site / "compare" / "r1..r2.json").read_bytes())
    assert _moves(comp.diff) == _moves(r2.diff)
    regressions = (site / "r2" / "regressions.html").read_text(encoding="utf-8")
    assert "summarized again" not in regressions

    # r1 summarized again: one case's resolved flips in its report.json, so r2's recorded diff is stale for that case
    row = next(r for r in r1.cases if any(c.metrics.get("resolved") is not None for c in r.systems.values()))
    system, cell = next((s, c) for s, c in row.systems.items() if c.metrics.get("resolved") is not None)
    cell.metrics["resolved"] = 1.0 - cell.metrics["resolved"]
    (site / "r1" / "report.json").write_text(r1.model_dump_json(), encoding="utf-8")
    render_site(site, "r2")

    now = release_diff(_report(site, "r1"), r2.cases)
    assert _moves(now) != _moves(r2.diff)  # the flip moved that case in or out of r2's diff
    comp = ReleaseComparison.model_validate_json((site / "compare" / "r1..r2.json").read_bytes())
    assert _moves(comp.diff) == _moves(now)
    regressions = (site / "r2" / "regressions.html").read_text(encoding="utf-8")
    assert "r1 was summarized again after this release" in regressions
    stale_only = _moves(r2.diff) - _moves(now)
    fresh_only = _moves(now) - _moves(r2.diff)
    changed = {(s, sc, cid) for s, _, sc, cid, m in stale_only | fresh_only if m == "resolved"}
    assert changed == {(system, row.suite, row.case_id)}
    for _, _, suite, case_id, _ in fresh_only:  # what only the new diff holds is on the page
        assert f"{suite}/{case_id}" in regressions
