"""charts: the report's plotly figures as small JSON-ready dicts (no plotly.js inside).

Pages embed each figure as `<script type="application/json">` (Jinja's `tojson`, which escapes
`<`, `>`, `&` and `'`) and `assets/charts.js` draws it with the one shared `assets/plotly.min.js`.
Figures are built as plain dicts in the shape of plotly's figure JSON: building a
`plotly.graph_objects.Figure` validates every property and costs milliseconds per chart, which
the 1,000-case benchmark notices. Labels that come from systems or cases go through
:func:`label`, because plotly reads a few HTML-like tags (`<a href>`, `<b>`) in text.
"""

from __future__ import annotations

import html
import math
import re
import statistics
from typing import Any, Iterable

from evalkit.metrics.registry import MetricInfo

# Okabe–Ito, in an order where neighbours differ in lightness as well as hue; symbols add a
# second, colour-free cue.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442"]
SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "triangle-down", "cross", "star"]
FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12}


def label(text: object) -> str:
    """An untrusted string as inert plotly text (entities, so plotly shows the characters)."""
    return html.escape(str(text), quote=True)


def colours(names: Iterable[str]) -> dict[str, dict[str, str]]:
    """A stable colour and marker symbol per system, in the order given."""
    return {n: {"color": PALETTE[i % len(PALETTE)], "symbol": SYMBOLS[i % len(SYMBOLS)]}
            for i, n in enumerate(dict.fromkeys(names))}


def _num(v: float | None, info: MetricInfo | None = None) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if info is not None and info.aggregate == "rate":
        v = 100 * v
    return round(float(v), 6)


def _layout(title: str, yaxis: dict[str, Any], height: int = 300, **kw: Any) -> dict[str, Any]:
    return {"title": {"text": label(title), "x": 0, "xanchor": "left", "font": {"size": 14}},
            "height": height, "margin": {"l": 56, "r": 12, "t": 40, "b": 48}, "font": FONT,
            "paper_bgcolor": "#fff", "plot_bgcolor": "#fff", "yaxis": {"gridcolor": "#e5e5e5", "zeroline": False,
                                                                      "automargin": True, **yaxis},
            "legend": {"orientation": "h", "y": -0.2, "x": 0}, **kw}


def axis_title(info: MetricInfo) -> str:
    unit = "%" if info.aggregate == "rate" else info.unit
    direction = " (higher is better)" if info.higher_is_better else " (lower is better)" \
        if info.higher_is_better is False else ""
    return f"{info.display}{' in ' + unit if unit else ''}{direction}"


def rates_figure(systems: list[tuple[str, dict[str, Any]]], metrics: list[MetricInfo],
                 palette: dict[str, dict[str, str]]) -> dict[str, Any] | None:
    """Horizontal grouped bars: every rate metric per system, with the interval as error bars.

    ``systems`` is [(name, {metric: Aggregate})]; a system without a value for any of the
    metrics is left out.
    """
    systems = [(n, a) for n, a in systems if any(a.get(i.name) is not None and a[i.name].value is not None
                                                  for i in metrics)]
    if not metrics or not systems:
        return None
    data = []
    for name, aggs in systems:
        xs, plus, minus = [], [], []
        for info in metrics:
            a = aggs.get(info.name)
            v = _num(a.value if a else None, info)
            xs.append(v)
            lo, hi = (_num(a.low, info), _num(a.high, info)) if a is not None else (None, None)
            plus.append(round(hi - v, 6) if v is not None and hi is not None else 0)
            minus.append(round(v - lo, 6) if v is not None and lo is not None else 0)
        data.append({"type": "bar", "orientation": "h", "name": label(name), "y": [label(i.display) for i in metrics],
                     "x": xs, "marker": {"color": palette[name]["color"]},
                     "error_x": {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus,
                                 "color": "#333", "thickness": 1.2, "width": 3},
                     "hovertemplate": "%{y}: %{x:.1f}%<extra>" + label(name) + "</extra>"})
    height = 110 + 16 * len(metrics) * len(systems) + 14 * len(metrics)
    lay = _layout("Rates with 95% intervals", {"autorange": "reversed", "type": "category"}, height=height,
                  barmode="group", bargap=0.25, xaxis={"title": {"text": "% of cases"}, "range": [0, 102],
                                                       "gridcolor": "#e5e5e5"})
    lay["legend"] = {"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom", "traceorder": "normal"}
    lay["margin"] = {"l": 12, "r": 12, "t": 64, "b": 40}
    lay["title"]["y"] = 0.98
    lay["title"]["yanchor"] = "top"
    return {"data": data, "layout": lay}


def _quartiles(values: list[float]) -> dict[str, float]:
    vs = sorted(values)
    if len(vs) == 1:
        q1 = med = q3 = vs[0]
    else:
        q1, med, q3 = statistics.quantiles(vs, n=4, method="inclusive")
    iqr = q3 - q1
    lo = min(v for v in vs if v >= q1 - 1.5 * iqr)
    hi = max(v for v in vs if v <= q3 + 1.5 * iqr)
    return {"q1": q1, "median": med, "q3": q3, "lowerfence": lo, "upperfence": hi, "mean": statistics.fmean(vs)}


def distribution_figure(info: MetricInfo, per_system: list[tuple[str, list[float]]],
                        palette: dict[str, dict[str, str]]) -> dict[str, Any] | None:
    """Box plots (precomputed quartiles, so the page stays small at any case count) per system."""
    per_system = [(n, vs) for n, vs in per_system if vs]
    if not per_system:
        return None
    data = []
    for name, values in per_system:
        q = {k: round(v, 6) for k, v in _quartiles(values).items()}
        data.append({"type": "box", "name": label(name), "y": [label(name)], "orientation": "h",
                     **{k: [v] for k, v in q.items()}, "boxmean": True,
                     "marker": {"color": palette[name]["color"]}, "line": {"color": palette[name]["color"]},
                     "fillcolor": palette[name]["color"] + "55", "showlegend": False,
                     "hovertemplate": f"{label(name)} (n={len(values)})<br>median %{{median:.3f}}<br>"
                                      "mean %{mean:.3f}<extra></extra>"})
    height = 90 + 44 * len(data)
    scale_range = {"0-1": [0, 1.02], "1-5": [0.9, 5.1], "0-5": [0, 5.1]}.get(info.scale) or _padded(info.scale, 0.025, 0.025)
    lay = _layout(f"{info.display}: spread over cases", {"autorange": "reversed", "type": "category"}, height=height,
                  xaxis={"title": {"text": label(axis_title(info))}, "gridcolor": "#e5e5e5", "zeroline": False,
                         **({"range": scale_range} if scale_range else {})})
    lay["margin"] = {"l": 12, "r": 12, "t": 40, "b": 48}
    return {"data": data, "layout": lay}


def _padded(scale: str, below: float, above: float) -> list[float] | None:
    """The axis range of a numeric scale such as "0-10" (a judge rubric's), padded by shares of its span."""

    found = re.fullmatch(r"(-?\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)", scale)
    if found is None:
        return None
    low, high = float(found[1]), float(found[2])
    span = high - low
    return [low - below * span if low else 0.0, high + above * span] if span > 0 else None


def trend_figure(info: MetricInfo, releases: list[str], series: dict[str, list[Any]],
                 palette: dict[str, dict[str, str]]) -> dict[str, Any] | None:
    """One headline metric per system across releases (oldest first), with interval bars.

    ``series`` maps system -> one Aggregate (or None) per release.
    """
    if not series:
        return None
    data = []
    for name, aggs in series.items():
        ys, plus, minus = [], [], []
        for a in aggs:
            v = _num(a.value if a else None, info)
            ys.append(v)
            hi = _num(a.high, info) if a is not None else None
            lo = _num(a.low, info) if a is not None else None
            plus.append(round(hi - v, 6) if v is not None and hi is not None else 0)
            minus.append(round(v - lo, 6) if v is not None and lo is not None else 0)
        if all(y is None for y in ys):
            continue
        data.append({"type": "scatter", "mode": "lines+markers", "name": label(name),
                     "x": [label(r) for r in releases], "y": ys, "connectgaps": False,
                     "line": {"color": palette[name]["color"], "width": 2},
                     "marker": {"color": palette[name]["color"], "symbol": palette[name]["symbol"], "size": 8},
                     "error_y": {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus,
                                 "color": palette[name]["color"], "thickness": 1, "width": 3}})
    if not data:
        return None
    unit = "%" if info.aggregate == "rate" else info.unit
    yaxis: dict[str, Any] = {"title": {"text": label(unit or info.scale)}, "rangemode": "tozero"}
    if info.aggregate == "rate":
        yaxis["range"] = [0, 105]
    elif info.scale in ("0-1", "1-5", "0-5"):
        yaxis["range"] = {"0-1": [0, 1.05], "1-5": [1, 5.2], "0-5": [0, 5.2]}[info.scale]
    elif (bounds := _padded(info.scale, 0, 0.05)) is not None:  # a judge rubric's own range, e.g. 0-10
        yaxis["range"] = bounds
    return {"data": data, "layout": _layout(axis_title(info), yaxis, height=280,
                                            xaxis={"type": "category", "automargin": True})}
