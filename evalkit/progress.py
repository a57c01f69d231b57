"""What `evalkit run` shows while it runs, and the table it prints at the end.

Three modes, chosen by `evalkit run` (`mode_for`):

- ``live`` (standard output is a terminal): a `rich` display redrawn four times a second, with
  tasks done of total per stage, time left, tasks and containers running, model calls and spend
  against the judge's budget. Failures and what tasks print appear above it.
- ``plain`` (not a terminal: CI, a pipe, a file): doit's lines as before, ``.  <task>`` per
  executed task (`doitplus.ExecutedOnlyReporter`, unchanged: tests and scripts parse them).
- ``quiet`` (``-q``): no progress at all; failures are still reported.

Counters (`COUNTERS`) are process-wide and thread-safe: the model client counts each call it
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
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from evalkit.doitplus import ExecutedOnlyReporter

MODES = ("live", "plain", "quiet")


class Counters:
    """Model calls, spend and running containers of this process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.model_calls = 0
            self.spend_usd = 0.0
            self.budgeted_spend_usd = 0.0
            self.budget_usd: float | None = None
            self.containers = 0
            self.containers_started = 0

    def add_budget(self, limit_usd: float | None) -> None:
        """A budget was made (one per judge client): its limit adds to the run's."""
        if limit_usd is None:
            return
        with self._lock:
            self.budget_usd = (self.budget_usd or 0.0) + limit_usd

    def model_call(self, usd: float, budgeted: bool) -> None:
        """One model call was charged (``budgeted``: to a budget with a limit)."""
        with self._lock:
            self.model_calls += 1
            self.spend_usd += usd
            if budgeted:
                self.budgeted_spend_usd += usd

    @contextmanager
    def container(self) -> Iterator[None]:
        """Counts a container as running for the duration of the block."""
        with self._lock:
            self.containers += 1
            self.containers_started += 1
        try:
            yield
        finally:
            with self._lock:
                self.containers -= 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"model_calls": self.model_calls, "spend_usd": self.spend_usd,
                    "budgeted_spend_usd": self.budgeted_spend_usd, "budget_usd": self.budget_usd,
                    "containers": self.containers, "containers_started": self.containers_started}


COUNTERS = Counters()

EXTRA_LINES: list[Callable[[], str]] = []
"""More status lines of the live display, each asked at every refresh (the cluster executor's calls per worker)."""


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


class RunState:
    """Tasks per stage: total, done (run, up to date or failed), failed, running; durations of runs."""

    def __init__(self, jobs: int = 1) -> None:
        self.lock = threading.RLock()
        self.jobs = max(1, jobs)
        self.total: dict[str, int] = {}
        self.done: dict[str, int] = defaultdict(int)
        self.failed: dict[str, int] = defaultdict(int)
        self.durations: dict[str, list[float]] = defaultdict(list)
        self.started: dict[str, float] = {}
        self.seen_stages: set[str] = set()
        self.t0 = time.monotonic()

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
        total: dict[str, int] = {}
        for name in tasks:  # stages in the order doit holds them (generate, execute, ...)
            if name in seen and tasks[name].actions and not name.startswith("_"):
                total[stage_of(name)] = total.get(stage_of(name), 0) + 1
        with self.lock:
            self.total = total

    def start(self, name: str) -> bool:
        """Note a task's start; True when it is the first of its stage to start."""
        stage = stage_of(name)
        with self.lock:
            first = stage not in self.seen_stages
            self.seen_stages.add(stage)
            self.started[name] = time.monotonic()
            return first

    def finish(self, name: str, failed: bool = False, ran: bool = True) -> None:
        stage = stage_of(name)
        with self.lock:
            t = self.started.pop(name, None)
            if ran and t is not None:
                self.durations[stage].append(time.monotonic() - t)
            self.done[stage] += 1
            if failed:
                self.failed[stage] += 1

    def time_left(self) -> float | None:
        """Remaining tasks times their stage's mean duration (all stages' mean where a stage has none
        yet), over the jobs in parallel; None before any task ran."""
        with self.lock:
            every = [d for ds in self.durations.values() for d in ds]
            if not every:
                return None if any(self.total.get(s, 0) > self.done.get(s, 0) for s in self.total) else 0.0
            overall = sum(every) / len(every)
            left = 0.0
            for stage, total in self.total.items():
                remaining = max(0, total - self.done.get(stage, 0))
                ds = self.durations.get(stage)
                left += remaining * (sum(ds) / len(ds) if ds else overall)
            now = time.monotonic()
            running = sum(now - t for t in self.started.values())  # work already done on running tasks
            return max(0.0, left - running) / self.jobs

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
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

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
        from rich.console import Console
        from rich.live import Live

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
    from evalkit.report.verdict import untestable_reason, verdict

    v = c.verdict or verdict(c)
    if v == "not testable":
        return f"not testable ({untestable_reason(c).split(':')[0]})"
    if v == "no detectable difference" and c.mdd is not None and c.alpha_holm is not None:
        return f"no detectable difference (MDD {c.mdd:.3g} at α {c.alpha_holm:.3g})"
    return v


def summary_rows(site: Path, release: str) -> list[dict[str, Any]]:
    """One row per suite x system from site/<release>/report.json (empty when there is none)."""
    from evalkit.report.models import Report
    from evalkit.report.render import fmt_value, primary_metric

    path = Path(site) / release / "report.json"
    try:
        report = Report.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return []
    rows = []
    baseline_of = {s.name: c.baseline for s in report.suites for c in s.comparisons}
    for suite in report.suites:
        headline = primary_metric(suite.metrics)
        page = Path(site) / release / "suites" / f"{suite.name}.html"
        for system, aggs in suite.systems.items():
            cov = suite.coverage.get(system)
            h = aggs.get(headline) if headline else None
            tokens = aggs.get("tokens")
            cost = aggs.get("cost_usd")
            value = "–"
            comp = next((c for c in suite.comparisons if c.system == system and c.metric == headline), None)
            if h is not None and h.value is not None:
                value = fmt_value(h.value, headline)
                if h.low is not None and h.high is not None:
                    value += f" {'≈' if h.approximate else ''}[{fmt_value(h.low, headline)}, {fmt_value(h.high, headline)}]"
            rows.append({
                "suite": suite.name, "system": system, "cases": cov.cases if cov else suite.n_cases,
                "attempted": cov.attempted if cov else None, "graded": h.n if h is not None else None,
                "tokens": int(tokens.value) if tokens is not None and tokens.value is not None else None,
                "cost_usd": cost.value if cost is not None else None,
                "metric": report.metric_info[headline].display if headline in report.metric_info else headline,
                "value": value, "page": os.path.relpath(page),
                "verdict": "baseline" if comp is None and system == baseline_of.get(suite.name) else
                           "–" if comp is None else _verdict_words(comp)})
    return rows


def print_summary(site: Path, release: str, console: Any = None) -> bool:
    """Print the table; False when the release has no report.json."""
    from rich.console import Console
    from rich.table import Table

    rows = summary_rows(site, release)
    if not rows:
        return False
    if console is None:
        tty = sys.stdout.isatty()
        console = Console(file=sys.stdout, width=None if tty else 200)
    table = Table(title=f"release {release}", title_justify="left")
    for name, justify in (("suite", "left"), ("system", "left"), ("cases", "right"), ("attempted", "right"),
                          ("graded", "right"), ("tokens", "right"), ("cost", "right"), ("headline (95% CI)", "left"),
                          ("vs baseline", "left"), ("page", "left")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for r in rows:
        table.add_row(r["suite"], r["system"], str(r["cases"]), "–" if r["attempted"] is None else str(r["attempted"]),
                      "–" if r["graded"] is None else str(r["graded"]),
                      "–" if r["tokens"] is None else f"{r['tokens']:,}",
                      "–" if r["cost_usd"] is None else _money(r["cost_usd"]),
                      f"{r['metric']} {r['value']}" if r["metric"] else "–", r["verdict"], r["page"])
    console.print(table)
    return True
