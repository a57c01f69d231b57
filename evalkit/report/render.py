"""render: Jinja pages of one release (and the site index) from report.json and the per-case JSON.

Reads only what summarize wrote under site/<release>/, so old releases re-render without
rerunning anything. Autoescape is on: every string from a case or a system is shown as text,
charts are JSON in `<script type="application/json">` (escaped by `tojson`) and every href is
built from names the config and case loader validated, percent-encoded once more.

Pages of a release:

    site/index.html                          every release, newest first, trend charts
    site/<release>/index.html                summary: counts, systems x headline metrics, charts, suites
    site/<release>/suites/<suite>.html       one suite: leaderboard, every metric, paired comparisons, cases 1-500
    site/<release>/suites/<suite>.cases-<k>.html   the suite's k-th page of 500 cases (large suites)
    site/<release>/cases/<suite>/<case>.html          one case: inputs, each system's output and grades; two
                                                      systems side by side with ?compare (or ?a=SYS&b=SYS)
    site/<release>/cases/<suite>/<case>.<system>.log.txt  full test log, when the page shows only its end
    site/<release>/regressions.html          per system, cases worse / better than the previous release
    site/compare/<a>..<b>.html               any two releases compared (evalkit.report.compare_page)
    site/assets/                             style.css, charts.js, compare.js, plotly.min.js (one copy)
    site/schemas/*.schema.json               JSON Schemas of report.json, the case JSON, ...

Where the code is: evalkit.report.site_env (Jinja environment, filters, badges), page_data (what the
pages show, computed from report.json), case_pages (case pages, test logs, forked workers),
release_pages (release summary, suite pages, regressions), site_index (site index, assets, schemas),
panel and evalkit.kinds.<kind>.page (one system's panel, per-kind case details). This module renders a whole site.
"""

from __future__ import annotations

from pathlib import Path

from evalkit import collector
from evalkit.report.case_pages import (CaseDetail, case_pages, case_templates, case_workers, render_cases, system_view,
                                       write_logs)
from evalkit.report.page_data import (STATUS_ORDER, load_report, case_lookup, comparison_index, headline_metrics,
                                      judgement, per_case_values, primary_metric, regression_groups, release_charts,
                                      status_counts)
from evalkit.report.release_pages import CASES_PER_PAGE, PAGE_INDEX, render_release, suite_page_name
from evalkit.report.site import update_manifest
from evalkit.report.site_env import (LOG_PREVIEW, diff_html, diff_lines, environment, fmt_difference, fmt_value,
                                     json_for_script, line_class, metric_rows_html, metric_value, pass_badge,
                                     status_badge, test_rows_html, truncate_log, uncalibrated_mark)
from evalkit.report.site_index import copy_assets, plotly_js, render_index, write_site_schemas

def render_site(site: Path, release: str, tdir: Path | None = None, cache_dir: Path | None = None,
                workers: int | None = None) -> Path:
    """Render one release, the index, copy static assets and schemas, update the manifest.

    ``cache_dir`` keeps compiled templates between runs (see `environment`); ``workers``: processes
    rendering the case pages (default: `case_workers`).
    """
    site = Path(site)
    # The cycle collector off throughout (evalkit.collector): the reports read live until the end, and each collection
    # scanned them all again (a third of reading a previous release and diffing it with this one, four fifths of the
    # site index's first render at 10,000 cases); the pages leave next to no cycles (9,000 case pages rendered with it
    # off left 702 objects for it), and a forked worker exits after its pages.
    with collector.paused():
        copy_assets(site, tdir)
        write_site_schemas(site)
        render_release(site, release, tdir, cache_dir, workers)
        update_manifest(site, release)
        render_index(site, tdir, cache_dir)
    return site / release / "index.html"


__all__ = ["CASES_PER_PAGE", "CaseDetail", "LOG_PREVIEW", "PAGE_INDEX", "STATUS_ORDER", "load_report", "case_lookup",
           "case_pages", "case_templates", "case_workers", "comparison_index", "copy_assets", "diff_html",
           "diff_lines", "environment", "fmt_difference", "fmt_value", "headline_metrics", "json_for_script",
           "judgement", "line_class", "metric_rows_html", "metric_value", "pass_badge", "per_case_values",
           "plotly_js", "primary_metric", "regression_groups", "release_charts", "render_cases", "render_index",
           "render_release", "render_site", "status_badge", "status_counts", "suite_page_name", "system_view",
           "test_rows_html", "truncate_log", "uncalibrated_mark", "write_logs", "write_site_schemas"]
