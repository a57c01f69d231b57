"""The site's Jinja environment and what its templates call: badges, number formats, diffs, logs.

One environment per (templates folder, cache folder) and process; its filters (``fmt``, ``pct``,
``signed``, ``pval``, ``raw``) and globals (``status_badge``, ``pass_badge``, ``diff_html``, ...) are the
functions below, which the system panel (evalkit.report.panel) calls directly too.
"""

from __future__ import annotations

import difflib
import json
import math
from pathlib import Path
from types import CodeType
from collections.abc import Iterable, Mapping
from typing import Any

from jinja2 import Environment, FileSystemBytecodeCache, FileSystemLoader, StrictUndefined, select_autoescape
from jinja2.bccache import Bucket
from jinja2.utils import url_quote
from markupsafe import Markup

from evalkit.difflines import line_class
from evalkit.report.escaping import esc
from evalkit.fsutil import ensure_dir
from evalkit.kind_registry import template_dirs
from evalkit.metrics.registry import METRICS, MetricInfo
from evalkit.report.site import templates_dir
from evalkit.report.verdict import untestable_reason, verdict
from evalkit.stats import APPROXIMATE_BELOW
from evalkit.total_change import TotalChange

LOG_PREVIEW = 4000
"""Characters of a test log shown on the case page (the whole log is a .txt beside it)."""

_ENVIRONMENTS: dict[tuple[str, str | None], Environment] = {}


def environment(tdir: Path | None = None, cache_dir: Path | None = None) -> Environment:
    """The site's Jinja environment, one per (templates folder, cache folder) and process.

    Compiling the templates costs more than rendering a release's summary pages, so compiled
    templates are kept in ``cache_dir`` (Jinja's bytecode cache, keyed by template name and a hash
    of its source: an edited template is compiled again). Jinja re-reads a template whose file
    changed, so one environment per process is safe.
    """
    key = (str(templates_dir(tdir)), str(cache_dir) if cache_dir else None)
    env = _ENVIRONMENTS.get(key)
    if env is not None:
        return env

    site = [str(templates_dir(tdir) / "site"), *template_dirs()]  # a kind's own case partial (case_<kind>.html.j2)
    env = Environment(loader=FileSystemLoader(site),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      bytecode_cache=_bytecode_cache(cache_dir), finalize=readable_float)
    env.filters["fmt"] = fmt_value
    env.filters["pct"] = lambda v: "–" if v is None else f"{100 * v:.0f}%"
    env.filters["signed"] = fmt_difference
    env.filters["pval"] = lambda p: "–" if p is None else ("< 0.001" if p < 0.001 else f"{p:.3f}")
    env.filters["raw"] = lambda v: "" if v is None else repr(float(v))
    env.filters["change"] = fmt_change
    env.filters["paragraphs"] = paragraphs
    env.globals["METRICS"] = METRICS
    env.globals["diff_lines"] = diff_lines
    env.globals["truncate_log"] = truncate_log
    env.globals["status_badge"] = status_badge
    env.globals["pass_badge"] = pass_badge
    env.globals["metric_value"] = metric_value
    env.globals["diff_html"] = diff_html
    env.globals["test_rows_html"] = test_rows_html
    env.globals["metric_rows_html"] = metric_rows_html
    env.globals["case_list_rows_html"] = case_list_rows_html
    env.globals["uncal"] = uncalibrated_mark
    env.globals["verdict_of"] = verdict
    env.globals["APPROXIMATE_BELOW"] = APPROXIMATE_BELOW
    env.globals["untestable_reason"] = untestable_reason
    _ENVIRONMENTS[key] = env
    return env


class ContentBytecodeCache(FileSystemBytecodeCache):
    """Jinja's bytecode cache, keyed by template name and source rather than name and file path: projects that
    hold the same templates (`templates_dir` copies of the shipped ones) use one compiled copy, in a folder they
    share (`Config.template_cache`). A template loaded from it names its own file (tracebacks, ``__file__``)."""

    def get_bucket(self, environment: Environment, name: str, filename: str | None, source: str) -> Bucket:
        checksum = self.get_source_checksum(source)
        bucket = Bucket(environment, self.get_cache_key(name, checksum), checksum)
        self.load_bytecode(bucket)
        if bucket.code is not None and filename is not None and bucket.code.co_filename != filename:
            bucket.code = _refiled(bucket.code, filename)
        return bucket


def _refiled(code: CodeType, filename: str) -> CodeType:
    """``code`` and the code objects it holds, compiled from ``filename``."""
    consts = tuple(_refiled(c, filename) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _bytecode_cache(cache_dir: Path | None) -> FileSystemBytecodeCache | None:
    if cache_dir is None:
        return None
    ensure_dir(cache_dir)
    return ContentBytecodeCache(str(cache_dir))


_STATUS_SYMBOL = {"ok": "✓", "error": "✗", "timeout": "⏱", "infra_error": "⚠", "broken": "⊘", "skipped": "–",
                  "not_attempted": "○", "bug": "✱"}
_STATUS_WORDS = {"ok": "ok", "error": "failed", "timeout": "timed out", "infra_error": "infra error",
                 "broken": "broken case", "skipped": "not run", "not_attempted": "not attempted", "bug": "evalkit bug"}


_BADGES: dict[tuple[Any, ...], Markup] = {}  # (function, arguments) -> badge; a few dozen distinct badges


def _memo(key: tuple[Any, ...], make: Any) -> Markup:
    """A badge made once per process: case pages show thousands of the same few (Markup.format is slow).

    Only plain str / bool / None arguments are cached (a Markup label is escaped differently from an
    equal str; anything else goes uncached); the cache stops growing at 4,096 entries."""
    for a in key[1:]:  # a loop, not all(<generator>): case pages call this millions of times
        if a is not None and type(a) is not str and type(a) is not bool:
            return make()
    html = _BADGES.get(key)
    if html is None:
        html = make()
        if len(_BADGES) < 4096:
            _BADGES[key] = html
    return html


def status_badge(status: str, excluded: str | None = None) -> Markup:
    """A run's status as a badge, plus why it is left out of the aggregates when it is.

    Markup.format escapes every argument: a status or reason is shown as text.
    """
    return _memo(("status", status, excluded), lambda: _status_badge(status, excluded))


def _status_badge(status: str, excluded: str | None) -> Markup:
    html = Markup('<span class="badge s-{}">{} {}</span>').format(
        status if status in _STATUS_SYMBOL and status != "not_attempted" else "skipped", _STATUS_SYMBOL.get(status, "?"),
        _STATUS_WORDS.get(status, status))
    if excluded and excluded not in ("broken", "not_attempted") and not (excluded == "infra" and status == "infra_error") \
            and not (excluded == status == "bug"):
        html += Markup(' <span class="badge s-skipped" title="left out of the aggregates">– {}</span>').format(
            "unjudged" if excluded == "not_judged" else excluded)
    return html


def pass_badge(passed: bool | None, yes: str = "pass", no: str = "fail") -> Markup:
    """✓ yes / ✗ no / – n/a."""
    return _memo(("pass", passed, yes, no), lambda: _pass_badge(passed, yes, no))


def _pass_badge(passed: Any, yes: str, no: str) -> Markup:
    if passed is None:
        return Markup('<span class="badge s-skipped">– n/a</span>')
    if passed:
        return Markup('<span class="badge s-ok">✓ {}</span>').format(yes)
    return Markup('<span class="badge s-error">✗ {}</span>').format(no)


def metric_value(value: float | None, info: MetricInfo | None) -> Markup | str:
    """A binary metric as a yes/no badge, any other as `fmt_value` formats it (escaped by Jinja)."""
    if info is not None and info.binary and value is not None:
        return pass_badge(value >= 0.5, "yes", "no")
    return fmt_value(value, info)


def readable_float(value: object) -> object:
    """Every ``{{ ... }}`` of the site goes through this (Jinja's ``finalize``): a float no filter formatted
    is printed with 4 significant digits (0.15000000000000008 -> 0.15), never as Python's repr. Strings,
    integers and what filters made are left as they are."""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.4g}"
    return value


def fmt_value(value: float | None, metric: str | MetricInfo | None = None) -> str:
    """A metric value as people read it: 73.0%, 0.648, 1.20 s, $0.0123, 1,204."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    info = METRICS.get(metric) if isinstance(metric, str) else metric
    if info is None:
        return f"{value:.3g}"
    if info.unit == "USD":
        return f"${value:.4f}" if abs(value) < 100 else f"${value:,.2f}"
    if info.unit == "s":
        return f"{value:.2f} s"
    if info.unit == "tokens" or info.scale == "count":
        return f"{value:,.0f}"
    if info.aggregate == "rate":
        return f"{100 * value:.1f}%"
    if info.scale == "0-1":
        return f"{value:.3f}"
    return f"{value:.2f}"


def fmt_difference(value: float | None, metric: str | MetricInfo | None = None) -> str:
    """A signed difference in the metric's own terms: +12.5 pts for rates, +0.031 for scores."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    info = METRICS.get(metric) if isinstance(metric, str) else metric
    if info is not None and info.aggregate == "rate":
        return f"{100 * value:+.1f} pts"
    if info is not None and info.unit == "s":
        return f"{value:+.2f} s"
    if info is not None and info.unit == "USD":
        return f"{value:+.4f} $"
    return f"{value:+.3f}"


def paragraphs(text: str, css: str = "lead") -> Markup:
    """A description as it was written: a ``<p>`` per paragraph (blank-line separated), its line breaks kept
    (``<br>``), every character escaped."""
    blocks = [b.strip("\n") for b in str(text).replace("\r\n", "\n").split("\n\n") if b.strip()]
    head = f'<p class="{esc(css)}">'  # str operations on escaped parts: Markup.format and .join cost 10x more
    return Markup("".join(head + "<br>\n".join([esc(line.rstrip()) for line in b.split("\n")]) + "</p>"
                          for b in blocks))


def _pct(v: float) -> str:
    return f"{100 * v:+.0f}%" if abs(v) >= 0.01 or v == 0 else f"{100 * v:+.1g}%"


def fmt_change(change: TotalChange, metric: str) -> str:
    """A total's change against the previous release with its 95% interval, in words for the verdict line:
    "cost +12% [+3%, +20%] ($0.4210 → $0.4715)"; the difference instead when the total before was 0;
    "≈" before an interval from fewer cases than its method covers well."""
    info = METRICS.get(metric)
    word = (info.display if info else metric).lower()
    totals = f"{fmt_value(change.before, metric)} → {fmt_value(change.after, metric)}"
    approx = "≈" if change.approximate else ""
    if change.before == 0 and change.after == 0:
        return f"{word} {fmt_value(0.0, metric)} in both"
    if change.relative is not None:
        interval = (f" {approx}[{_pct(change.relative_low)}, {_pct(change.relative_high)}]"
                    if change.relative_low is not None and change.relative_high is not None else "")
        return f"{word} {_pct(change.relative)}{interval} ({totals})"
    interval = (f" {approx}[{fmt_difference(change.difference_low, metric)}, {fmt_difference(change.difference_high, metric)}]"
                if change.difference_low is not None and change.difference_high is not None else "")
    return f"{word} {fmt_difference(change.difference, metric)}{interval} ({totals})"


def diff_lines(before: str | None, after: str | None, name: str = "file",
               before_label: str = "a", after_label: str = "b") -> list[tuple[str, str]]:
    """(css class, line) pairs of a unified diff, for showing an output against the legacy code."""
    if before is None or after is None or before == after:  # no lines differ: no diff (difflib would find none)
        return []
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), f"{before_label}/{name}",
                                 f"{after_label}/{name}", lineterm="", n=3)
    return [(line_class(line), line) for line in lines]


# A case page shows thousands of diff lines, test rows and metric rows: these three are Python
# functions (escaped with markupsafe) for the same reason the badges are, and write what the
# loops they replace in macros.html.j2 wrote, byte for byte.

def diff_html(lines: list[tuple[str, str]]) -> Markup:
    """<pre class="diff"> of (css class, line) pairs, as `diff_lines` makes them."""
    return Markup('<pre class="diff">' + "".join(f'<span class="{esc(c)}">{esc(line)}\n</span>'
                                                 for c, line in lines) + "</pre>")


def test_rows_html(rows: list[dict[str, Any]]) -> Markup:
    """The rows of a run's per-test table (`system_view` makes them)."""
    out = []
    for t in rows:
        status = t["status"]
        if status == "passed":
            badge = pass_badge(True, "passed")
        elif status in ("failed", "error"):
            badge = pass_badge(False, status)  # as the template had it: the label reads "✗ fail"
        else:
            badge = Markup('<span class="badge s-skipped">– {}</span>').format(status)
        out.append(f'<tr><th scope="row"><code>{esc(t["id"])}</code></th><td>{esc(t["role"])}</td><td>{badge}'
                   f'{" (not in the output)" if t["missing"] else ""}'
                   f'{" <span class=" + chr(34) + "badge s-infra_error" + chr(34) + ">⚠ flaky</span>" if t["flaky"] else ""}'
                   "</td></tr>\n")
    return Markup("".join(out))


def case_list_rows_html(rows: list[Any], systems: Iterable[str], primary: str | None,
                        metric_info: Mapping[str, MetricInfo]) -> Markup:
    """The rows of a suite page's case list (report rows, `CaseRow`): the case and its tags, each system's status and
    ``primary`` metric, the link to two systems side by side. A 10,000-case suite lists 10,000 rows; the template
    loop took a third of the release pages' time."""
    names = list(systems)
    info = metric_info[primary] if primary else None
    system_attrs = {n: f' <span class="pm" data-system="{esc(n)}" data-metric="{esc(primary)}" data-value="'
                    for n in names}
    out = []
    for row in rows:
        href = f"../cases/{esc(url_quote(row.suite))}/{esc(url_quote(row.case_id))}.html"
        out.append(f'<tr><th scope="row"><a href="{href}">{esc(row.case_id)}</a>'
                   + (' <span class="badge s-broken">⊘ broken</span>' if row.problems else "")
                   + (f'<div class="desc">{esc(", ".join(row.tags))}</div>' if row.tags else "") + "</th>\n")
        cells = row.systems
        for name in names:
            cell = cells.get(name)
            if cell is None:
                out.append("<td>–</td>\n")
                continue
            value = cell.metrics.get(primary) if primary else None
            shown = "" if value is None else \
                f'{system_attrs[name]}{esc(repr(float(value)))}">{esc(metric_value(value, info))}</span>'
            out.append(f"<td>{status_badge(cell.status, cell.excluded)}{shown}</td>\n")
        out.append(f'<td><a href="{href}?compare#systems">compare</a></td></tr>\n' if len(cells) >= 2
                   else "<td></td></tr>\n")
    return Markup("".join(out))


def uncalibrated_mark(info: MetricInfo | None) -> Markup:
    """' uncalibrated' badge after a metric's name when its judge field agrees with people below the bar
    (MetricInfo.uncalibrated, set by summarize: evalkit.report.calibration); nothing otherwise."""
    if info is None or not getattr(info, "uncalibrated", None):
        return Markup("")
    return Markup(' <span class="badge s-infra_error uncal" title="{}">uncalibrated</span>').format(
        f"{info.display}: {info.uncalibrated}")


_ROW_HEADS: dict[tuple[int, str], tuple[Any, str]] = {}  # (id(MetricInfo), name) -> (the info, its row head)


def _row_head(name: str, info: MetricInfo | None) -> str:
    if info is None:
        return f'<tr><th scope="row">{esc(name)}</th><td class="num" data-metric="{esc(name)}" '
    held = _ROW_HEADS.get((id(info), name))
    if held is None or held[0] is not info:
        held = (info, f'<tr><th scope="row"><abbr title="{esc(info.description)}">{esc(info.display)}</abbr>'
                      f'{uncalibrated_mark(info)}</th><td class="num" data-metric="{esc(name)}" ')
        if len(_ROW_HEADS) < 4096:
            _ROW_HEADS[(id(info), name)] = held
    return held[1]


def metric_rows_html(metrics: list[dict[str, Any]]) -> Markup:
    """The rows of a system's 'every metric of this case' table (`system_view` makes them): name, value and, where
    its scorer gave one, the explanation (escaped: a scorer may quote the answer)."""
    out = []
    for m in metrics:
        info, value = m["info"], m["value"]
        raw = "" if value is None else repr(float(value))
        why = m.get("explanation")
        out.append(f'{_row_head(m["name"], info)}data-value="{esc(raw)}">{esc(metric_value(value, info))}'
                   + (f'</td><td class="why">{esc(why)}' if why else "") + "</td></tr>\n")
    return Markup("".join(out))


def truncate_log(text: str | None, limit: int = LOG_PREVIEW) -> tuple[str, bool]:
    """The last ``limit`` characters of a log, and whether anything was cut."""
    text = text or ""
    return (text[-limit:], True) if len(text) > limit else (text, False)


def json_for_script(obj: object) -> str:
    """JSON safe to embed in a <script> block (no closing tags, no HTML specials)."""
    return (json.dumps(obj, sort_keys=True).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026").replace("'", "\\u0027"))
