"""The report in real headless Chromium (Debian's package, driven by Playwright; no browser download).

Builds a small site, adds a recorded system whose output carries script payloads, then crawls every
page from site/index.html over http on 127.0.0.1: no console error, no failed request, every
internal link resolves, the payloads stay text, and no dialog opens.
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
                for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
                    target = urljoin(url, href)
                    parsed = urlparse(target)
                    assert parsed.scheme in ("http", "https", "javascript", "mailto") or href.startswith("#"), href
                    assert parsed.scheme != "javascript", f"{url} links to {href}"
                    if target.startswith(base):
                        queue.append(target.split("#", 1)[0])
            assert not errors, errors
            assert not dialogs, dialogs
            pages = [u for u in seen if u.endswith(".html")]
            assert len(pages) == 5, pages  # site index, release, regressions, 2 case pages
            evil = urljoin(base, "r1/cases/migration/jpa-entity.html")
            page.goto(evil)
            assert PAYLOAD[:40] in page.inner_text("body")  # shown as text
            assert page.locator("#evil").count() == 0 and page.locator("img[src=x]").count() == 0
            page.screenshot(path=str(SHOTS / "case.png"), full_page=True)
            page.goto(urljoin(base, "r1/index.html"))
            page.screenshot(path=str(SHOTS / "release.png"), full_page=True)
            page.goto(urljoin(base, "index.html"))
            page.screenshot(path=str(SHOTS / "index.png"), full_page=True)
            page.set_viewport_size({"width": 390, "height": 844})
            page.goto(urljoin(base, "r1/index.html"))
            overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 1, f"horizontal page scroll of {overflow}px at phone width"
            assert page.evaluate("window.__pwned") is None
            browser.close()
    finally:
        httpd.shutdown()
