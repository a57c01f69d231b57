"""The report in real headless Chromium (Debian's package, driven by Playwright; no browser download).

Builds a small site, adds a recorded system whose output carries script payloads, then crawls every
page from site/index.html over http on 127.0.0.1: no console error, no failed request, every
internal link resolves, every chart is drawn (an SVG in each chart container), the payloads stay
text, no dialog opens, and no page scrolls sideways at phone width (390 px). Screenshots of the
site index, a release page, a suite page and a case page go to tests/screenshots/ (gitignored).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import threading
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest

from helpers import make_project, run

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-quic"]
PAYLOAD = ('<script>window.__pwned=1;alert(1)</script><img src=x onerror="window.__pwned=2">'
           '<a id="evil" href="javascript:window.__pwned=3">click</a>')
SHOTS = Path(__file__).resolve().parents[1] / "screenshots"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} missing: .ci/run installs Debian's chromium")
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium)")
    root = tmp_path_factory.mktemp("site")
    rec = root / "recorded" / "migration"
    rec.mkdir(parents=True)
    (rec / "jpa-entity.json").write_text(json.dumps({
        "files": {"src/main/java/com/acme/orders/Order.java": PAYLOAD}, "text": PAYLOAD}))
    systems = ("systems:\n  - name: naive\n    adapter: command\n"
               "    command: [\"{python}\", \"-m\", \"evalkit.demo_systems.naive_rewriter\"]\n"
               f"  - name: evil\n    adapter: recorded\n    path: {root / 'recorded'}\n"
               "    description: <b onmouseover=alert(1)>payload in a description</b>\n"
               "  - name: gold\n    adapter: gold\n")
    project = make_project(root / "p", cases=["jpa-entity", "ejb-stateless"], systems=systems)
    run(project)
    return project / "site"


def serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


def test_every_page_loads_clean_and_payloads_stay_inert(site: Path) -> None:
    from playwright.sync_api import sync_playwright

    httpd, base = serve(site)
    SHOTS.mkdir(exist_ok=True)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            dialogs: list[str] = []
            page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: errors.append(f"failed request: {r.url}"))
            page.on("response", lambda r: errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            seen: set[str] = set()
            queue = [urljoin(base, "index.html")]
            while queue:
                url = queue.pop()
                if url in seen:
                    continue
                seen.add(url)
                if not url.endswith(".html"):  # data files: fetched, not opened as pages
                    assert page.request.get(url).ok, url
                    continue
                response = page.goto(url)
                assert response is not None and response.ok, f"{url}: {response.status if response else 'no response'}"
                assert page.evaluate("window.__pwned") is None, url
                charts = page.locator(".chart[data-figure]")
                for i in range(charts.count()):
                    charts.nth(i).locator(".main-svg").first.wait_for(state="attached", timeout=5000)
                for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
                    target = urljoin(url, href)
                    parsed = urlparse(target)
                    assert parsed.scheme in ("http", "https", "javascript", "mailto") or href.startswith("#"), href
                    assert parsed.scheme != "javascript", f"{url} links to {href}"
                    if target.startswith(base):
                        queue.append(target.split("#", 1)[0])
            assert not errors, errors
            assert not dialogs, dialogs
            pages = sorted(u[len(base):] for u in seen if u.endswith(".html"))
            # site index, release, suite, regressions, 2 case pages (two systems side by side: a case page's ?compare)
            assert pages == ["index.html", "r1/cases/migration/ejb-stateless.html", "r1/cases/migration/jpa-entity.html",
                             "r1/index.html", "r1/regressions.html", "r1/suites/migration.html"], pages
            assert any(u.endswith("jpa-entity.html?compare") for u in seen), "the suite and case pages link ?compare"
            for url in [u for u in seen if "assets/" in u]:
                assert url.endswith(("style.css", "plotly.min.js", "charts.js", "compare.js", "sort.js")), url
            for name in ("jpa-entity.html", "jpa-entity.html?a=evil&b=gold"):
                page.goto(urljoin(base, f"r1/cases/migration/{name}"))
                assert PAYLOAD[:40] in page.inner_text("body")  # shown as text
                assert page.locator("#evil").count() == 0 and page.locator("img[src=x]").count() == 0
                assert page.locator("main script").count() == 0
                assert page.evaluate("window.__pwned") is None
            assert page.locator("[data-panel=evil]").is_visible() and page.locator("[data-panel=gold]").is_visible()
            assert not page.locator("[data-panel=naive]").is_visible() and page.locator("#picker").is_visible()
            page.goto(urljoin(base, "r1/cases/migration/jpa-entity.html?compare"))  # the default pair, side by side
            shown = [p for p in page.locator("[data-panel]").all() if p.is_visible()]
            assert len(shown) == 2 and page.locator("#panels.side-by-side").count() == 1
            page.select_option("#pick-a", "gold")
            page.select_option("#pick-b", "naive")
            assert sorted(p.get_attribute("data-panel") or "" for p in page.locator("[data-panel]").all()
                          if p.is_visible()) == ["gold", "naive"]
            page.goto(urljoin(base, "r1/cases/migration/jpa-entity.html"))  # the case page: every system, no picker
            assert all(p.is_visible() for p in page.locator("[data-panel]").all())
            assert not page.locator("#picker").is_visible() and page.locator("#panels.side-by-side").count() == 0
            page.goto(urljoin(base, "r1/cases/migration/jpa-entity.html"))
            page.screenshot(path=str(SHOTS / "case.png"), full_page=True)
            page.goto(urljoin(base, "r1/index.html"))
            assert page.locator(".chart .main-svg").count() >= 2
            page.screenshot(path=str(SHOTS / "release.png"), full_page=True)
            page.goto(urljoin(base, "r1/suites/migration.html"))
            page.screenshot(path=str(SHOTS / "suite.png"), full_page=True)
            page.goto(urljoin(base, "index.html"))
            page.screenshot(path=str(SHOTS / "index.png"), full_page=True)
            page.set_viewport_size({"width": 390, "height": 844})
            for url in sorted(u for u in seen if u.endswith(".html")):
                page.goto(url)
                overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
                assert overflow <= 1, f"{url}: horizontal page scroll of {overflow}px at phone width"
            page.goto(urljoin(base, "r1/index.html"))
            page.screenshot(path=str(SHOTS / "release-phone.png"), full_page=True)
            assert not errors, errors
            assert not dialogs, dialogs
            browser.close()
    finally:
        httpd.shutdown()


def test_leaderboard_sorts_by_any_column_from_file_urls(site: Path) -> None:
    """Opened as a file (no server): clicking a column title re-orders the rows, numbers as numbers,
    systems without a value last either way, aria-sort follows; no console error; fits at 390 px."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 390, "height": 844})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.goto((site / "r1" / "index.html").as_uri())
        table = page.locator("#leaderboard-migration table.sortable")
        assert table.count() == 1

        def column(i: int) -> list[str]:
            return table.locator("tbody tr").evaluate_all(
                f"rows => rows.map(r => r.cells[{i}].getAttribute('data-sort'))")

        systems = column(1)
        assert sorted(systems) == ["evil", "gold", "naive"]
        ranks = column(0)
        assert [r for r in ranks if r] == sorted((r for r in ranks if r), key=float), "ranked best first"
        heads = table.locator("thead th")
        assert heads.nth(0).get_attribute("aria-sort") == "ascending"
        heads.nth(1).locator("button").click()
        assert column(1) == sorted(systems) and heads.nth(1).get_attribute("aria-sort") == "ascending"
        assert heads.nth(0).get_attribute("aria-sort") is None
        heads.nth(1).locator("button").click()
        assert column(1) == sorted(systems, reverse=True)
        assert heads.nth(1).get_attribute("aria-sort") == "descending"
        for col in range(2, heads.count()):
            heads.nth(col).locator("button").click()
            for _ in range(2):  # both directions: numbers in order, missing values last
                values = column(col)
                present = [float(v) for v in values if v]
                asc = heads.nth(col).get_attribute("aria-sort") == "ascending"
                assert present == sorted(present, reverse=not asc), (col, values)
                assert values == [v for v in values if v] + [v for v in values if not v], (col, values)
                heads.nth(col).locator("button").click()
        heads.nth(0).locator("button").click()
        assert column(0) == ranks, "back to the ranking"
        box = page.locator("#leaderboard-migration .scroll")
        assert box.evaluate("e => e.scrollWidth - e.clientWidth") <= 1, "the leaderboard fits a phone"
        assert not errors, errors
        browser.close()
