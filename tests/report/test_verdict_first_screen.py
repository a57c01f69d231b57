"""The release page answers "is this release better than the last one" in its first screen: one verdict
line per suite, against the previous release first and then the baseline, above every table; checked
in real headless Chromium on a desktop and a phone viewport, on a project `evalkit init` made (two
releases, v2 against v1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from zygote import python_m_evalkit

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def release_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} missing: .ci/run installs Debian's chromium")
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium)")
    tmp = tmp_path_factory.mktemp("verdict")
    env = {k: v for k, v in os.environ.items() if k not in ("EVALKIT_CONFIG", "EVALKIT_RELEASE", "EVALKIT_SELECT")}
    env.update(ANTHROPIC_API_KEY="", ANTHROPIC_API_KEYS="")
    for args, cwd in ((["init", "p", "--kind", "migration", "--kind", "generation"], tmp), (["run", "-q"], tmp / "p")):
        proc = python_m_evalkit(args, cwd=cwd, env=env, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp / "p" / "site" / "v2" / "index.html"


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, {"width": 390, "height": 844}])
def test_the_verdict_is_in_the_first_screen(release_page: Path, viewport: dict[str, int]) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport=viewport)  # type: ignore[arg-type]
        page.goto(release_page.as_uri())
        heading = page.locator("#h-verdict")
        assert heading.inner_text() == "Verdict: v2 against v1"
        box = heading.bounding_box()
        assert box is not None and box["y"] + box["height"] <= viewport["height"]
        suites = page.locator("#verdict ul.verdicts > li")
        assert suites.count() == 2
        first = suites.nth(0).bounding_box()
        assert first is not None and first["y"] < viewport["height"]  # the first suite's verdict shows too
        for i in range(2):
            lines = suites.nth(i).locator(".verdict-line")
            assert [lines.nth(j).get_attribute("data-against") for j in range(lines.count())] == ["previous", "baseline"]
            assert lines.nth(0).inner_text().startswith("against v1:")
        # every comparison is still there, folded below the verdict
        assert page.locator("details#decision-details table.decision").count() >= 1
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        browser.close()


def test_canaries_are_not_decisions(release_page: Path) -> None:
    """Canaries do no work in either release: they are neither compared with the previous release nor the baseline."""
    import json

    report = json.loads((release_page.parent / "report.json").read_text())
    canaries = {s["name"] for s in report["systems"] if s["adapter"] == "canary"}
    assert canaries  # init turns them on
    against = {(d["system"], d["against"]) for d in report["decision"]["decisions"]}
    assert {a for s, a in against} == {"previous", "baseline"}
    assert not {s for s, _ in against} & canaries


def test_the_index_counts_what_the_page_it_links_to_counts(release_page: Path) -> None:
    """The site index's "▼ N cases worse, ▲ M better" are the regressions page's case counts, summed over systems
    (they were metric moves, while the page counts cases)."""
    import re

    site = release_page.parents[1]
    index = (site / "index.html").read_text(encoding="utf-8")
    worse, better = map(int, re.search(r"▼ (\d+) cases? worse</span>, <span[^>]*>▲ (\d+) better", index).groups())
    page = (site / "v2" / "regressions.html").read_text(encoding="utf-8")
    counts: dict[str, int] = {"▼": 0, "▲": 0}
    for sym, n in re.findall(r'<h3><span class="delta \w+">(.)</span> [^:]+: (\d+) cases?', page):
        counts[sym] += int(n)
    assert (worse, better) == (counts["▼"], counts["▲"])
    assert better > 0  # v2's assistants improved cases


def test_cost_and_time_against_the_previous_release_with_intervals(release_page: Path) -> None:
    """#30: the verdict line of each suite gives cost and time against the previous release with their 95%
    intervals (evalkit.total_change), and report.json holds them."""
    import json
    import re

    report = json.loads((release_page.parent / "report.json").read_text())
    changes = report["decision"]["changes"]
    suites = [s["name"] for s in report["suites"]]
    assert sorted((c["suite"], c["metric"]) for c in changes) == sorted((s, m) for s in suites
                                                                        for m in ("cost_usd", "wall_s"))
    canaries = {s["name"] for s in report["systems"] if s["adapter"] == "canary"}
    for c in changes:
        assert c["reference"] == "v1" and c["systems"] and not set(c["systems"]) & canaries
        ch = c["change"]
        assert ch["n_cases"] >= 2 and ch["difference"] == pytest.approx(ch["after"] - ch["before"], abs=1e-6)
        assert ch["difference_low"] <= ch["difference_high"]
    html = release_page.read_text(encoding="utf-8")
    for suite in suites:
        item = re.search(rf'<li data-suite="{suite}">(.*?)</li>', html, re.S)
        assert item is not None
        previous = re.search(r'data-against="previous">(.*?)</span>\s*(?:<span class="verdict-line"|$)', item.group(1), re.S)
        assert previous is not None
        text = re.sub(r"<[^>]+>", "", previous.group(1))
        assert re.search(r"cost (\$0\.0000 in both|[+−-]\S+ ≈?\[)", text), text
        assert re.search(r"time [+−-][\d.]+(%| s) ≈?\[[^\]]+\] \(", text), text


def test_no_page_of_two_releases_prints_a_float_in_full(release_page: Path) -> None:
    """#30: significant digits on every page, the release-against-release ones too (verdict line, regressions,
    the comparison of v1 and v2), not only those of one release."""
    from helpers import long_floats

    site = release_page.parents[1]
    assert len(list(site.rglob("*.html"))) > 20
    assert not long_floats(site), long_floats(site)
