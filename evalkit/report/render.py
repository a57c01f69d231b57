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
    site/<release>/cases/<suite>/<case>.html          one case: inputs, each system's output and grades
    site/<release>/cases/<suite>/<case>.compare.html  two systems side by side (?a=SYS&b=SYS)
    site/<release>/cases/<suite>/<case>.<system>.log.txt  full test log, when tests ran
    site/<release>/regressions.html          per system, cases worse / better than the previous release
    site/compare/<a>..<b>.html               any two releases compared (evalkit.report.compare)
    site/assets/                             style.css, charts.js, compare.js, plotly.min.js (one copy)
    site/schemas/*.schema.json               JSON Schemas of report.json, the case JSON, ...
"""

from __future__ import annotations

import difflib
import json
import math
import multiprocessing
import os
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, overload

from jinja2 import Environment, FileSystemBytecodeCache, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from evalkit import fsutil
from evalkit.fsutil import atomic_write_bytes, atomic_write_text, digest, ensure_dir, remove
from evalkit.metrics.registry import METRICS, MetricInfo
from evalkit.metrics.registry import primary_metric as registry_primary
from evalkit.report import charts
from evalkit.report.models import CaseDetail, CaseRow, Report, SuiteSummary
from evalkit.report.leaderboard import overview, suite_leaderboard
from evalkit.report.site import list_releases, templates_dir, update_manifest

LOG_PREVIEW = 4000
PAGE_INDEX = ".pages.json"  # not published content: the manifest skips dot-files
LEGACY_KEY = "inputs.legacy_file"
REFERENCE_KEY = "reference.expected_file"
CASES_PER_PAGE = 500  # a suite's case list is split into pages of this many cases (each page well under 1 MB)
STATUS_ORDER = ("ok", "error", "timeout", "infra_error", "broken", "skipped", "not_attempted")


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
    env = Environment(loader=FileSystemLoader(str(templates_dir(tdir) / "site")),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      bytecode_cache=_bytecode_cache(cache_dir))
    env.filters["fmt"] = fmt_value
    env.filters["pct"] = lambda v: "–" if v is None else f"{100 * v:.0f}%"
    env.filters["signed"] = fmt_difference
    env.filters["pval"] = lambda p: "–" if p is None else ("< 0.001" if p < 0.001 else f"{p:.3f}")
    env.filters["raw"] = lambda v: "" if v is None else repr(float(v))
    env.globals["METRICS"] = METRICS
    env.globals["diff_lines"] = diff_lines
    env.globals["truncate_log"] = truncate_log
    env.globals["status_badge"] = status_badge
    env.globals["pass_badge"] = pass_badge
    env.globals["metric_value"] = metric_value
    env.globals["diff_html"] = diff_html
    env.globals["test_rows_html"] = test_rows_html
    env.globals["metric_rows_html"] = metric_rows_html
    env.globals["uncal"] = uncalibrated_mark
    _ENVIRONMENTS[key] = env
    return env


def _bytecode_cache(cache_dir: Path | None) -> FileSystemBytecodeCache | None:
    if cache_dir is None:
        return None
    ensure_dir(cache_dir)
    return FileSystemBytecodeCache(str(cache_dir))


_STATUS_SYMBOL = {"ok": "✓", "error": "✗", "timeout": "⏱", "infra_error": "⚠", "broken": "⊘", "skipped": "–",
                  "not_attempted": "○"}
_STATUS_WORDS = {"ok": "ok", "error": "failed", "timeout": "timed out", "infra_error": "infra error",
                 "broken": "broken case", "skipped": "not run", "not_attempted": "not attempted"}


_BADGES: dict[tuple[Any, ...], Markup] = {}  # (function, arguments) -> badge; a few dozen distinct badges


def _memo(key: tuple[Any, ...], make: Any) -> Markup:
    """A badge made once per process: case pages show thousands of the same few (Markup.format is slow).

    Only plain str / bool / None arguments are cached (a Markup label is escaped differently from an
    equal str; anything else goes uncached); the cache stops growing at 4,096 entries."""
    if not all(a is None or type(a) in (str, bool) for a in key[1:]):
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
    if excluded and excluded not in ("broken", "not_attempted") and not (excluded == "infra" and status == "infra_error"):
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


def diff_lines(before: str | None, after: str | None, name: str = "file",
               before_label: str = "a", after_label: str = "b") -> list[tuple[str, str]]:
    """(css class, line) pairs of a unified diff, for showing an output against the legacy code."""
    if before is None or after is None:
        return []
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), f"{before_label}/{name}",
                                 f"{after_label}/{name}", lineterm="", n=3)
    return [(line_class(line), line) for line in lines]


# A case page shows thousands of diff lines, test rows and metric rows: these three are Python
# functions (escaped with markupsafe) for the same reason the badges are, and write what the
# loops they replace in macros.html.j2 wrote, byte for byte.

def diff_html(lines: list[tuple[str, str]]) -> Markup:
    """<pre class="diff"> of (css class, line) pairs, as `diff_lines` makes them."""
    return Markup('<pre class="diff">' + "".join(f'<span class="{escape(c)}">{escape(line)}\n</span>'
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
        out.append(f'<tr><th scope="row"><code>{escape(t["id"])}</code></th><td>{escape(t["role"])}</td><td>{badge}'
                   f'{" (not in the output)" if t["missing"] else ""}'
                   f'{" <span class=" + chr(34) + "badge s-infra_error" + chr(34) + ">⚠ flaky</span>" if t["flaky"] else ""}'
                   "</td></tr>\n")
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
        return f'<tr><th scope="row">{escape(name)}</th><td class="num" data-metric="{escape(name)}" '
    held = _ROW_HEADS.get((id(info), name))
    if held is None or held[0] is not info:
        held = (info, f'<tr><th scope="row"><abbr title="{escape(info.description)}">{escape(info.display)}</abbr>'
                      f'{uncalibrated_mark(info)}</th><td class="num" data-metric="{escape(name)}" ')
        if len(_ROW_HEADS) < 4096:
            _ROW_HEADS[(id(info), name)] = held
    return held[1]


def metric_rows_html(metrics: list[dict[str, Any]]) -> Markup:
    """The rows of a system's 'every metric of this case' table (`system_view` makes them)."""
    out = []
    for m in metrics:
        info, value = m["info"], m["value"]
        raw = "" if value is None else repr(float(value))
        out.append(f'{_row_head(m["name"], info)}data-value="{escape(raw)}">{escape(metric_value(value, info))}'
                   "</td></tr>\n")
    return Markup("".join(out))


def line_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    if line.startswith("@@"):
        return "hunk"
    return "ctx"


def truncate_log(text: str | None, limit: int = LOG_PREVIEW) -> tuple[str, bool]:
    """The last ``limit`` characters of a log, and whether anything was cut."""
    text = text or ""
    return (text[-limit:], True) if len(text) > limit else (text, False)


def json_for_script(obj: Any) -> str:
    """JSON safe to embed in a <script> block (no closing tags, no HTML specials)."""
    return (json.dumps(obj, sort_keys=True).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026").replace("'", "\\u0027"))


_REPORTS: dict[str, tuple[tuple[int, int], Report]] = {}


def _load_report(site: Path, release: str) -> Report:
    """report.json of a release, parsed once per process while the file is unchanged (the release
    pages and the site index both need it; a large report takes tens of milliseconds to validate)."""
    path = site / release / "report.json"
    st = path.stat()
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _REPORTS.get(str(path))
    if hit is not None and hit[0] == stamp:
        return hit[1]
    report = Report.model_validate_json(path.read_bytes())
    _REPORTS[str(path)] = (stamp, report)
    return report


# ---- what the pages show, computed once ---------------------------------------------------------

def headline_metrics(report: Report) -> list[MetricInfo]:
    """Headline metrics present in the report: quality first, then cost and time."""
    infos = [i for i in report.metric_info.values() if i.headline]
    return [i for i in infos if i.higher_is_better is not False] + [i for i in infos if i.higher_is_better is False]


def primary_metric(metrics: list[str]) -> str | None:
    """The one metric shown per cell in a suite's case list (the registry's ranking)."""
    return registry_primary({m: 1.0 for m in metrics})


def status_counts(rows: list[CaseRow], systems: list[str]) -> dict[str, Counter]:
    """System -> counts of statuses and exclusions over the rows (`total` is the grand total)."""
    counts: dict[str, Counter] = {s: Counter() for s in systems}
    counts["total"] = Counter()
    for row in rows:
        for name, cell in row.systems.items():
            for key in (cell.status, f"excluded:{cell.excluded}" if cell.excluded else None):
                if key:
                    counts.setdefault(name, Counter())[key] += 1
                    counts["total"][key] += 1
            counts.setdefault(name, Counter())["cells"] += 1
            counts["total"]["cells"] += 1
    return counts


def comparison_index(suites: list[SuiteSummary]) -> dict[tuple[str, str, str], Any]:
    """(suite, system, metric) -> PairedComparison."""
    return {(s.name, c.system, c.metric): c for s in suites for c in s.comparisons}


def judgement(c: Any, info: MetricInfo | None) -> str:
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


def _exists_in(site: Path, release: str | None, suite: str, case_id: str) -> bool:
    return bool(release) and os.path.exists(os.path.join(site, str(release), "cases", suite, f"{case_id}.json"))


def case_lookup(site: Path) -> Any:
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


def regression_groups(site: Path, report: Report, diff: Any = None, exists: Any = None) -> list[dict[str, Any]]:
    """Per system: worse and better cases, one entry per case with every metric that moved.

    ``diff`` (a ReleaseDiff of any earlier release against ``report``; default: the report's own
    against the previous release) lets `evalkit.report.compare` group any pair the same way;
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


# ---- case pages -----------------------------------------------------------------------------

# Artifacts reach the case JSON as plain dicts; every field a template reads gets its model's
# default here (older artifacts may lack newer fields).
USAGE_DEFAULTS = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0,
                  "cost_usd": 0.0}
RUN_DEFAULTS = {"status": "", "reason": "", "isolation": "", "patch_method": None, "duration_s": 0.0,
                "resolved": None, "tests": {}, "fail_to_pass": {}, "pass_to_pass": {}, "flaky": [], "log": "",
                "log_truncated": False, "log_bytes": 0, "harness_parser": None, "harness_resolved": None, "harness_note": ""}
JUDGE_DEFAULTS = {"status": "", "reason": "", "model": None, "source": None, "rubric": None, "flags": {}, "error": None,
                  "scores": None, "spread": {},
                  "is_compilable": None, "unstable": False, "verdicts": [], "reasoning": [], "raw_answers": []}
RUBRIC_DEFAULTS = {"status": "", "model": None, "score": None, "results": [], "unstable": False, "reasoning": [],
                   "error": None}


@overload
def _with(d: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]: ...
@overload
def _with(d: Any, defaults: dict[str, Any]) -> dict[str, Any] | None: ...


def _with(d: Any, defaults: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of an artifact dict with defaults for missing fields (None stays None)."""
    if not isinstance(d, dict):
        return None
    return {**defaults, **{k: v for k, v in d.items() if v is not None or k not in defaults}}


def system_view(case: CaseDetail, name: str, arts: dict[str, Any], report: Report) -> dict[str, Any]:
    """Everything the case page shows for one system, from its artifacts (plain dicts)."""
    from evalkit.report.case_kinds import kind_detail

    out = arts.get("output") or {}
    samples = out.get("samples") or []
    first = samples[0] if samples else {}
    grades = arts.get("grades") or {}
    scores = arts.get("scores") or {}
    exe = arts.get("execution") or {}
    legacy = case.input_files.get(LEGACY_KEY)
    reference = case.reference_files.get(REFERENCE_KEY)
    files = []
    for fname, content in sorted((first.get("files") or {}).items()):
        content = content if isinstance(content, str) else json.dumps(content)
        primary = fname == case.primary_file
        vs_legacy = diff_lines(legacy, content, fname, "legacy", name) if primary and legacy is not None else []
        vs_ref = diff_lines(reference, content, fname, "reference", name) if primary and reference is not None else []
        files.append({"name": fname, "content": content, "primary": primary, "diff": vs_legacy,
                      "diff_reference": vs_ref, "same_as_legacy": primary and legacy is not None and not vs_legacy,
                      "same_as_reference": primary and reference is not None and not vs_ref})
    patch = first.get("patch")
    metrics = []
    for m, v in (scores.get("metrics") or {}).items():
        metrics.append({"name": m, "info": report.metric_info.get(m) or METRICS.get(m), "value": v})
    metrics.sort(key=lambda r: (list(METRICS).index(r["name"]) if r["name"] in METRICS else 999, r["name"]))
    runs = []
    raw_runs: list[dict[str, Any]] = exe.get("runs") or []  # execute.json's runs: ExecutionResult dicts
    for i, raw_run in enumerate(raw_runs):
        run = _with(raw_run, RUN_DEFAULTS)
        preview, cut = truncate_log(run.get("log"))
        tests = []
        f2p, p2p = run.get("fail_to_pass") or {}, run.get("pass_to_pass") or {}
        for tid, st in sorted((run.get("tests") or {}).items()):
            tests.append({"id": tid, "status": st, "role": "FAIL_TO_PASS" if tid in f2p else
                          "PASS_TO_PASS" if tid in p2p else "", "flaky": tid in (run.get("flaky") or []), "missing": False})
        for tid, st in sorted({**f2p, **p2p}.items()):
            if tid not in (run.get("tests") or {}):
                tests.append({"id": tid, "status": st, "role": "FAIL_TO_PASS" if tid in f2p else "PASS_TO_PASS",
                              "flaky": False, "missing": True})
        tests.sort(key=lambda t: (t["status"] == "passed", t["role"] != "FAIL_TO_PASS", t["id"]))
        runs.append({**run, "index": i, "preview": preview, "cut": cut or bool(run.get("log_truncated")),
                     "test_rows": tests, "log_file": f"{case.case_id}.{name}.log{'.' + str(i) if i else ''}.txt"
                     if run.get("log") else None})
    judge = _with(grades.get("judge"), JUDGE_DEFAULTS)
    rubric = _with(grades.get("rubric"), RUBRIC_DEFAULTS)
    if rubric:
        rubric["results"] = [_with(r, {"id": "", "weight": 1.0, "met": None, "met_fraction": None, "reason": ""})
                             for r in rubric["results"] or []]
    usage = _with(first.get("usage"), USAGE_DEFAULTS) or dict(USAGE_DEFAULTS)
    status = scores.get("status") or out.get("status") or "skipped"
    reason = scores.get("reason") or out.get("reason") or first.get("reason") or ""
    return {"name": name, "status": status, "reason": reason, "excluded": scores.get("excluded"),
            "metrics": metrics, "files": files, "patch": [(line_class(x), x) for x in patch.splitlines()] if patch
            else [], "text": first.get("text"), "usage": usage, "wall_s": first.get("wall_s"),
            "steps": first.get("steps"), "exit_code": first.get("exit_code"), "stderr": first.get("stderr") or "",
            "samples": len(samples), "runs": runs, "isolation": exe.get("isolation"),
            "syntax": _with(grades.get("syntax"), {"language": "", "valid": None, "issues": []}),
            "assertions": [_with(a, {"description": "", "passed": None, "weight": 1.0, "detail": ""})
                           for a in grades.get("assertions") or []], "assertion_score": grades.get("assertion_score"),
            "judge": judge, "rubric": rubric, "extra": grades.get("extra") or {},
            "judge_usage": _with(scores.get("judge_usage"), USAGE_DEFAULTS) or dict(USAGE_DEFAULTS), "context_files": first.get("context_files") or [],
            "kind_detail": kind_detail(case, arts)}


def write_logs(page_dir: Path, views: list[dict[str, Any]]) -> list[Path]:
    """The full test log of each run as a .txt next to the case page (served as plain text)."""
    written = []
    for v in views:
        for run in v["runs"]:
            if run["log_file"]:
                path = page_dir / run["log_file"]
                data = (run.get("log") or "").encode("utf-8", errors="replace")
                if not path.exists() or path.read_bytes() != data:
                    atomic_write_bytes(path, data)
                written.append(path)
    return written


def case_pages(env: Environment, site: Path, report: Report, row: CaseRow, nav: dict[str, Any],
               shared: str, old_index: dict[str, str], index: dict[str, str],
               parts: tuple[Any, Any, Any] | None = None) -> list[Path]:
    """The case page, its compare page and log files; skipped when nothing they show has changed.

    ``parts``: `case_templates(env)`, fetched once for many cases (each fetch stats the template files).

    A case page is a function of its case JSON, its report row, the templates, the report's
    systems and metric metadata, and whether the previous release has the case: ``index``
    records a digest of those per case, so a one-case change renders one case's pages.
    """
    from evalkit.names import is_valid_name

    if not (is_valid_name(row.suite) and is_valid_name(row.case_id)):  # a report.json written before names were checked
        return []
    data_path = site / report.release / "cases" / row.suite / f"{row.case_id}.json"
    if not data_path.exists():
        return []
    prev = report.diff.previous_release
    has_prev = _exists_in(site, prev, row.suite, row.case_id)
    st = data_path.stat()
    key = digest([shared, st.st_mtime_ns, st.st_size, row.model_dump(mode="json"), has_prev])
    ident = f"{row.suite}/{row.case_id}"
    index[ident] = key
    page = data_path.with_suffix(".html")
    if old_index.get(ident) == key and page.exists():
        return []
    detail = CaseDetail.model_validate_json(data_path.read_bytes())
    order = [s.name for s in report.systems if s.name in detail.systems] + \
        sorted(n for n in detail.systems if n not in {s.name for s in report.systems})
    views = [system_view(detail, n, detail.systems[n], report) for n in order]
    names = [v["name"] for v in views]
    left = report.baseline if report.baseline in names else names[0]
    right = next((n for n in names if n != left), left)
    ctx = {"report": report, "case": detail, "pair": (left, right), "row": row, "views": views, "root": "../../../", **nav,
           "headline": [i for i in headline_metrics(report)
                        if any(c.metrics.get(i.name) is not None for c in row.systems.values())],
           "previous": prev if has_prev else None}
    # Each system's panel is the same on the case page and the compare page: rendered once, shown twice.
    case_t, compare_t, panel = parts or case_templates(env)
    ctx["panels"] = [panel(v) for v in views]
    written = write_logs(data_path.parent, views)
    atomic_write_text(page, case_t.render(**ctx, here="case"))
    written.append(page)
    if len(views) >= 2:
        page = data_path.with_name(f"{row.case_id}.compare.html")
        atomic_write_text(page, compare_t.render(**ctx, here="compare"))
        written.append(page)
    return written


def case_templates(env: Environment) -> tuple[Any, Any, Any]:
    """The case page's and the compare page's templates and the panel of one system (`evalkit.report.panel`)."""
    from evalkit.report.panel import system_panel

    graded = env.get_template("macros.html.j2").module.graded_sections  # type: ignore[attr-defined]
    return (env.get_template("case.html.j2"), env.get_template("compare.html.j2"),
            lambda view: system_panel(view, graded))


# ---- pages --------------------------------------------------------------------------------

def suite_page_name(suite: str, page: int) -> str:
    """suites/<suite>.html holds the summary and the first CASES_PER_PAGE cases; <suite>.cases-<k>.html the k-th."""
    return f"{suite}.html" if page == 1 else f"{suite}.cases-{page}.html"


def render_release(site: Path, release: str, tdir: Path | None = None, cache_dir: Path | None = None,
                   workers: int | None = None) -> list[Path]:
    """Every page of one release. Returns the pages written. ``workers``: processes for the case pages
    (default: `case_workers`)."""
    env = environment(tdir, cache_dir)
    report = _load_report(site, release)
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
        boards = {s.name: suite_leaderboard(s, suite_rows[s.name], report.metric_info,
                                            s.comparisons[0].baseline if s.comparisons else report.baseline)
                  for s in report.suites}
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
        from evalkit.report.compare import PAGE_ROWS, largest_first

        groups = regression_groups(site, report)
        largest_first(groups, PAGE_ROWS)
        atomic_write_text(page, env.get_template("regressions.html.j2").render(
            report=report, groups=groups, limit=PAGE_ROWS, root="../", here="regressions", **nav))
        written.append(page)
        prev = report.diff.previous_release
        if prev and prev in releases:  # site/compare/<previous>..<release>.html (others: `evalkit compare A B`)
            from evalkit.report.compare import render_comparison

            written.append(render_comparison(site, prev, release, tdir, cache_dir))
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
                     [Path(__file__).with_name(f).stat().st_mtime_ns  # per-kind parts, the system panel
                      for f in ("case_kinds.py", "panel.py")]])
    index, pages = render_cases(env, site, report, nav, shared, old_index, workers, meanwhile=other_pages)
    atomic_write_text(index_path, json.dumps(index, sort_keys=True))
    return pages


PARALLEL_MIN_CASES = 400  # fewer cases render in one process: forking would cost more than it saves
_FORKED: tuple[Any, ...] | None = None  # what forked workers render from; set only while a pool runs


def case_workers(n_cases: int) -> int:
    """How many processes render ``n_cases`` case pages: one per CPU (at most 4), forked from this one.

    One (render here) for a few hundred cases, where fork is unavailable, in a daemon process (it
    may not have children) or while other threads run (a thread holding a lock when the process
    forks would leave the lock held for ever in the child)."""
    if n_cases < PARALLEL_MIN_CASES or "fork" not in multiprocessing.get_all_start_methods() \
            or multiprocessing.current_process().daemon or threading.active_count() > 1:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


def _render_chunk(bounds: tuple[int, int]) -> tuple[bool, dict[str, str], list[Path]]:
    """Case pages of report.cases[start:end], in a forked worker: (ok, index entries, pages written).

    A failure is only flagged: the parent renders the chunk again to raise the exception itself
    (some exceptions, pydantic's among them, do not cross a process boundary)."""
    assert _FORKED is not None
    env, site, report, nav, shared, old_index, parts = _FORKED
    index: dict[str, str] = {}
    written: list[Path] = []
    try:
        for row in report.cases[bounds[0]:bounds[1]]:
            written += case_pages(env, site, report, row, nav, shared, old_index, index, parts)
    except Exception:
        return False, index, written
    return True, index, written


def render_cases(env: Environment, site: Path, report: Report, nav: dict[str, Any], shared: str,
                 old_index: dict[str, str], workers: int | None = None,
                 meanwhile: Callable[[], list[Path]] | None = None) -> tuple[dict[str, str], list[Path]]:
    """Every case's pages (see `case_pages`): the new page index and the files written.

    With ``workers`` > 1 (default: `case_workers`), chunks of cases render in forked processes that
    share this one's environment and report; the pages are the same bytes as rendered here.
    ``meanwhile``: other pages to write, here, while the workers run (their paths come first)."""
    global _FORKED
    n = len(report.cases)
    workers = case_workers(n) if workers is None else workers
    index: dict[str, str] = {}
    parts = case_templates(env)
    written: list[Path] = []
    if workers <= 1 or n == 0:
        written += meanwhile() if meanwhile else []
        for row in report.cases:
            written += case_pages(env, site, report, row, nav, shared, old_index, index, parts)
        return index, written
    size = max(25, math.ceil(n / (workers * 8)))  # small chunks: the workers finish together
    chunks = [(i, min(n, i + size)) for i in range(0, n, size)]
    _FORKED = (env, site, report, nav, shared, old_index, parts)
    try:
        pool = multiprocessing.get_context("fork").Pool(workers)
        try:
            pending = pool.imap(_render_chunk, chunks)  # the workers start now
            written += meanwhile() if meanwhile else []
            results = list(pending)
            pool.close()
        finally:
            pool.terminate()
            pool.join()
    finally:
        _FORKED = None
    for bounds, (ok, part_index, part_written) in zip(chunks, results):
        if not ok:  # raise the worker's exception here, with its own type and traceback
            for row in report.cases[bounds[0]:bounds[1]]:
                case_pages(env, site, report, row, nav, shared, old_index, part_index)
        index.update(part_index)
        written += part_written
    fsutil.replaced(written)  # the workers' atomic writes told only the workers' own listeners
    return index, written


def render_index(site: Path, tdir: Path | None = None, cache_dir: Path | None = None) -> Path:
    """site/index.html: every release, newest first, with trend charts of the headline metrics."""
    env = environment(tdir, cache_dir)
    releases = list_releases(site)
    summaries: list[Report] = []
    for r in releases:
        try:
            summaries.append(_load_report(site, r))
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
        reg = sum(len(d.regressed) for d in rep.diff.systems.values())
        imp = sum(len(d.improved) for d in rep.diff.systems.values())
        rows.append({"report": rep, "counts": c, "regressed": reg, "improved": imp})
    page = site / "index.html"
    atomic_write_text(page, env.get_template("index.html.j2").render(
        rows=rows, trends=trends, root="", here="index", releases=releases, palette=palette))
    return page


def render_site(site: Path, release: str, tdir: Path | None = None, cache_dir: Path | None = None,
                workers: int | None = None) -> Path:
    """Render one release, the index, copy static assets and schemas, update the manifest.

    ``cache_dir`` keeps compiled templates between runs (see `environment`); ``workers``: processes
    rendering the case pages (default: `case_workers`).
    """
    site = Path(site)
    copy_assets(site, tdir)
    write_site_schemas(site)
    render_release(site, release, tdir, cache_dir, workers)
    update_manifest(site, release)
    render_index(site, tdir, cache_dir)
    return site / release / "index.html"


def _write_if_changed(dest: Path, data: bytes) -> bool:
    if dest.exists() and dest.stat().st_size == len(data) and dest.read_bytes() == data:
        return False
    atomic_write_bytes(dest, data)  # makes the folders (below the site folder only)
    return True


def plotly_js() -> Path:
    import plotly

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
    from evalkit.schemas import SCHEMA_DIR, SCHEMA_NAMES

    out = []
    for name in SCHEMA_NAMES:
        path = site / "schemas" / f"{name}.schema.json"
        _write_if_changed(path, (SCHEMA_DIR / f"{name}.schema.json").read_bytes())
        out.append(path)
    return out
