"""The site's own files: the index of every release, static assets and the JSON Schemas."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.fsutil import atomic_write_bytes, atomic_write_text
from evalkit.metrics.registry import MetricInfo
from evalkit.report import charts
from evalkit.report.models import Report
from evalkit.report.page_data import load_report, headline_metrics, status_counts
from evalkit.report.site import list_releases, templates_dir
from evalkit.report.site_env import environment
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit import schemas as schemas_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    schemas_code = later("evalkit.schemas")

def render_index(site: Path, tdir: Path | None = None, cache_dir: Path | None = None) -> Path:
    """site/index.html: every release, newest first, with trend charts of the headline metrics."""
    env = environment(tdir, cache_dir)
    releases = list_releases(site)
    summaries: list[Report] = []
    for r in releases:
        try:
            summaries.append(load_report(site, r))
        except (OSError, ValueError):
            continue
    oldest_first = list(reversed(summaries))
    names = [s.name for rep in summaries for s in rep.systems]
    palette = charts.colours(names)
    infos: dict[str, MetricInfo] = {}
    for rep in oldest_first:
        for i in headline_metrics(rep):
            infos.setdefault(i.name, i)
    trends = []
    for m, info in infos.items():
        series: dict[str, list[Any]] = {}
        for name in palette:
            aggs = []
            for rep in oldest_first:
                s = next((s for s in rep.systems if s.name == name), None)
                aggs.append(s.metrics.get(m) if s else None)
            series[name] = aggs
        fig = charts.trend_figure(info, [r.release for r in oldest_first], series, palette)
        if fig:
            trends.append({"figure": fig, "label": f"Line chart of {info.display} per system across releases",
                           "caption": info.description})
    rows = []
    for rep in summaries:
        c = status_counts(rep.cases, [s.name for s in rep.systems])["total"]
        # in the unit of the page the counts link to (regressions.html): cases per system, not metric moves
        reg = sum(len({(c.suite, c.case_id) for c in d.regressed}) for d in rep.diff.systems.values())
        imp = sum(len({(c.suite, c.case_id) for c in d.improved}) for d in rep.diff.systems.values())
        rows.append({"report": rep, "counts": c, "regressed": reg, "improved": imp})
    page = site / "index.html"
    atomic_write_text(page, env.get_template("index.html.j2").render(
        rows=rows, trends=trends, root="", here="index", releases=releases, palette=palette))
    return page


def _write_if_changed(dest: Path, data: bytes) -> bool:
    if dest.exists() and dest.stat().st_size == len(data) and dest.read_bytes() == data:
        return False
    atomic_write_bytes(dest, data)  # makes the folders (below the site folder only)
    return True


def plotly_js() -> Path:
    import plotly  # deferred: plotly, only when a chart is drawn

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def copy_assets(site: Path, tdir: Path | None = None) -> list[Path]:
    """Static files and the one copy of plotly.js under site/assets/, written only when changed."""
    src = templates_dir(tdir) / "site" / "assets"
    changed = []
    for f in sorted([*src.glob("*"), plotly_js()]):
        if f.is_file() and _write_if_changed(site / "assets" / f.name, f.read_bytes()):
            changed.append(site / "assets" / f.name)
    return changed


def write_site_schemas(site: Path) -> list[Path]:
    """site/schemas/<name>.schema.json: copies of the shipped schemas, written only when changed.

    The shipped files in evalkit/schemas/ are what the models generate (tests/test_schemas.py
    holds them to that), so copying them spares generating ten schemas on every render.
    """


    out = []
    per_kind = sorted(p.name.removesuffix(".schema.json") for p in schemas_code.SCHEMA_DIR.glob("case-*.schema.json"))
    for name in dict.fromkeys([*schemas_code.SCHEMA_NAMES, *per_kind]):  # the case file of each own kind too
        path = site / "schemas" / f"{name}.schema.json"
        _write_if_changed(path, (schemas_code.SCHEMA_DIR / f"{name}.schema.json").read_bytes())
        out.append(path)
    return out
