"""What the release, suite and index pages show, computed once per page from report.json."""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from evalkit.metrics.registry import MetricInfo
from evalkit.metrics.registry import primary_metric as registry_primary
from evalkit.report import charts
from evalkit.report.models import CaseRow, ReleaseDiff, Report, SuiteSummary, read_report
from evalkit.stats import PairedComparison

STATUS_ORDER = ("ok", "error", "timeout", "infra_error", "bug", "broken", "skipped", "not_attempted")


def load_report(site: Path, release: str) -> Report:
    """report.json of a release, parsed once per process while the file is unchanged (the release
    pages, the site index and the run's summary all need it: evalkit.report.models.read_report)."""
    return read_report(site / release / "report.json")


# ---- what the pages show, computed once ---------------------------------------------------------

def headline_metrics(report: Report) -> list[MetricInfo]:
    """Headline metrics present in the report: quality first, then cost and time."""
    infos = [i for i in report.metric_info.values() if i.headline]
    return [i for i in infos if i.higher_is_better is not False] + [i for i in infos if i.higher_is_better is False]


def primary_metric(metrics: list[str]) -> str | None:
    """The one metric shown per cell in a suite's case list (the registry's ranking)."""
    return registry_primary({m: 1.0 for m in metrics})


def status_counts(rows: list[CaseRow], systems: list[str]) -> dict[str, Counter]:
    """System -> counts of statuses and exclusions over the rows (`total` is the grand total).

    A broken case is a problem of the case, not of the systems: its cells count as ``broken`` (never as a
    failed run, ``error``), and the total counts it once, not once per system."""
    counts: dict[str, Counter] = {s: Counter() for s in systems}
    total = counts["total"] = Counter()
    for row in rows:
        broken_case = False
        for name, cell in row.systems.items():
            mine = counts.get(name)
            if mine is None:
                mine = counts[name] = Counter()
            broken = cell.excluded == "broken" or cell.status == "broken"
            broken_case = broken_case or broken
            status = "broken" if broken else cell.status
            if status:
                mine[status] += 1
                if status != "broken":
                    total[status] += 1
            if cell.excluded and not broken:
                excluded = f"excluded:{cell.excluded}"
                mine[excluded] += 1
                total[excluded] += 1
            mine["cells"] += 1
            total["cells"] += 1
        if broken_case:
            counts["total"]["broken"] += 1
    return counts


def comparison_index(suites: list[SuiteSummary]) -> dict[tuple[str, str, str], Any]:
    """(suite, system, metric) -> PairedComparison."""
    return {(s.name, c.system, c.metric): c for s in suites for c in s.comparisons}


def judgement(c: PairedComparison, info: MetricInfo | None) -> str:
    """better / worse / same / unknown for a comparison, in the metric's direction."""
    d = c.difference.value
    if info is None or info.higher_is_better is None or d is None or abs(d) < 1e-12:
        return "same"
    return "better" if (d > 0) == info.higher_is_better else "worse"


def per_case_values(rows: list[CaseRow], system: str, metric: str) -> list[float]:
    out = []
    for row in rows:
        cell = row.systems.get(system)
        if cell is None or cell.excluded:
            continue
        v = cell.metrics.get(metric)
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            out.append(float(v))
    return out


def release_charts(report: Report, rows: list[CaseRow], aggregates: list[tuple[str, dict[str, Any]]],
                   metric_names: list[str], palette: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """The rates chart and one distribution chart per headline score, for a set of systems."""
    info = report.metric_info
    out: list[dict[str, Any]] = []
    rate_metrics = [info[m] for m in metric_names if m in info and info[m].aggregate == "rate"]
    fig = charts.rates_figure(aggregates, rate_metrics, palette)
    if fig:
        out.append({"figure": fig, "caption": "Share of cases per rate metric; the black bars are 95% Wilson "
                                              "intervals. The same numbers are in the table above.",
                    "label": "Bar chart of rates per system"})
    for m in metric_names:
        i = info.get(m)
        if i is None or not i.headline or i.aggregate != "mean" or i.scale == "any":
            continue
        fig = charts.distribution_figure(i, [(name, per_case_values(rows, name, m)) for name, _ in aggregates],
                                         palette)
        if fig:
            out.append({"figure": fig, "caption": f"{i.display} per case: box from the first to the third "
                                                  f"quartile, line at the median, dashed line at the mean, whiskers "
                                                  f"to the furthest value within 1.5 IQR. {i.description}",
                        "label": f"Box plot of {i.display} per system"})
    return out


def exists_in(site: Path, release: str | None, suite: str, case_id: str) -> bool:
    return bool(release) and os.path.exists(os.path.join(site, str(release), "cases", suite, f"{case_id}.json"))


def case_lookup(site: Path) -> Callable[[str | None, str, str], bool]:
    """``exists(release, suite, case_id)``: whether a release has the case's JSON, reading each
    (release, suite) folder once (a page listing thousands of moved cases asks twice per case)."""
    listed: dict[tuple[str, str], set[str]] = {}

    def exists(release: str | None, suite: str, case_id: str) -> bool:
        if not release:
            return False
        names = listed.get((release, suite))
        if names is None:
            try:
                names = set(os.listdir(os.path.join(site, release, "cases", suite)))
            except OSError:
                names = set()
            listed[(release, suite)] = names
        return f"{case_id}.json" in names

    return exists


def regression_groups(site: Path, report: Report, diff: ReleaseDiff | None = None,
                      exists: Callable[[str | None, str, str], bool] | None = None) -> list[dict[str, Any]]:
    """Per system: worse and better cases, one entry per case with every metric that moved.

    ``diff`` (a ReleaseDiff of any earlier release against ``report``; default: the report's own
    against the previous release) lets `evalkit.report.compare_page` group any pair the same way;
    ``exists(release, suite, case_id)`` says whether a release has the case's page (default: its JSON is there)."""
    diff = report.diff if diff is None else diff
    exists = exists or case_lookup(site)
    prev = diff.previous_release
    out = []
    for system, d in diff.systems.items():
        entry: dict[str, Any] = {"system": system}
        for key, items in (("regressed", d.regressed), ("improved", d.improved)):
            cases: dict[tuple[str, str], dict[str, Any]] = {}
            for c in items:
                e = cases.setdefault((c.suite, c.case_id), {
                    "suite": c.suite, "case_id": c.case_id, "changes": [],
                    "here": exists(report.release, c.suite, c.case_id),
                    "before": exists(prev, c.suite, c.case_id)})
                e["changes"].append(c)
            entry[key] = sorted(cases.values(), key=lambda e: (e["suite"], e["case_id"]))
        out.append(entry)
    return out
