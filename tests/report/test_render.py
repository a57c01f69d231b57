"""render, charts and site: pages from synthetic report data (no evaluation run, no browser)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markupsafe import escape

from evalkit.report import charts
from evalkit.report.models import Report
from evalkit.metrics.registry import METRICS
from evalkit.schemas import SCHEMA_DIR
from evalkit.report.render import (copy_assets, diff_lines, fmt_difference, fmt_value, json_for_script, metric_value,
                                   pass_badge, render_site, status_badge, truncate_log)
from evalkit.report.site_env import LOG_PREVIEW
from evalkit.report.site import list_releases
from helpers import synthetic_site

PAYLOAD = '</script><script>window.__pwned=1</script><img src=x onerror="alert(1)"><a href="javascript:alert(2)">x</a>'


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_site(tmp_path_factory.mktemp("site"), n_systems=3, payload=PAYLOAD)


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for k, v in attrs:
            if k in ("href", "src") and v is not None:
                self.urls.append((tag, v))


def test_formatting() -> None:
    assert fmt_value(0.5, "answered") == "50.0%"
    assert fmt_value(0.12345, "cost_usd") == "$0.1235"
    assert fmt_value(1.234, "wall_s") == "1.23 s"
    assert fmt_value(None, "answered") == "–" and fmt_value(float("nan"), "codebleu") == "–"
    assert fmt_difference(0.125, "answered") == "+12.5 pts"
    assert fmt_difference(-0.0314, "codebleu") == "-0.031"
    assert truncate_log("x" * 10, 4) == ("xxxx", True) and truncate_log(None) == ("", False)
    assert [c for c, _ in diff_lines("a\nb\n", "a\nc\n", "f")] == ["file", "file", "hunk", "ctx", "del", "add"]


def test_badges_escape_what_they_show() -> None:
    assert str(status_badge("ok")) == '<span class="badge s-ok">✓ ok</span>'
    hostile = str(status_badge(PAYLOAD, PAYLOAD))
    assert "<script>" not in hostile and "<img" not in hostile and 'class="badge s-skipped"' in hostile
    assert "left out of the aggregates" in str(status_badge("error", "not_judged"))
    assert "left out" not in str(status_badge("infra_error", "infra"))
    assert "<script>" not in str(pass_badge(False, no=PAYLOAD)) and "s-error" in str(pass_badge(False))
    assert str(pass_badge(None)) == '<span class="badge s-skipped">– n/a</span>'
    binary = next(i for i in METRICS.values() if i.binary)
    assert "✓ yes" in str(metric_value(1.0, binary)) and "✗ no" in str(metric_value(0.0, binary))
    assert metric_value(0.5, METRICS["codebleu"]) == fmt_value(0.5, "codebleu") and not METRICS["codebleu"].binary


def test_json_for_script_and_chart_labels_are_inert() -> None:
    text = json_for_script({"k": PAYLOAD})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"k": PAYLOAD}
    assert "<" not in charts.label("<b onmouseover=x>")


def test_every_page_written_and_linked_relatively(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert site / "r2" / "suites" / "migration.html" in pages
    assert not [p for p in pages if p.name.endswith(".compare.html")], "two systems side by side are the case page's"
    assert 'id="picker"' in (site / "r2" / "cases" / "patch" / "case-0000.html").read_text()
    for page in pages:
        parser = Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for _tag, url in parser.urls:
            assert not re.match(r"^[a-z]+:", url) or url == "data:,", f"{page}: absolute or scripted url {url}"
            if url.startswith("#") or url == "data:,":
                continue
            target = (page.parent / url.split("#")[0].split("?")[0]).resolve()
            assert target.exists(), f"{page.relative_to(site)} links to missing {url}"


def test_a_log_shown_in_part_is_a_file_and_what_a_page_no_longer_shows_goes(tmp_path: Path) -> None:
    """A run's full log is a file of its own when the page shows only its end; a log shown whole is not written
    twice. A case page rendered again removes the log file it no longer links and an older evalkit's compare page."""
    site = synthetic_site(tmp_path / "s", n_systems=2)
    folder = site / "r2" / "cases" / "patch"
    data = folder / "case-0000.json"
    case = json.loads(data.read_text())
    system = sorted(case["systems"])[0]
    run = case["systems"][system]["execution"]["runs"][0]
    short = run["log"]
    assert len(short) <= LOG_PREVIEW
    assert not list(site.rglob("*.log.txt")), "a log the page shows whole is not written again"
    page = (folder / "case-0000.html").read_text()
    assert "Full log" not in page and f'<pre class="log">{escape(short)}</pre>' in page  # shown whole
    run["log"] = "".join(f"line {i} of a long test log\n" for i in range(2 * LOG_PREVIEW // 20)) + "THE END\n"
    data.write_text(json.dumps(case))
    (folder / "case-0000.compare.html").write_text("an older evalkit's compare page")
    (folder / "case-0001.compare.html").write_text("an older evalkit's compare page")
    render_site(site, "r2")
    log = folder / f"case-0000.{system}.log.txt"
    assert log.read_text() == run["log"]
    page = (folder / "case-0000.html").read_text()
    assert f'href="case-0000.{system}.log.txt">Full log' in page and "line 0 of a long" not in page
    assert not (folder / "case-0000.compare.html").exists()  # the page rendered again: its old compare page goes
    assert (folder / "case-0001.compare.html").exists()  # a page not rendered again is not touched
    run["log"] = short
    data.write_text(json.dumps(case))
    render_site(site, "r2")
    assert not log.exists(), "the log is shown whole again: its file goes"
    page = (folder / "case-0000.html").read_text()
    assert "Full log" not in page and "tests/test_m.py::test_0" in page


def test_plotly_written_once_and_only_when_changed(site: Path) -> None:
    copies = [p for p in site.rglob("*.js") if p.stat().st_size > 1_000_000]
    assert copies == [site / "assets" / "plotly.min.js"]
    assert copy_assets(site) == [], "nothing changed: nothing rewritten"
    release = (site / "r2" / "index.html").read_text(encoding="utf-8")
    assert '<script src="../assets/plotly.min.js">' in release
    assert release.count('class="chart"') >= 2


def test_payload_shown_as_text(site: Path) -> None:
    for page in (site / "r2" / "cases" / "migration").glob("case-0001*.html"):
        html = page.read_text(encoding="utf-8")
        assert "window.__pwned" in html, "the payload is shown"
        assert "<script>window" not in html and "<img src=x" not in html and 'href="javascript:' not in html
        assert "&lt;/script&gt;&lt;script&gt;window.__pwned=1" in html


def test_numbers_on_the_page_are_report_numbers(site: Path) -> None:
    report = Report.model_validate_json((site / "r2" / "report.json").read_bytes())
    html = (site / "r2" / "index.html").read_text(encoding="utf-8")
    cells = re.findall(r'data-system="([^"]+)" data-metric="([^"]+)" data-value="([^"]+)"', html)
    assert len(cells) >= len(report.systems) * 3
    by_system = {s.name: s.metrics for s in report.systems}
    by_suite = {(s.name, sys_name): aggs for s in report.suites for sys_name, aggs in s.systems.items()}
    for system, metric, value in cells:
        candidates = [by_system[system][metric].value] + [a[metric].value for (su, sy), a in by_suite.items()
                                                          if sy == system and metric in a]
        assert float(value) in candidates, (system, metric, value)
    case = json.loads((site / "r2" / "cases" / "patch" / "case-0000.json").read_text())
    page = (site / "r2" / "cases" / "patch" / "case-0000.html").read_text(encoding="utf-8")
    for arts in case["systems"].values():
        for metric, value in arts["scores"]["metrics"].items():
            assert f'data-metric="{metric}" data-value="{float(value)!r}"' in page


def test_manifest_schemas_and_release_order(site: Path) -> None:
    manifest = json.loads((site / "manifest.json").read_text())
    assert [r["release"] for r in manifest["releases"]] == ["r2", "r1"] == list_releases(site)
    files = manifest["releases"][0]["files"]
    assert "r2/report.json" in files and "r2/index.html" in files and not any("/." in f for f in files)
    assert "assets/plotly.min.js" in manifest["assets"]
    assert "schemas/report.schema.json" in manifest["schemas"]
    assert {"schemas/case-migration.schema.json", "schemas/case-patch.schema.json"} <= set(manifest["schemas"])
    assert (site / "schemas" / "case-rag.schema.json").read_bytes() == (SCHEMA_DIR / "case-rag.schema.json").read_bytes()
    schema = json.loads((site / "schemas" / "report.schema.json").read_text())
    assert schema["title"] == "Report"
    index = (site / "index.html").read_text(encoding="utf-8")
    assert index.index('href="r2/index.html"') < index.index('href="r1/index.html"')
    assert index.count('class="chart"') >= 3, "trend charts of the headline metrics"


def test_regressions_link_both_releases(site: Path) -> None:
    html = (site / "r2" / "regressions.html").read_text(encoding="utf-8")
    assert 'href="../r1/cases/' in html and 'href="cases/' in html
    assert "Got worse" in html and "Got better" in html


def test_regressions_page_keeps_the_largest_moves(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past PAGE_ROWS cases per system and direction the page lists the largest moves and says how many
    there are: 10,000 moved cases would otherwise make a page of megabytes."""
    from evalkit.report import compare_page as compare

    report = Report.model_validate_json((site / "r2" / "report.json").read_bytes())
    worse = {s: len({(c.suite, c.case_id) for c in d.regressed}) for s, d in report.diff.systems.items()}
    assert max(worse.values()) >= 3
    monkeypatch.setattr(compare, "PAGE_ROWS", 2)
    render_site(site, "r2")
    html = (site / "r2" / "regressions.html").read_text(encoding="utf-8")
    for system, n in worse.items():
        section = html.split(f'<section id="sys-{system}"', 1)[1].split("</section>", 1)[0]
        got_worse = section.split("Got worse", 1)[1].split("Got better", 1)[0]
        assert f"Got worse: {n} case" in section
        assert len(re.findall(r'<th scope="row" rowspan', got_worse)) == min(n, 2)
        assert ("the 2 largest changes" in got_worse) == (n > 2)
        assert f"▼ {n} worse" in html.split('aria-label="Systems"', 1)[1].split("</nav>", 1)[0]
    monkeypatch.undo()
    render_site(site, "r2")  # the module's other tests see the full page again


def test_old_release_rerenders_from_its_own_data(site: Path) -> None:
    before = (site / "r1" / "report.json").read_bytes()
    (site / "r1" / "index.html").unlink()
    render_site(site, "r1")
    assert (site / "r1" / "index.html").exists()
    assert (site / "r1" / "report.json").read_bytes() == before
    assert list_releases(site) == ["r2", "r1"], "re-rendering an old release keeps the order"
