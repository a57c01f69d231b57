"""Case pages: one per case (each system's output, runs, checks, judge; two systems side by side on request) and the
test logs it shows only in part.

Each system's view is read from its artifacts' models (evalkit.artifacts.SystemArtifacts), validated once
when the case JSON is read, so a field an older artifact lacks takes the model's own default. Many cases
render in forked worker processes (``render_cases``).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import math
import multiprocessing
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, TemplateNotFound
from markupsafe import Markup

from evalkit import fsutil
from evalkit.artifacts import SystemArtifacts, Usage
from evalkit.fsutil import atomic_write_bytes, atomic_write_text
from evalkit.kind_registry import kind, known
from evalkit.metrics.registry import METRICS
from evalkit.names import COMPARE_PAGE, is_valid_name
from evalkit.report import case_markup
from evalkit.report.models import CaseDetail, CaseRow, Report
from evalkit.report.page_data import exists_in, headline_metrics
from evalkit.report.site_env import diff_lines, line_class, truncate_log
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.report import panel as panel_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    panel_code = later("evalkit.report.panel")

PageRenderer = Callable[[dict[str, Any]], str]
"""Renders a case page from its context."""
CaseParts = tuple[PageRenderer, Callable[[dict[str, Any]], Markup]]
"""`case_templates`: the case page's renderer and one system's panel."""

LEGACY_KEY = "inputs.legacy_file"
REFERENCE_KEY = "reference.expected_file"


_ORDER: tuple[tuple[str, ...], dict[str, int]] = ((), {})


def _metric_order() -> dict[str, int]:
    """Each registered metric's place in the registry (the order a case page lists them), made again only when the
    registry changed (a plug-in registered a metric)."""
    global _ORDER
    names = tuple(METRICS)
    if names != _ORDER[0]:
        _ORDER = (names, {m: i for i, m in enumerate(names)})
    return _ORDER[1]


def kind_detail(case: CaseDetail, arts: SystemArtifacts) -> dict[str, Any] | None:
    """What the case page shows for this system beyond the common parts (the kind's ``Kind.detail``, built by
    evalkit.kinds.<kind>.page for evalkit's own kinds; None for kinds without any)."""
    return kind(case.kind).detail(case, arts) if known(case.kind) else None


def system_view(case: CaseDetail, name: str, arts: SystemArtifacts, report: Report) -> dict[str, Any]:
    """Everything the case page shows for one system, read from its artifacts' models (validated with the case JSON)."""
    out, exe, grades, scores = arts.output, arts.execution, arts.grades, arts.scores
    samples = out.samples if out is not None else []
    first = samples[0] if samples else None
    legacy = case.input_files.get(LEGACY_KEY)
    reference = case.reference_files.get(REFERENCE_KEY)
    files = []
    for fname, content in sorted((first.files if first is not None else {}).items()):
        primary = fname == case.primary_file
        vs_legacy = diff_lines(legacy, content, fname, "legacy", name) if primary and legacy is not None else []
        vs_ref = diff_lines(reference, content, fname, "reference", name) if primary and reference is not None else []
        files.append({"name": fname, "content": content, "primary": primary, "diff": vs_legacy,
                      "diff_reference": vs_ref, "same_as_legacy": primary and legacy is not None and not vs_legacy,
                      "same_as_reference": primary and reference is not None and not vs_ref})
    patch = first.patch if first is not None else None
    order = _metric_order()
    explanations = scores.explanations if scores is not None else {}
    metrics = [{"name": m, "info": report.metric_info.get(m) or METRICS.get(m), "value": v,
                "explanation": explanations.get(m, "")}
               for m, v in sorted((scores.metrics if scores is not None else {}).items(),
                                  key=lambda mv: (order.get(mv[0], 999), mv[0]))]
    runs = []
    for i, run_model in enumerate(exe.runs if exe is not None else []):
        preview, cut = truncate_log(run_model.log)
        tests = []
        f2p, p2p = run_model.fail_to_pass, run_model.pass_to_pass
        for tid, st in sorted(run_model.tests.items()):
            tests.append({"id": tid, "status": st, "role": "FAIL_TO_PASS" if tid in f2p else
                          "PASS_TO_PASS" if tid in p2p else "", "flaky": tid in run_model.flaky, "missing": False})
        for tid, st in sorted({**f2p, **p2p}.items()):
            if tid not in run_model.tests:
                tests.append({"id": tid, "status": st, "role": "FAIL_TO_PASS" if tid in f2p else "PASS_TO_PASS",
                              "flaky": False, "missing": True})
        tests.sort(key=lambda t: (t["status"] == "passed", t["role"] != "FAIL_TO_PASS", t["id"]))
        # the whole log is a file of its own only when the page shows a part of it
        runs.append({"run": run_model, "index": i, "preview": preview, "cut": cut or run_model.log_truncated,
                     "test_rows": tests, "log_file": log_file(case.case_id, name, i) if cut else None})
    judge = grades.judge.model_dump(mode="json") if grades is not None and grades.judge is not None else None
    rubric = grades.rubric.model_dump(mode="json") if grades is not None and grades.rubric is not None else None
    usage = first.usage if first is not None else Usage()
    status = scores.status if scores is not None else out.status if out is not None else "skipped"
    reason = ((scores.reason if scores is not None else "") or (out.reason if out is not None else "")
              or (first.reason if first is not None else ""))
    return {"name": name, "status": status, "reason": reason, "excluded": scores.excluded if scores is not None else None,
            "metrics": metrics, "explanations": explanations, "files": files, "patch": [(line_class(x), x) for x in patch.splitlines()] if patch
            else [], "text": first.text if first is not None else None, "usage": usage,
            "wall_s": first.wall_s if first is not None else None, "steps": first.steps if first is not None else None,
            "exit_code": first.exit_code if first is not None else None,
            "stderr": first.stderr if first is not None else "",
            "samples": len(samples), "runs": runs, "isolation": exe.isolation if exe is not None else None,
            "syntax": grades.syntax.model_dump(mode="json") if grades is not None and grades.syntax is not None else None,
            "assertions": [a.model_dump(mode="json") for a in grades.assertions] if grades is not None else [],
            "assertion_score": grades.assertion_score if grades is not None else None,
            "judge": judge, "rubric": rubric, "extra": grades.extra.model_dump(mode="json") if grades is not None else {},
            "judge_usage": scores.judge_usage if scores is not None else Usage(),
            "context_files": first.context_files if first is not None else [],
            "kind_detail": kind_detail(case, arts)}


def log_file(case_id: str, system: str, index: int) -> str:
    """The name of a run's full test log, next to its case page: ``<case>.<system>.log[.<run>].txt``."""
    return f"{case_id}.{system}.log{'.' + str(index) if index else ''}.txt"


def write_logs(page_dir: Path, views: list[dict[str, Any]]) -> list[Path]:
    """The full test log of each run the page shows only in part, as a .txt next to the case page (served as plain
    text)."""
    written = []
    for v in views:
        for run in v["runs"]:
            if run["log_file"]:
                path = page_dir / run["log_file"]
                data = run["run"].log.encode("utf-8", errors="replace")
                if not path.exists() or path.read_bytes() != data:
                    atomic_write_bytes(path, data)
                written.append(path)
    return written


def page_key(site: Path, report: Report, row: CaseRow, shared: str) -> tuple[str, str, Path, bytes, bool] | None:
    """(``suite/case``, the key of its pages, its case JSON's path and bytes, whether the previous release has the
    case), or None for a row without pages (a name not checked, no case JSON). See `case_pages`."""
    if not (is_valid_name(row.suite) and is_valid_name(row.case_id)):  # a report.json written before names were checked
        return None
    data_path = site / report.release / "cases" / row.suite / f"{row.case_id}.json"
    try:
        data = data_path.read_bytes()
    except FileNotFoundError:
        return None
    has_prev = exists_in(site, report.diff.previous_release, row.suite, row.case_id)
    # the case JSON's content, not its mtime: a page is a function of what it shows. The row as pydantic's JSON (its
    # fields in their order, as report.json holds them), not `digest`'s sorted JSON of its dump: 5 times cheaper
    key = hashlib.sha256(b"\0".join((shared.encode(), hashlib.sha256(data).digest(), row.model_dump_json().encode(),
                                     b"1" if has_prev else b"0"))).hexdigest()
    return f"{row.suite}/{row.case_id}", key, data_path, data, has_prev


def stale_rows(site: Path, report: Report, shared: str, old_index: dict[str, str], limit: int
               ) -> tuple[dict[str, str], list[CaseRow]] | None:
    """The page index entries of the cases whose pages are up to date, and the rows whose pages `case_pages` may
    write (the others; a row without pages too); None once ``limit`` such rows are found (a large render: the
    forked workers check every case themselves)."""
    fresh: dict[str, str] = {}
    stale: list[CaseRow] = []
    for row in report.cases:
        got = page_key(site, report, row, shared)
        if got is not None and old_index.get(got[0]) == got[1] and got[2].with_suffix(".html").exists():
            fresh[got[0]] = got[1]
            continue
        stale.append(row)
        if len(stale) >= limit:
            return None
    return fresh, stale


def case_pages(env: Environment, site: Path, report: Report, row: CaseRow, nav: dict[str, Any],
               shared: str, old_index: dict[str, str], index: dict[str, str],
               parts: CaseParts | None = None) -> list[Path]:
    """The case page and its log files; skipped when nothing they show has changed.

    ``parts``: `case_templates(env)`, fetched once for many cases (each fetch stats the template files).

    A case page is a function of its case JSON (its bytes), its report row, the templates, the report's
    systems and metric metadata, and whether the previous release has the case: ``index``
    records a digest of those per case, so a one-case change renders one case's pages.
    """
    got = page_key(site, report, row, shared)
    if got is None:
        return []
    ident, key, data_path, data, has_prev = got
    index[ident] = key
    page = data_path.with_suffix(".html")
    if old_index.get(ident) == key and page.exists():
        return []
    prev = report.diff.previous_release
    detail = CaseDetail.read(data)
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
    case_page, panel = parts or case_templates(env)
    ctx["panels"] = [panel(v) for v in views]
    written = write_logs(data_path.parent, views)
    atomic_write_text(page, case_page(ctx))
    written.append(page)
    if ident in old_index:  # rendered before: what the page no longer shows goes
        remove_unshown(data_path.parent, row.case_id, views)
    return written


def remove_unshown(page_dir: Path, case_id: str, views: list[dict[str, Any]]) -> None:
    """Remove the files a case page rendered before showed and this one does not: the full log of a run the page
    now shows whole (or that has no log), and the compare page an older evalkit wrote (two systems side by side are now
    the case page's ``?compare``; `evalkit.names.COMPARE_PAGE` keeps that name from being a case's)."""
    fsutil.remove(page_dir / f"{case_id}.{COMPARE_PAGE}.html")
    for v in views:
        for run in v["runs"]:
            if not run["log_file"]:
                fsutil.remove(page_dir / log_file(case_id, v["name"], run["index"]))


def remove_gone_cases(site: Path, report: Report, old_index: dict[str, str], index: dict[str, str]) -> list[Path]:
    """Remove the pages of cases rendered before but not now (the case left the project, so summarize removed
    its JSON): its page, its systems' test logs and an older evalkit's compare page. The files removed."""
    names = {s.name for s in report.systems}
    removed = []
    for ident in sorted(set(old_index) - set(index)):
        suite, _, case_id = ident.partition("/")
        folder = site / report.release / "cases" / suite
        if not (is_valid_name(suite) and is_valid_name(case_id)) or (folder / f"{case_id}.json").exists():
            continue
        gone = [folder / f"{case_id}.html", folder / f"{case_id}.{COMPARE_PAGE}.html"]
        prefix = f"{case_id}."
        for path in folder.glob(f"{case_id}.*.txt") if folder.is_dir() else []:
            system, _, rest = path.name[len(prefix):].partition(".log")
            if system in names and (rest == ".txt" or (rest.startswith(".") and rest[1:-4].isdigit()
                                                       and rest.endswith(".txt"))):
                gone.append(path)
        for path in gone:
            if path.exists():
                fsutil.remove(path)
                removed.append(path)
    return removed


def case_templates(env: Environment) -> CaseParts:
    """What renders the case page (from its context) and the panel of one system (`evalkit.report.panel`). While
    ``env`` finds the shipped base and case templates the page is Python (`evalkit.report.case_markup`, the same
    bytes), and so is the panel's judge/rubric section while it finds the shipped macros.html.j2; a
    ``templates_dir`` that changes one gets Jinja."""

    graded = case_markup.graded_sections if case_markup.shipped(env, case_markup.MACROS) \
        else env.get_template("macros.html.j2").module.graded_sections  # type: ignore[attr-defined]
    case_t = env.get_template("case.html.j2")
    system_panel = panel_code.system_panel  # looked up once: each lookup passes through the lazy module's proxy
    if case_markup.shipped(env):
        return lambda ctx: case_markup.case_page(env, ctx), lambda view: system_panel(view, graded)
    return lambda ctx: case_t.render(ctx), lambda view: system_panel(view, graded)


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
    env, site, report, nav, shared, old_index, parts, missing = _FORKED
    index: dict[str, str] = {}
    written: list[Path] = []
    try:
        with _templates_loaded(env, missing):
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
    n = len(report.cases)
    workers = case_workers(n) if workers is None else workers
    parts = case_templates(env)
    # Every template a case page uses is compiled here, once, before any worker forks (else each worker compiled
    # the base page and the kinds' partials again); the case pages then skip Jinja's check of each template
    # against its file (auto_reload: a stat at every `extends` and `include` of thousands of pages): the page
    # index's key holds the templates' times, taken before this render. A template loaded by an earlier render of
    # this process is checked here, once (it may have changed since).
    loaded = {key[1] for key in (env.cache or {}).keys() if isinstance(key, tuple) and len(key) == 2}
    missing = []
    for name in sorted({"base.html.j2", *(f"case_{s.kind}.html.j2" for s in report.suites), *loaded}):
        try:
            env.get_template(name)
        except TemplateNotFound:  # a kind without a partial of its own (the page includes it "ignore missing")
            missing.append(name)
    return _render_cases(env, site, report, nav, shared, old_index, workers, meanwhile, parts, missing)


@contextlib.contextmanager
def _templates_loaded(env: Environment, missing: list[str]) -> Iterator[None]:
    """While case pages render: the templates loaded (`render_cases`) are used without a stat of their files, and a
    kind's partial that does not exist (``missing``) is an empty template (Jinja searched every template folder for
    it at each page that includes it "ignore missing", which shows nothing either)."""
    reload, env.auto_reload = env.auto_reload, False
    keys = [(weakref.ref(env.loader), name) for name in missing] if env.cache is not None and env.loader else []
    for key in keys:
        env.cache[key] = env.from_string("")  # type: ignore[index]
    try:
        yield
    finally:
        env.auto_reload = reload
        for key in keys:
            try:
                del env.cache[key]  # type: ignore[union-attr]
            except KeyError:  # pushed out of Jinja's cache by others
                pass


@contextlib.contextmanager
def _heap_frozen() -> Iterator[None]:
    """While case pages render, the objects alive before (the report's rows, the templates, the modules: hundreds of
    thousands at 10,000 cases) stay out of the garbage collector's passes (`gc.freeze`): each full pass walked them
    all again, every few hundred pages, in the parent and in each forked worker. Given back to it after, unless the
    caller had frozen the heap already (a run's render task: evalkit.doitplus): gc cannot give back only part of it,
    and what the caller froze stays so."""
    caller_froze = gc.get_freeze_count() > 0
    gc.freeze()
    try:
        yield
    finally:
        if not caller_froze:
            gc.unfreeze()


def _render_cases(env: Environment, site: Path, report: Report, nav: dict[str, Any], shared: str,
                  old_index: dict[str, str], workers: int, meanwhile: Callable[[], list[Path]] | None,
                  parts: CaseParts, missing: list[str]) -> tuple[dict[str, str], list[Path]]:
    with _heap_frozen():
        return _render_cases_now(env, site, report, nav, shared, old_index, workers, meanwhile, parts, missing)


def _render_cases_now(env: Environment, site: Path, report: Report, nav: dict[str, Any], shared: str,
                      old_index: dict[str, str], workers: int, meanwhile: Callable[[], list[Path]] | None,
                      parts: CaseParts, missing: list[str]) -> tuple[dict[str, str], list[Path]]:
    global _FORKED
    n = len(report.cases)
    index: dict[str, str] = {}
    written: list[Path] = []
    rows = report.cases
    if workers > 1 and n and old_index:
        # a rerun after a few edits: the cases whose pages are up to date are found here (a read and a digest of each
        # case JSON, ~0.05 s per 1,000 cases) and the few others render here too: no pool of forked workers, each of
        # which would check its share of every case again (a release never rendered has no page up to date)
        few = stale_rows(site, report, shared, old_index, PARALLEL_MIN_CASES)
        if few is not None:
            index.update(few[0])
            rows, workers = few[1], 1
    if workers <= 1 or n == 0:
        written += meanwhile() if meanwhile else []
        with _templates_loaded(env, missing):
            for row in rows:
                written += case_pages(env, site, report, row, nav, shared, old_index, index, parts)
        return index, written
    size = max(25, math.ceil(n / (workers * 32)))  # small chunks: the workers finish together (a chunk ~0.1 s)
    chunks = [(i, min(n, i + size)) for i in range(0, n, size)]
    _FORKED = (env, site, report, nav, shared, old_index, parts, missing)
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
