"""What `evalkit run` shows while it runs, and the table it prints at the end.

Three modes, chosen by `evalkit run` (`mode_for`):

- ``live`` (standard output is a terminal): a `rich` display redrawn four times a second, with
  tasks done of total per stage, time left, tasks and containers running, model calls and spend
  against the judge's budget. Failures and what tasks print appear above it.
- ``plain`` (not a terminal: CI, a pipe, a file): doit's lines as before, ``.  <task>`` per
  executed task (`doitplus.ExecutedOnlyReporter`, unchanged: tests and scripts parse them).
- ``quiet`` (``-q``): no progress at all; failures are still reported.

Counters (`COUNTERS`, evalkit.counters) are process-wide and thread-safe: the model client counts each call it
charges to a budget, the Docker sandbox each container while it runs. doit calls the reporter from
its worker threads under ``-n N -P thread``, so every reporter method takes the state's lock.

After the run, `summary_table` reads site/<release>/report.json and prints one row per suite x
system: cases, attempted, graded, tokens, cost, the suite's headline metric with its interval,
and the suite page.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from evalkit.counters import COUNTERS, EXTRA_LINES  # the counters live below the engine, which counts
from evalkit.doitplus import ExecutedOnlyReporter
from evalkit.report.leaderboard import leaderboards
from evalkit.report.models import Report
from evalkit.report.verdict import untestable_reason, verdict
from evalkit.termtext import terminal_safe

MODES = ("live", "plain", "quiet")


def mode_for(quiet: bool, stream: Any = None) -> str:
    """quiet with -q; else $EVALKIT_PROGRESS when set (live/plain/quiet); else live on a terminal."""
    if quiet:
        return "quiet"
    forced = os.environ.get("EVALKIT_PROGRESS", "").strip().lower()
    if forced in MODES:
        return forced
    stream = sys.stdout if stream is None else stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return "live" if tty and os.environ.get("TERM") != "dumb" else "plain"


def group_of(task_name: str) -> tuple[str, str]:
    """generate:sys:suite/case -> (generate, suite); validate:suite/case -> (validate, suite); summarize -> (summarize, '')."""
    stage, _, rest = task_name.partition(":")
    return stage, rest.rpartition(":")[2].partition("/")[0] if "/" in rest else ""


def stage_of(task_name: str) -> str:
    """generate:sys:suite/case -> generate; summarize -> summarize."""
    return task_name.split(":", 1)[0]


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "estimating…"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"


#: Seconds one task of each stage takes, relative to the others (the demo's first run on 2 cores with Docker):
#: where a stage has not started yet, its tasks are priced at its prior, scaled by how the stages seen so far
#: compared with theirs. A stage not listed is priced at ``DEFAULT_PRIOR_S``.
STAGE_PRIOR_S = {"generate": 0.08, "validate": 0.7, "health": 0.5, "sandbox_image": 0.01, "execute": 1.0, "grade": 0.05,
                 "score": 0.01, "summarize": 0.6, "render": 0.4}
DEFAULT_PRIOR_S = 0.1
SHRINK = 3
"""A stage's mean duration counts its prior as this many tasks (one slow first task does not set it)."""


def _prior(stage: str) -> float:
    return STAGE_PRIOR_S.get(stage, DEFAULT_PRIOR_S)


class RunState:
    """Tasks per stage: total, done (run, up to date or failed), failed, running; durations of runs."""

    def __init__(self, jobs: int = 1) -> None:
        self.lock = threading.RLock()
        self.jobs = max(1, jobs)
        self.total: dict[str, int] = {}
        self.done: dict[str, int] = defaultdict(int)
        self.failed: dict[str, int] = defaultdict(int)
        self.durations: dict[str, list[float]] = defaultdict(list)
        # the same per (stage, suite): tasks of one suite are alike, a stage's are not (a migration's
        # validate is instant, a patch suite's runs containers)
        self.planned: list[str] = []
        self.group_total: dict[tuple[str, str], int] = {}
        self.group_done: dict[tuple[str, str], int] = defaultdict(int)
        self.group_durations: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.started: dict[str, float] = {}
        self.seen_stages: set[str] = set()
        self.clock: Callable[[], float] = time.monotonic  # a recorded run's replay sets its own
        self.t0 = self.clock()

    def plan(self, tasks: dict[str, Any], selected: list[str]) -> None:
        """Count the tasks with actions reachable from the selected ones, per stage."""
        seen: set[str] = set()
        stack = list(selected)
        while stack:
            name = stack.pop()
            if name in seen or name not in tasks:
                continue
            seen.add(name)
            t = tasks[name]
            stack.extend(t.task_dep)
            stack.extend(getattr(t, "setup_tasks", []))
        planned = [name for name in tasks  # stages in the order doit holds them (generate, execute, ...)
                   if name in seen and tasks[name].actions and not name.startswith("_")]
        self.plan_names(planned)

    def plan_names(self, planned: list[str]) -> None:
        """The tasks this run will go through (up to date or not), by name."""
        total: dict[str, int] = {}
        groups: dict[tuple[str, str], int] = {}
        for name in planned:
            total[stage_of(name)] = total.get(stage_of(name), 0) + 1
            groups[group_of(name)] = groups.get(group_of(name), 0) + 1
        with self.lock:
            self.planned = list(planned)
            self.total = total
            self.group_total = groups

    def start(self, name: str) -> bool:
        """Note a task's start; True when it is the first of its stage to start."""
        stage = stage_of(name)
        with self.lock:
            first = stage not in self.seen_stages
            self.seen_stages.add(stage)
            self.started[name] = self.clock()
            return first

    def finish(self, name: str, failed: bool = False, ran: bool = True) -> None:
        stage = stage_of(name)
        with self.lock:
            t = self.started.pop(name, None)
            if ran and t is not None:
                self.durations[stage].append(self.clock() - t)
                self.group_durations[group_of(name)].append(self.clock() - t)
            self.done[stage] += 1
            self.group_done[group_of(name)] += 1
            if failed:
                self.failed[stage] += 1

    def time_left(self) -> float | None:
        """Seconds left: the work of the tasks not done over the concurrency the run achieves; None before
        any task ran.

        Work per stage: its tasks left, times the share of its finished tasks that ran (on a rerun most are
        up to date and cost nothing), times its mean duration, shrunk toward a prior (``STAGE_PRIOR_S``,
        scaled by how the stages seen so far compare with their priors: a stage not started yet is
        neither 0 nor the mean of unlike stages). Concurrency: the work done per second of the run so
        far, at most the jobs. On the demo's recorded runs the estimate is within 30% of the time left
        from 20% of the tasks on (tests/test_progress_eta.py)."""
        with self.lock:
            now = self.clock()
            every = [(stage, d) for stage, ds in self.durations.items() for d in ds]
            if not every:
                return None if any(self.total.get(s, 0) > self.done.get(s, 0) for s in self.total) else 0.0
            worked = sum(d for _, d in every)
            scale = worked / max(sum(_prior(stage) for stage, _ in every), 1e-9)
            done_all = sum(self.done.values())
            ran_all = len(every) / done_all if done_all else 1.0
            left = 0.0
            for group, total in self.group_total.items():
                remaining = max(0, total - self.group_done.get(group, 0))
                if not remaining:
                    continue
                stage = group[0]
                ds = self.group_durations.get(group) or self.durations.get(stage, [])
                prior = _prior(stage) * scale
                mean = (sum(ds) + SHRINK * prior) / (len(ds) + SHRINK)
                done = self.group_done.get(group, 0) or self.done.get(stage, 0)
                ran = len(ds) / done if done else ran_all
                left += remaining * min(ran, 1.0) * mean
            left -= sum(min(now - t, _prior(stage_of(n)) * scale) for n, t in self.started.items())
            elapsed = max(now - self.t0, 1e-9)
            concurrency = min(float(self.jobs), max(worked / elapsed, 1.0 / self.jobs))
            return max(0.0, left) / concurrency

    def rows(self) -> list[tuple[str, int, int, int]]:
        with self.lock:
            return [(s, self.done.get(s, 0), t, self.failed.get(s, 0)) for s, t in self.total.items()]


def _money(v: float) -> str:
    return f"${v:,.4f}" if v < 10 else f"${v:,.2f}"


class LiveReporter(ExecutedOnlyReporter):
    """doit reporter that draws the live display (rich) instead of a line per task."""

    jobs = 1
    console: Any = None  # a rich Console; tests pass one

    def __init__(self, outstream: Any, options: dict[str, Any]) -> None:
        super().__init__(outstream, options)
        self.state = RunState(self.jobs)
        self._live: Any = None
        self._lock = threading.RLock()

    # ---- display --------------------------------------------------------------------------
    def render(self) -> Any:
        from rich.console import Group  # deferred: rich, only for the live display and the summary table
        from rich.progress_bar import ProgressBar  # deferred: rich, only for the live display and the summary table
        from rich.table import Table  # deferred: rich, only for the live display and the summary table
        from rich.text import Text  # deferred: rich, only for the live display and the summary table

        table = Table.grid(padding=(0, 1))
        table.add_column("stage", style="bold")
        table.add_column("bar", width=30)
        table.add_column("count", justify="right")
        table.add_column("note")
        for stage, done, total, failed in self.state.rows():
            note = Text(f"{failed} failed", style="red") if failed else Text("")
            table.add_row(stage, ProgressBar(total=max(total, 1), completed=done, width=30),
                          f"{done}/{total}", note)
        c = COUNTERS.snapshot()
        with self.state.lock:
            running = len(self.state.started)
        elapsed = time.monotonic() - self.state.t0
        spend = f"spend {_money(c['spend_usd'])}"
        if c["budget_usd"] is not None:
            spend += f" (judge {_money(c['budgeted_spend_usd'])} of {_money(c['budget_usd'])} budget)"
        line = Text(f"elapsed {fmt_duration(elapsed)} · left {fmt_duration(self.state.time_left())} · "
                    f"{running} running · containers {c['containers']} · model calls {c['model_calls']} · {spend}",
                    style="dim")
        return Group(table, line, *(Text(extra(), style="dim") for extra in EXTRA_LINES))

    def __rich__(self) -> Any:
        return self.render()

    def write(self, text: str) -> None:
        with self._lock:
            if self._live is not None:
                self._live.console.print(text, end="", markup=False, highlight=False, soft_wrap=True)
            else:
                super().write(text)

    # ---- doit's reporter interface ---------------------------------------------------------
    def initialize(self, tasks: Any, selected_tasks: Any) -> None:
        from rich.console import Console  # deferred: rich, only for the live display and the summary table
        from rich.live import Live  # deferred: rich, only for the live display and the summary table

        self.state.plan(tasks, list(selected_tasks))
        super().initialize(tasks, selected_tasks)  # freezes the heap (doitplus)
        console = self.console or Console(file=sys.stdout)
        with self._lock:
            self._live = Live(self, console=console, refresh_per_second=4, transient=False,
                              redirect_stdout=True, redirect_stderr=True)
            self._live.start()

    def execute_task(self, task: Any) -> None:  # no ".  name" line: the display counts it
        if task.actions and not task.name.startswith("_") and self.state.start(task.name):
            # a stage is drawn as soon as it starts (not only at the next 4 Hz tick, which a short
            # stage may finish before): one extra frame per stage
            with self._lock:
                live = self._live
            if live is not None:
                live.refresh()

    def add_success(self, task: Any) -> None:
        if task.actions and not task.name.startswith("_"):
            self.state.finish(task.name)

    def add_failure(self, task: Any, fail: Any) -> None:
        if task.actions and not task.name.startswith("_"):
            self.state.finish(task.name, failed=True)
        with self._lock:
            super().add_failure(task, fail)

    def skip_uptodate(self, task: Any) -> None:
        if task.actions and not task.name.startswith("_"):
            self.state.finish(task.name, ran=False)

    def skip_ignore(self, task: Any) -> None:
        if task.actions and not task.name.startswith("_"):
            self.state.finish(task.name, ran=False)

    def complete_run(self) -> None:
        with self._lock:
            live, self._live = self._live, None
        if live is not None:
            live.refresh()
            live.stop()
        super().complete_run()


class QuietReporter(ExecutedOnlyReporter):
    """No line per task; failures and doit's errors are still reported (`-q`)."""

    def execute_task(self, task: Any) -> None:
        pass


def reporter_for(mode: str, jobs: int = 1) -> type:
    """The doit reporter class for a mode (plain: doitplus.ExecutedOnlyReporter, unchanged)."""
    if mode == "live":
        return type("LiveReporter", (LiveReporter,), {"jobs": jobs})
    if mode == "quiet":
        return QuietReporter
    return ExecutedOnlyReporter


# ---- the table at the end -------------------------------------------------------------------

def _verdict_words(c: Any) -> str:
    """The headline comparison's verdict as the pages word it (evalkit.report.verdict)."""

    v = c.verdict or verdict(c)
    if v == "not testable":
        return f"not testable ({untestable_reason(c).split(':')[0]})"
    if v == "no detectable difference" and c.mdd is not None and c.alpha_holm is not None:
        return f"no detectable difference (MDD {c.mdd:.3g} at α {c.alpha_holm:.3g})"
    return v


ERROR_STATUSES = ("error", "timeout", "infra_error", "bug", "broken")
"""Cell statuses the summary table counts as errors (with the first one's reason)."""
FIRST_ERROR_CHARS = 160


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def summary_rows(site: Path, release: str, retries: dict[tuple[str, str], str] | None = None) -> list[dict[str, Any]]:
    """One row per suite x system from site/<release>/report.json (empty when there is none).

    ``retries``: (suite/case, system) -> reason of pairs left with an infrastructure error to retry
    (`evalkit.run_status.pending_retries`; a judge API failure leaves the report's cell ok): errors too."""
    from evalkit.report.render import fmt_value  # deferred: the site renderer imports jinja2; only rendering needs it

    path = Path(site) / release / "report.json"
    try:
        report = Report.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return []
    problems: dict[tuple[str, str], list[str]] = {}  # (suite, system) -> reasons of cells that are not results
    for row in report.cases:
        for name, cell in sorted(row.systems.items()):
            retry = (retries or {}).get((f"{row.suite}/{row.case_id}", name))
            if cell.status in ERROR_STATUSES or cell.excluded == "broken":
                problems.setdefault((row.suite, name), []).append(
                    f"{row.case_id}: {cell.status}" + (f": {cell.reason}" if cell.reason else ""))
            elif retry is not None:
                problems.setdefault((row.suite, name), []).append(f"{row.case_id}: infra_error: {retry}")
    rows = []
    boards = leaderboards(report)  # the site's headline: the leaderboard's metric, over the same cases
    baseline_of = {s.name: c.baseline for s in report.suites for c in s.comparisons}
    for suite in report.suites:
        board = boards[suite.name]
        headline = board.metric
        entries = {e.system: e for e in board.entries}
        page = Path(site) / release / "suites" / f"{suite.name}.html"
        for system, aggs in suite.systems.items():
            cov = suite.coverage.get(system)
            h = entries.get(system) if headline else None
            tokens = aggs.get("tokens")
            cost = aggs.get("cost_usd")
            value = "–"
            comp = next((c for c in suite.comparisons if c.system == system and c.metric == headline), None)
            if h is not None and h.value is not None:
                value = fmt_value(h.value, headline)
                if h.low is not None and h.high is not None:
                    approx = "≈" if getattr(aggs.get(headline) if headline else None, "approximate", False) else ""
                    value += f" {approx}[{fmt_value(h.low, headline)}, {fmt_value(h.high, headline)}]"
                if h.canary:
                    value += " (canary)"
            rows.append({
                "suite": suite.name, "system": system, "cases": cov.cases if cov else suite.n_cases,
                "attempted": cov.attempted if cov else None, "graded": h.n if h is not None else None,
                "tokens": int(tokens.value) if tokens is not None and tokens.value is not None else None,
                "cost_usd": cost.value if cost is not None else None,
                "metric": (report.metric_info[headline].display if headline in report.metric_info else headline)
                if headline else None,
                "value": value, "page": os.path.relpath(page),
                "verdict": "baseline" if comp is None and system == baseline_of.get(suite.name) else
                           "–" if comp is None else _verdict_words(comp),
                "errors": len(problems.get((suite.name, system), [])),
                "first_error": (problems.get((suite.name, system)) or [""])[0]})
    return rows


def print_summary(site: Path, release: str, console: Any = None,
                  retries: dict[tuple[str, str], str] | None = None) -> bool:
    """Print the table (``retries``: see `summary_rows`); False when the release has no report.json."""
    from rich.console import Console  # deferred: rich, only for the live display and the summary table
    from rich.markup import escape  # deferred: rich, only for the live display and the summary table
    from rich.table import Table  # deferred: rich, only for the live display and the summary table

    rows = summary_rows(site, release, retries)
    if not rows:
        return False
    if console is None:
        tty = sys.stdout.isatty()
        console = Console(file=sys.stdout, width=None if tty else 200)
    table = Table(title=f"release {release}", title_justify="left")
    errors = any(r["errors"] for r in rows)  # the column is there when some row has one (else the table keeps its width)
    for name, justify in (("suite", "left"), ("system", "left"), ("cases", "right"), ("attempted", "right"),
                          ("graded", "right"), *([("errors", "right")] if errors else []), ("tokens", "right"),
                          ("cost", "right"), ("headline (95% CI)", "left"), ("vs baseline", "left"), ("page", "left")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for r in rows:
        cells = [r["suite"], r["system"], str(r["cases"]), "–" if r["attempted"] is None else str(r["attempted"]),
                 "–" if r["graded"] is None else str(r["graded"]), *([str(r["errors"])] if errors else []),
                 "–" if r["tokens"] is None else f"{r['tokens']:,}",
                 "–" if r["cost_usd"] is None else _money(r["cost_usd"]),
                 f"{r['metric']} {r['value']}" if r["metric"] else "–", r["verdict"], r["page"]]
        # names and reasons come from cases and systems: no escape sequence, no rich markup reaches the terminal
        table.add_row(*(escape(terminal_safe(c)) for c in cells))
    console.print(table)
    for r in rows:  # why a row has errors: its first one, one line each, under the table
        if r["errors"]:
            console.print(escape(terminal_safe(f"first error of {r['suite']} × {r['system']} ({r['errors']}): "
                                               f"{_shorten(r['first_error'], FIRST_ERROR_CHARS)}")),
                          overflow="fold", highlight=False)
    return True
