"""render: Jinja pages of one release (and the site index) from report.json and the per-case JSON.

Reads only what summarize wrote under site/<release>/, so old releases re-render without
rerunning anything. Autoescape is on: every string from a case or a system is shown as text.
"""

from __future__ import annotations

import difflib
import json
import math
from pathlib import Path
from typing import Any

from jinja2 import ChainableUndefined, Environment, FileSystemLoader, select_autoescape

from evalkit.fsutil import atomic_write_text, digest
from evalkit.metrics.registry import METRICS, MetricInfo, primary_metric
from evalkit.report.models import CaseDetail, Report
from evalkit.report.site import list_releases, templates_dir, update_manifest

LOG_PREVIEW = 4000
PAGE_INDEX = ".pages.json"  # not published content: the manifest skips dot-files


def environment(tdir: Path | None = None) -> Environment:
    env = Environment(loader=FileSystemLoader(str(templates_dir(tdir) / "site")),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=ChainableUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = fmt_value
    env.filters["pct"] = lambda v: "–" if v is None else f"{100 * v:.0f}%"
    env.globals["METRICS"] = METRICS
    env.globals["primary_metric"] = primary_metric
    env.globals["diff_lines"] = diff_lines
    env.globals["truncate_log"] = truncate_log
    return env


def fmt_value(value: float | None, metric: str | MetricInfo | None = None) -> str:
    """A metric value as people read it: 73%, 3.40, 1.2 s, $0.0123."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    info = METRICS.get(metric) if isinstance(metric, str) else metric
    if info is None:
        return f"{value:.3g}"
    if info.unit == "USD":
        return f"${value:.4f}"
    if info.unit == "s":
        return f"{value:.2f} s"
    if info.unit == "tokens" or info.scale == "count":
        return f"{value:,.0f}"
    if info.aggregate == "rate" or info.scale == "0-1":
        return f"{100 * value:.1f}%" if info.aggregate == "rate" else f"{value:.3f}"
    return f"{value:.2f}"


def diff_lines(before: str | None, after: str | None, name: str = "file") -> list[tuple[str, str]]:
    """(css class, line) pairs of a unified diff, for showing an output against the legacy code."""
    if before is None or after is None:
        return []
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{name}", f"b/{name}", lineterm="", n=3)
    out = []
    for line in lines:
        cls = "add" if line.startswith("+") and not line.startswith("+++") else \
              "del" if line.startswith("-") and not line.startswith("---") else \
              "hunk" if line.startswith("@@") else "ctx"
        out.append((cls, line))
    return out


def truncate_log(text: str | None, limit: int = LOG_PREVIEW) -> tuple[str, bool]:
    text = text or ""
    return (text[-limit:], True) if len(text) > limit else (text, False)


def _load_report(site: Path, release: str) -> Report:
    return Report.model_validate_json((site / release / "report.json").read_bytes())


def render_release(site: Path, release: str, tdir: Path | None = None) -> list[Path]:
    """Every page of one release. Returns the pages written."""
    env = environment(tdir)
    report = _load_report(site, release)
    out_dir = site / release
    written = []
    releases = list_releases(site)
    ctx = {"report": report, "releases": releases, "root": "../", "here": "release"}
    page = out_dir / "index.html"
    atomic_write_text(page, env.get_template("release.html.j2").render(**ctx))
    written.append(page)
    page = out_dir / "regressions.html"
    atomic_write_text(page, env.get_template("regressions.html.j2").render(**ctx))
    written.append(page)
    case_tpl = env.get_template("case.html.j2")
    # A case page is a function of its case JSON, its report row, the templates and the report's
    # systems and metric metadata: an index of those lets a one-case change render one page.
    index_path = out_dir / "cases" / PAGE_INDEX
    try:
        old_index = json.loads(index_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        old_index = {}
    tfiles = sorted(p for p in (templates_dir(tdir) / "site").rglob("*") if p.is_file())
    shared = digest([[(str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in tfiles], releases,
                     [s.name for s in report.systems], sorted(report.metric_info)])
    index = {}
    for row in report.cases:
        data_path = out_dir / "cases" / row.suite / f"{row.case_id}.json"
        if not data_path.exists():
            continue
        st = data_path.stat()
        key = digest([shared, st.st_mtime_ns, st.st_size, row.model_dump(mode="json")])
        page = data_path.with_suffix(".html")
        index[f"{row.suite}/{row.case_id}"] = key
        if old_index.get(f"{row.suite}/{row.case_id}") == key and page.exists():
            continue
        detail = CaseDetail.model_validate_json(data_path.read_bytes())
        atomic_write_text(page, case_tpl.render(report=report, case=detail, row=row, root="../../../",
                                                here="case", releases=releases))
        written.append(page)
    atomic_write_text(index_path, json.dumps(index, sort_keys=True))
    return written


def render_index(site: Path, tdir: Path | None = None) -> Path:
    """site/index.html: every release, newest first."""
    env = environment(tdir)
    releases = list_releases(site)
    summaries = []
    for r in releases:
        try:
            summaries.append(_load_report(site, r))
        except (OSError, ValueError):
            continue
    page = site / "index.html"
    atomic_write_text(page, env.get_template("index.html.j2").render(reports=summaries, root="", here="index",
                                                                     releases=releases))
    return page


def render_site(site: Path, release: str, tdir: Path | None = None) -> Path:
    """Render one release, the index, copy static assets, update the manifest."""
    render_release(site, release, tdir)
    copy_assets(site, tdir)
    update_manifest(site, release)
    render_index(site, tdir)
    return site / release / "index.html"


def copy_assets(site: Path, tdir: Path | None = None) -> None:
    src = templates_dir(tdir) / "site" / "assets"
    for f in sorted(src.glob("*")):
        dest = site / "assets" / f.name
        data = f.read_bytes()
        if not dest.exists() or dest.read_bytes() != data:
            dest.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(dest, data.decode("utf-8"))


def json_for_script(obj: Any) -> str:
    """JSON safe to embed in a <script> block (no closing tags)."""
    return json.dumps(obj, sort_keys=True).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
