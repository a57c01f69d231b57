"""Case pages: one per case (each system's output, runs, checks, judge), its compare page and test logs.

Each system's view is read from its artifacts in the case JSON through the artifact models
(evalkit.artifacts), so a field an older artifact lacks takes the model's own default. Many cases
render in forked worker processes (``render_cases``).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, overload

from jinja2 import Environment

from evalkit import fsutil
from evalkit.fsutil import atomic_write_bytes, atomic_write_text, digest
from evalkit.metrics.registry import METRICS
from evalkit.report.models import CaseDetail, CaseRow, Report
from evalkit.report.page_data import _exists_in, headline_metrics
from evalkit.report.site_env import diff_lines, line_class, truncate_log

LEGACY_KEY = "inputs.legacy_file"
REFERENCE_KEY = "reference.expected_file"

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
