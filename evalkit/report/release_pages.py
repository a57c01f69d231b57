"""The pages of one release besides its case pages: the release summary, suite pages, regressions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import json
import math
from pathlib import Path

from evalkit.fsutil import atomic_write_text, digest, remove
from evalkit.report import charts
from evalkit.report.case_pages import remove_gone_cases, render_cases
from evalkit.report.leaderboard import leaderboards, overview
from evalkit.report.page_data import (load_report, comparison_index, headline_metrics, judgement, primary_metric,
                                      regression_groups, release_charts, status_counts)
from evalkit.report.release_diff import current_diff
from evalkit.report.site import list_releases, templates_dir
from evalkit.report.site_env import environment
from evalkit.kind_registry import code_stamp as kinds_code_stamp
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.report import compare_page as compare_page_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    compare_page_code = later("evalkit.report.compare_page")

PAGE_INDEX = ".pages.json"  # not published content: the manifest skips dot-files
CASES_PER_PAGE = 500  # a suite's case list is split into pages of this many cases (each page well under 1 MB)

def suite_page_name(suite: str, page: int) -> str:
    """suites/<suite>.html holds the summary and the first CASES_PER_PAGE cases; <suite>.cases-<k>.html the k-th."""
    return f"{suite}.html" if page == 1 else f"{suite}.cases-{page}.html"


def render_release(site: Path, release: str, tdir: Path | None = None, cache_dir: Path | None = None,
                   workers: int | None = None) -> list[Path]:
    """Every page of one release. Returns the pages written. ``workers``: processes for the case pages
    (default: `case_workers`)."""
    env = environment(tdir, cache_dir)
    report = load_report(site, release)
    out_dir = site / release
    releases = list_releases(site)
    names = [s.name for s in report.systems]
    palette = charts.colours(names)
    counts = status_counts(report.cases, names)
    comps = comparison_index(report.suites)
    comps.update({(f"scenario:{g.name}", c.system, c.metric): c for g in report.scenarios for c in g.comparisons})
    headline = headline_metrics(report)
    overall_suite = report.suites[0].name if len(report.suites) == 1 else None
    show_cpr = any(s.cost_per_resolved is not None for s in report.systems)
    nav = {"releases": releases, "palette": palette, "counts": counts, "comps": comps, "judgement": judgement,
           "show_cpr": show_cpr}

    def other_pages() -> list[Path]:
        """The release page, suite pages, regressions and the comparison with the previous release:
        rendered here while forked workers render the case pages."""

        written: list[Path] = []
        suite_rows = {s.name: [r for r in report.cases if r.suite == s.name] for s in report.suites}
        headline_names = {i.name for i in headline}
        suite_charts = {s.name: release_charts(report, suite_rows[s.name], list(s.systems.items()),
                                               [m for m in s.metrics if m in headline_names], palette)
                        for s in report.suites}
        boards = leaderboards(report)
        groups, overview_note = overview(list(boards.values()), report.cases, report.metric_info)
        ctx = {"report": report, "root": "../", "here": "release", "headline": headline, "suite_charts": suite_charts,
               "overall_suite": overall_suite, "suite_rows": suite_rows, "leaderboards": list(boards.values()),
               "overview_groups": groups, "overview_note": overview_note, **nav}
        page = out_dir / "index.html"
        atomic_write_text(page, env.get_template("release.html.j2").render(**ctx))
        written.append(page)

        for suite in report.suites:
            rows = suite_rows[suite.name]
            page_charts = release_charts(report, rows, list(suite.systems.items()), suite.metrics, palette)
            n_pages = max(1, math.ceil(len(rows) / CASES_PER_PAGE))
            for k in range(1, n_pages + 1):
                page = out_dir / "suites" / suite_page_name(suite.name, k)
                atomic_write_text(page, env.get_template("suite.html.j2").render(
                    report=report, suite=suite, rows=rows[(k - 1) * CASES_PER_PAGE:k * CASES_PER_PAGE],
                    charts=page_charts if k == 1 else [], root="../../", here="suite", primary=primary_metric(suite.metrics),
                    page_no=k, n_pages=n_pages, first_case=(k - 1) * CASES_PER_PAGE + 1, n_rows=len(rows),
                    suite_page_name=suite_page_name, leaderboards=[boards[suite.name]], overview_groups=[],
                    overview_note="", show_suite_heading=False, **nav))
                written.append(page)
            for stale in (out_dir / "suites").glob(f"{suite.name}.cases-*.html"):
                if stale not in written:
                    remove(stale)

        page = out_dir / "regressions.html"

        diff = current_diff(site, report)  # the regressions page and the comparison page show the same moves
        moves = regression_groups(site, report, diff)
        n_moved = compare_page_code.cases_moved(moves)
        compare_page_code.largest_first(moves, compare_page_code.PAGE_ROWS)
        atomic_write_text(page, env.get_template("regressions.html.j2").render(
            report=report, diff=diff, groups=moves, limit=compare_page_code.PAGE_ROWS, root="../", here="regressions",
            **nav))
        written.append(page)
        prev = diff.previous_release
        if prev and prev in releases:  # site/compare/<previous>..<release>.html (others: `evalkit compare A B`)
            written.append(compare_page_code.render_comparison(
                site, prev, release, tdir, cache_dir, loaded=report,
                moved=compare_page_code.Moved(diff=diff, groups=moves, n_cases=n_moved)))
        return written

    index_path = out_dir / "cases" / PAGE_INDEX
    try:
        old_index = json.loads(index_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        old_index = {}

    tfiles = sorted(p for p in (templates_dir(tdir) / "site").rglob("*") if p.is_file())
    shared = digest([[(str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in tfiles], releases,
                     [s.name for s in report.systems], report.baseline, report.diff.previous_release,
                     {k: v.model_dump(mode="json") for k, v in report.metric_info.items()}, __file__,
                     Path(__file__).stat().st_mtime_ns,
                     [Path(__file__).with_name(f).stat().st_mtime_ns  # the case page's code
                      for f in ("case_pages.py", "case_markup.py", "site_env.py", "panel.py")],
                     (Path(__file__).parents[1] / "kinds" / "page_parts.py").stat().st_mtime_ns,  # the kinds' page helpers
                     kinds_code_stamp()])  # the suite kinds' modules and partials
    index, pages = render_cases(env, site, report, nav, shared, old_index, workers, meanwhile=other_pages)
    remove_gone_cases(site, report, old_index, index)  # pages of cases no longer in the project
    atomic_write_text(index_path, json.dumps(index, sort_keys=True))
    return pages
