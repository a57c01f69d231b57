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

import bisect
import io
import math
import os
import statistics
import sys
import threading
import time
from collections import defaultdict, deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, TextIO

from evalkit import eta_priors
from evalkit.config import CanarySystem
from evalkit.counters import COUNTERS, EXTRA_LINES  # the counters live below the engine, which counts
from evalkit.doitplus import ExecutedOnlyReporter
from evalkit.report.leaderboard import leaderboards
from evalkit.report.models import read_report
from evalkit.report.verdict import untestable_reason, verdict
from evalkit.sandbox.budget import cpu_count
from evalkit.termtext import terminal_safe
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from doit.exceptions import BaseFail
    from doit.task import Task
    from rich.console import Console, Group
    from rich.live import Live

    from evalkit.cases import Case
    from evalkit.config import System
    from evalkit.report import render as render_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    render_code = later("evalkit.report.render")

MODES = ("live", "plain", "quiet")


def mode_for(quiet: bool, stream: TextIO | None = None) -> str:
    """quiet with -q; else $EVALKIT_PROGRESS when set (live/plain/quiet); else live on a terminal."""
    if quiet:
        return "quiet"
    forced = os.environ.get("EVALKIT_PROGRESS", "").strip().lower()
    if forced in MODES:
        return forced
    out: TextIO = sys.stdout if stream is None else stream
    try:
        tty = out.isatty()
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


def fmt_left(seconds: float | None, approximate: bool) -> str:
    """The time left as the display shows it: `fmt_duration`, or, when ``approximate`` (`RunState.approximate`),
    ``~`` and a coarse figure: whole seconds under 10 s, 5 s steps under a minute, whole minutes under an hour
    (``~3s``, ``~25s``, ``~3m``, ``~1h 05m``)."""
    if seconds is None or not approximate:
        return fmt_duration(seconds)
    if seconds < 9.5:
        return f"~{max(1, int(round(seconds)))}s"
    if seconds < 57.5:
        return f"~{max(5, int(round(seconds / 5)) * 5)}s"
    m = int(round(seconds / 60))
    return f"~{m}m" if m < 60 else f"~{m // 60}h {m % 60:02d}m"


def fmt_range(left: float | None, span: tuple[float, float] | None, approximate: bool) -> str:
    """The time left with its range while it is approximate (`RunState.time_range`): ``~1m (25s–3m)``;
    `fmt_left` alone when it is not, or when the range rounds to one figure."""
    text = fmt_left(left, approximate)
    if left is None or span is None or not approximate:
        return text
    low, high = (fmt_left(v, True).removeprefix("~") for v in span)
    return text if low == high else f"{text} ({low}–{high})"


SYSTEM_CLASSES = ("live", "stored", "canary-<variant>")
"""What a system's tasks cost (`class_of_system`): ``live`` (a command or a model answers), ``stored`` (gold,
recorded, empty: the answer is on disk) or a canary's variant (evalkit makes the answer from the case; one variant's
patch starts a container where another's is answered from the cache or does not apply). A group's prior is its
stage's, kind's and class's on the reference machine (`evalkit.eta_priors`); priors only price what this run has
not seen yet: a (stage, suite, system) group is priced at what its own finished tasks took, else at what its
class's did in that stage and suite, else at its prior times how this machine compares with the reference so far
(`RunState.time_left`)."""
SETUP_S = {("grade", "rag"): 5.0}
"""Seconds a (stage, kind) group's first task takes once, on top of its prior (a rag suite's grade imports
ragas: 2 to 9 s on the reference machine, then each task takes hundredths), when a judge is configured: without
one the rag grade imports nothing (`setups_for`)."""
OUTLIER = 4.0
"""A finished task counts in its group's mean at most this many times the group's median (or its prior):
one timed-out container among quick ones does not price every task left at a share of its timeout."""
SHRINK = 3.0
"""A group's mean counts what it falls back to (its class's mean, else its prior) as this many tasks: the
first finished task weighs a quarter, the ninth three quarters."""
MACHINE_PSEUDO_S = 10.0
"""The machine factor counts this many seconds of work at the reference speed (a second of tiny tasks does
not rescale a minute of containers)."""
SURE_DONE_SHARE = 0.2
SURE_MEASURED_SHARE = 0.9
"""The time left is shown as approximate (``~``, `fmt_left`) until ``SURE_DONE_SHARE`` of the planned tasks are
done and while less than ``SURE_MEASURED_SHARE`` of the work left is priced by its own group's finished tasks
(the rest is priced by priors: `RunState.measured_share`). Replayed on the twelve recorded runs every point off
by more than 30% is shown approximate (tests/test_progress_eta.py); at 0.5, five points of a held-out run
(init-patch-first-run-n2) more than 30% off were not. In practice a run shows ``~`` until its last seconds."""

RANGE_MEASURED = 1.0
"""A group priced by its own n finished tasks may take (1 + this / sqrt(n)) times more or less than priced."""
RANGE_UNMEASURED = 2.5
"""A group priced by its class's tasks or a prior may take this many times more or less than priced (the
range `RunState.time_range` gives: replayed on the recorded runs, the time really left lies in it at every
point of 32 of the 33 recorded in sessions 43 and 44 on a quiet machine (90% of s44-init-pm-n4's), and at 90% or
more of the points on seven of the fourteen older ones; docs/guide/cli.md, Progress)."""

SANDBOX_STAGES = ("validate", "health", "execute")
"""The stages whose tasks run a case's tests in the sandbox, each run killed at the case's limit (``timeout_s``)."""
LAST_STAGES = ("summarize", "render")
"""The stages that wait on every other task: a hung task's time left comes before theirs."""
HUNG_FLOOR_S = 1.0
HUNG_LIMIT_SHARE = 0.25
HUNG_VALIDATION_SHARE = 1.5
"""A sandbox task counts as hung once it has run ``OUTLIER`` times its group's expected time, at least
``HUNG_FLOOR_S``, and at least ``HUNG_LIMIT_SHARE`` of its case's limit or, when the case's validation ran in this
run and this is less, ``HUNG_VALIDATION_SHARE`` times that validation's seconds (an ``execute`` task only:
`RunState.hang_bar`). A group
mostly answered from the cache (hundredths of a second) whose task starts real containers (a case health's
ablations: 2 s under load, of a 20 s limit) is not hanging; a case author sets the limit at several times a normal
run, and a patch's test run that has taken half again as long as the gold patch's and no patch's runs together is
far past a normal one."""

LOAD_SAMPLE_S = 0.5
"""How often the machine's load is read beside a run (`runnable_tasks`, `RunState.sample_load`)."""
LOAD_WINDOW_S = 10.0
"""The load beside a run is the median of the last this many seconds' readings (`RunState.cpu_factor`)."""


def runnable_tasks() -> float | None:
    """Tasks runnable on the machine this instant (/proc/stat's procs_running, the reader included: what
    `RunState.note_load` reads); None where it cannot be read (not Linux)."""
    try:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"procs_running "):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def machine_load() -> dict[str, float] | None:
    """What scripts/record-run-timeline.py records of the machine's load: ``running`` (`runnable_tasks`), and for
    comparison ``load1`` (the 1-minute load average: a minute late, still 2.3 forty seconds after three busy processes
    started) and ``psi10`` (the share of the last 10 s some task waited for a CPU, /proc/pressure/cpu: near 1 at any
    load past the CPUs, so it does not say how far past); None where none of them can be read (not Linux)."""
    out: dict[str, float] = {}
    running = runnable_tasks()
    if running is not None:
        out["running"] = running
    try:
        out["load1"] = os.getloadavg()[0]
    except OSError:
        pass
    try:
        with open("/proc/pressure/cpu", "rb") as f:
            some = f.readline().split()
        out["psi10"] = float(some[1].partition(b"=")[2]) / 100
    except (OSError, IndexError, ValueError):
        pass
    return out or None


Key = tuple[str, str, str]
"""(stage, suite, system) of a task: ('execute', 'patch', 'fixer'); ('validate', 'patch', ''); ('render', '', '')."""


def setups_for(judged: bool) -> dict[tuple[str, str], float]:
    """`SETUP_S` where a judge is configured (ragas is imported to judge rag answers); none without one."""
    return dict(SETUP_S) if judged else {}


def key_of(task_name: str) -> Key:
    """generate:sys:suite/case -> (generate, suite, sys); validate:suite/case -> (validate, suite, '')."""
    stage, _, rest = task_name.partition(":")
    if "/" not in rest:
        return stage, "", ""
    head = rest.rpartition("/")[0]
    system, _, suite = head.rpartition(":")
    return stage, suite, system


def case_of(task_name: str) -> str:
    """execute:sys:suite/case -> suite/case (a case's key); '' for a task of no case (summarize)."""
    _, suite, _ = key_of(task_name)
    return f"{suite}/{task_name.rpartition('/')[2]}" if suite else ""


def sandbox_limits(cases: Iterable[Case]) -> dict[str, float]:
    """Case key -> the limit of one of its test runs in the sandbox (its inputs' ``timeout_s``), for the cases
    whose kind has one (patch cases, sandboxed migrations)."""
    out: dict[str, float] = {}
    for case in cases:
        limit = getattr(case.inputs, "timeout_s", None)
        if isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit > 0:
            out[case.key] = float(limit)
    return out


def class_of_system(adapter: str, variant: str | None = None) -> str:
    """A system's class (`SYSTEM_CLASSES`) from its adapter's name and, for a canary, its variant."""
    if adapter == "canary":
        return f"canary-{variant}" if variant else "canary"
    return "stored" if adapter in ("gold", "recorded", "empty") else "live"


def system_classes(systems: Iterable[System]) -> dict[str, str]:
    """System name -> class (`class_of_system`), as `evalkit run` gives the live display."""
    return {s.name: class_of_system(s.adapter, s.variant if isinstance(s, CanarySystem) else None) for s in systems}


class Durations:
    """A group's finished tasks' durations, kept sorted with their sum: its median and `robust_sum` cost a
    bisection, not a pass over every task (an estimate is asked at every frame and, in a replay, at every task's
    end: recomputed from lists that was quadratic in the run's tasks)."""

    __slots__ = ("sorted", "total")

    def __init__(self) -> None:
        self.sorted: list[float] = []
        self.total = 0.0

    def add(self, d: float) -> None:
        bisect.insort(self.sorted, d)
        self.total += d

    def __len__(self) -> int:
        return len(self.sorted)

    def median(self) -> float:
        s, n = self.sorted, len(self.sorted)
        return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2

    def robust_sum(self, floor: float) -> float:
        """The durations' sum, each at most ``OUTLIER`` times their median (or ``floor``, when larger)."""
        cap = OUTLIER * max(self.median(), floor)
        over = self.sorted[bisect.bisect_right(self.sorted, cap):]  # the few beyond the cap
        return self.total - sum(over) + cap * len(over)


class RunState:
    """Tasks per stage: total, done (run, up to date or failed), failed, running; durations of runs."""

    def __init__(self, jobs: int = 1, kinds: dict[str, str] | None = None,
                 classes: dict[str, str] | None = None, setups: dict[tuple[str, str], float] | None = None,
                 limits: dict[str, float] | None = None, cpus: int | None = None) -> None:
        self.lock = threading.RLock()
        self.jobs = max(1, jobs)
        self.kinds: dict[str, str] = dict(kinds or {})
        """Suite -> kind (a group's prior: `evalkit.eta_priors`)."""
        self.setups: dict[tuple[str, str], float] = dict(SETUP_S if setups is None else setups)
        """(stage, kind) -> seconds its first task takes once (`SETUP_S`, `setups_for`)."""
        self.classes: dict[str, str] = dict(classes or {})
        """System -> class (`SYSTEM_CLASSES`; a system not listed is ``live``)."""
        self.limits: dict[str, float] = dict(limits or {})
        """Case key -> one test run's limit in the sandbox (`sandbox_limits`): where a hung task ends."""
        self.validated: dict[str, float] = {}
        """Case key -> seconds its validation ran in this run (its gold patch's and no patch's test runs, one after
        the other): how long a test run of that case takes here, for telling a hang (`hang_bar`)."""
        self.total: dict[str, int] = {}
        self.done: dict[str, int] = defaultdict(int)
        self.failed: dict[str, int] = defaultdict(int)
        self.durations: dict[str, list[float]] = defaultdict(list)
        # the same per (stage, suite, system): tasks of one suite and system are alike, a stage's are not (a
        # migration's validate is instant, a patch suite's runs containers; a canary's execute mostly instant)
        self.planned: list[str] = []
        self.group_total: dict[Key, int] = {}
        self.group_done: dict[Key, int] = defaultdict(int)
        self.group_durations: dict[Key, Durations] = defaultdict(Durations)
        self.class_durations: dict[tuple[str, str, str], Durations] = defaultdict(Durations)
        """(stage, suite, class) -> its groups' durations together (`means`' middle level)."""
        self.worked = 0.0
        """Seconds of every finished task that ran, summed."""
        self.priced = 0.0
        """Their priors (`group_prior`), summed: `machine_factor`."""
        self.ran_tasks = 0
        self._priors: dict[Key, float] = {}  # group_prior's and class_key's answers (kinds and classes are fixed)
        self._class_keys: dict[Key, tuple[str, str, str]] = {}
        self.started: dict[str, float] = {}
        self.seen_stages: set[str] = set()
        self._version = 0  # bumped by each change `means` depends on (a plan, a finished task)
        self._means: tuple[int, dict[Key, float]] | None = None
        self.clock: Callable[[], float] = time.monotonic  # a recorded run's replay sets its own
        self.t0 = self.clock()
        self.cpus = max(1, cpus if cpus is not None else cpu_count())
        """The CPUs the run's tasks share with whatever else the machine runs (`cpu_factor`)."""
        self.beside: deque[tuple[float, float]] = deque()
        """(when, tasks runnable beside the run's own) of the readings of the last ``LOAD_WINDOW_S`` (`note_load`)."""
        self._read_at = -math.inf

    def plan(self, tasks: dict[str, Task], selected: list[str]) -> None:
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
        groups: dict[Key, int] = {}
        for name in planned:
            total[stage_of(name)] = total.get(stage_of(name), 0) + 1
            groups[key_of(name)] = groups.get(key_of(name), 0) + 1
        with self.lock:
            self.planned = list(planned)
            self.total = total
            self.group_total = groups
            self._version += 1

    def start(self, name: str) -> bool:
        """Note a task's start; True when it is the first of its stage to start."""
        stage = stage_of(name)
        with self.lock:
            first = stage not in self.seen_stages
            self.seen_stages.add(stage)
            self.started[name] = self.clock()
            return first

    def finish(self, name: str, failed: bool = False, ran: bool = True) -> None:
        stage, key = stage_of(name), key_of(name)
        with self.lock:
            t = self.started.pop(name, None)
            if ran and t is not None:
                d = self.clock() - t
                self.durations[stage].append(d)
                self.group_durations[key].add(d)
                self.class_durations[self.class_key(key)].add(d)
                self.worked += d
                self.priced += self.group_prior(key)
                if stage == "validate":
                    self.validated[case_of(name)] = d
                self.ran_tasks += 1
            self.done[stage] += 1
            self.group_done[key] += 1
            if failed:
                self.failed[stage] += 1
            self._version += 1

    def sample_load(self) -> None:
        """Read the machine's runnable tasks (`runnable_tasks`) if ``LOAD_SAMPLE_S`` have passed since the last reading
        (the live display asks at each frame)."""
        with self.lock:
            now = self.clock()
            if now - self._read_at < LOAD_SAMPLE_S:
                return
            self._read_at = now
        running = runnable_tasks()
        if running is not None:
            self.note_load(running)

    def note_load(self, running: float) -> None:
        """A reading of the tasks runnable on the machine (`runnable_tasks`, the reader among them): those
        beyond the reader and one per task of this run running now are the machine's other load (`cpu_factor`)."""
        with self.lock:
            now = self.clock()
            self.beside.append((now, max(0.0, running - 1 - len(self.started))))
            while self.beside[0][0] < now - LOAD_WINDOW_S:
                self.beside.popleft()
            self._version += 1  # `means` depend on it

    def cpu_factor(self) -> float:
        """How much slower than on an idle machine a task that computes here (outside the sandbox: generate, grade,
        score, summarize, render) will run: the tasks runnable beside the run (median of the last ``LOAD_WINDOW_S``)
        and it share the CPUs (1.0 without readings, or with CPUs to spare). `means` prices such a group's tasks at
        its prior times this or the machine factor, whichever is more: under three busy processes on two cores the
        demo's summarize and render ran 2.1-2.2 times as long as on the quiet machine, its containers far less
        (docs/guide/cli.md, Progress)."""
        with self.lock:
            if not self.beside:
                return 1.0
            beside = statistics.median(n for _, n in self.beside)
            return max(1.0, (beside + 1) / self.cpus)

    def class_of(self, system: str) -> str:
        return self.classes.get(system, "live") if system else "live"

    def group_prior(self, key: Key) -> float:
        """A task's prior seconds of a (stage, suite, system) group on the reference machine, at this run's jobs
        (`eta_priors.prior_s`; past two jobs, a task outside the sandbox and last stages in proportion to them)."""
        prior = self._priors.get(key)
        if prior is None:
            prior = eta_priors.prior_s(key[0], self.kinds.get(key[1], ""), self.class_of(key[2]), self.jobs)
            if self.jobs > 2 and key[0] not in SANDBOX_STAGES and key[0] not in LAST_STAGES:
                # doit's jobs are threads of one process: a task that computes in Python shares the interpreter
                # with the others, so with more jobs than the two-job table's each takes longer in proportion
                # (not summarize and render: they run alone, after every other task)
                prior *= self.jobs / 2
            self._priors[key] = prior
        return prior

    def class_key(self, key: Key) -> tuple[str, str, str]:
        """(stage, suite, class) of a group: whose durations price it before its own do (`means`)."""
        found = self._class_keys.get(key)
        if found is None:
            found = self._class_keys[key] = (key[0], key[1], self.class_of(key[2]))
        return found

    def machine_factor(self) -> float:
        """How much slower this run's tasks are than the reference's: the work done over its priors, both
        padded with ``MACHINE_PSEUDO_S`` of reference work (1.0 before any task ran). The work done counts a
        timed-out task in full: the priors are means that include the demo's timeout (capping it here, as
        `means` do, made the demo's first run look faster than the reference: 50% of its points within 30%
        instead of 90%)."""
        with self.lock:
            return (self.worked + MACHINE_PSEUDO_S) / (self.priced + MACHINE_PSEUDO_S)

    def means(self) -> dict[Key, float]:
        """Seconds a task of each planned group is expected to take: its finished tasks' mean (each at most
        ``OUTLIER`` times their median), shrunk (``SHRINK``) toward its class's in the same stage and suite
        (a canary that has not run yet is priced at the canaries that have), itself shrunk toward the prior
        times `machine_factor`. Computed once per change (a display frame asks three times, and again until the
        next task ends)."""
        with self.lock:
            if self._means is not None and self._means[0] == self._version:
                return self._means[1]
            factor = self.machine_factor()
            # a task outside the sandbox computes here: on a machine busy with other work it runs at its share of the
            # CPUs, which the machine factor (mostly containers, waiting as much as computing) understates; that share
            # slows a machine quicker than the reference from its own speed
            local = factor * max(1.0, self.cpu_factor() / max(factor, 1.0))
            out: dict[Key, float] = {}
            for key in self.group_total:
                prior = self.group_prior(key) * (factor if key[0] in SANDBOX_STAGES else local)
                cds = self.class_durations.get(self.class_key(key))
                cls_mean = (cds.robust_sum(prior) + SHRINK * prior) / (len(cds) + SHRINK) if cds else prior
                ds = self.group_durations.get(key)
                out[key] = (ds.robust_sum(cls_mean) + SHRINK * cls_mean) / (len(ds) + SHRINK) if ds else cls_mean
            self._means = (self._version, out)
            return out

    def measured_share(self) -> float:
        """The share of the work left (`means` times tasks left) priced by its group's own finished tasks rather
        than by its class's or a prior (1.0 when nothing is left)."""
        with self.lock:
            means = self.means()
            priced = measured = 0.0
            for key, total in self.group_total.items():
                work = max(0, total - self.group_done.get(key, 0)) * means[key]
                priced += work
                if self.group_durations.get(key):
                    measured += work
            return measured / priced if priced > 0 else 1.0

    def approximate(self) -> bool:
        """Whether the time left is a rough figure (`SURE_DONE_SHARE`, `SURE_MEASURED_SHARE`)."""
        with self.lock:
            planned = sum(self.total.values())
            done = sum(self.done.values())
            return done < SURE_DONE_SHARE * planned or self.measured_share() < SURE_MEASURED_SHARE

    def time_left(self) -> float | None:
        """Seconds left: the work of the tasks not done over the concurrency the run achieves; None before
        any task ran.

        Work per (stage, suite, system) group (`means`): its tasks left, times the share of its finished
        tasks that ran (on a rerun most are up to date and cost nothing), times its expected duration. A
        running task has left its mean minus the time it has run, and at least half that time once it
        overruns (a slow task is likely slower still); a sandbox task (`SANDBOX_STAGES`) that has run past
        `hang_bar` and is still inside its case's limit (`sandbox_limits`) is taken for a hang: it has left what
        its limit leaves, and the run lasts at least that long and then the stages that wait on every task
        (`LAST_STAGES`); a patch's test run (``execute``: one run under the limit) past its limit is being killed and
        has nothing left (a validation or a health runs several). Concurrency: the work done per second so far, at
        most the jobs. A task outside the sandbox is priced for the machine's load as it is now (`cpu_factor`).
        benchmarks/eta_replay.py replays recorded runs and gives the figures."""
        span = self._estimate()
        return None if span is None else span[0]

    def time_range(self) -> tuple[float, float] | None:
        """(low, high) seconds left: `time_left`'s work, each group's divided and multiplied by how far a
        group priced that way has been off on the recorded runs: ``RANGE_MEASURED`` when its own tasks price
        it, ``RANGE_UNMEASURED`` when its class's or a prior does (a container's time on a shared machine
        varies 2-3x between runs of the same project). None before any task ran."""
        span = self._estimate()
        return None if span is None else (span[1], span[2])

    def _estimate(self) -> tuple[float, float, float] | None:
        """(time left, low, high): `time_left`, `time_range`."""
        with self.lock:
            now = self.clock()
            worked, ran_tasks = self.worked, self.ran_tasks
            if not ran_tasks:
                if any(self.total.get(s, 0) > self.done.get(s, 0) for s in self.total):
                    return None
                return 0.0, 0.0, 0.0
            factor = self.machine_factor()
            done_all = sum(self.done.values())
            ran_all = ran_tasks / done_all if done_all else 1.0
            means = self.means()
            left = low = high = tail = 0.0
            spreads: dict[Key, float] = {}
            running = {key_of(n) for n in self.started}
            setups_done = {(g[0], self.kinds.get(g[1], "")) for g, n in self.group_done.items() if n} | \
                          {(g[0], self.kinds.get(g[1], "")) for g in running}
            for key, total in self.group_total.items():
                done = self.group_done.get(key, 0)
                remaining = max(0, total - done)
                if not remaining:
                    continue
                n_ran = len(self.group_durations.get(key, ()))
                ran = n_ran / done if done else ran_all
                work = remaining * min(ran, 1.0) * means[key]
                setup = (key[0], self.kinds.get(key[1], ""))
                if setup in self.setups and setup not in setups_done:
                    work += self.setups[setup] * factor
                    setups_done.add(setup)
                spread = spreads[key] = 1.0 + RANGE_MEASURED / n_ran ** 0.5 if n_ran else RANGE_UNMEASURED
                left += work
                low += work / spread
                high += work * spread
                if key[0] in LAST_STAGES:
                    tail += work
            hung = 0.0  # the longest a hung task has left: the run lasts at least that long
            hanging = False
            for name, t in self.started.items():  # counted above at a whole mean each
                key = key_of(name)
                mean = means.get(key, self.group_prior(key) * factor)
                run_for = now - t
                spread = spreads.get(key, RANGE_UNMEASURED)  # as counted above: at most once more its run
                low += max(mean / spread - run_for, 0.0) - mean / spread
                limit = self.limits.get(case_of(name)) if key[0] in SANDBOX_STAGES else None
                if limit is not None and self.hang_bar(name, mean, limit) < run_for and (
                        run_for < limit or key[0] == "execute"):
                    # far past what its group takes: most often a run that hangs until the case's limit kills it; a
                    # patch's test run (one run under the limit) past its limit is being killed now
                    hanging, until_limit = True, max(0.0, limit - run_for)
                    hung = max(hung, until_limit)
                    left += until_limit - mean
                    high += until_limit - mean * spread
                    continue
                left += max(mean - run_for, run_for / 2) - mean
                high += max(mean * spread - run_for, run_for) - mean * spread
            elapsed = max(now - self.t0, 1e-9)
            concurrency = min(float(self.jobs), max(worked / elapsed, 1.0))
            after = hung + tail if hanging else 0.0  # what waits on every task, the hung one included
            return (max(max(0.0, left) / concurrency, after), max(0.0, low) / concurrency,
                    max(max(0.0, high) / concurrency, after))

    def hang_bar(self, name: str, mean: float, limit: float) -> float:
        """Seconds past which a running sandbox task of a case with this limit is taken for a hang: ``OUTLIER`` times
        its group's mean, ``HUNG_FLOOR_S``, and ``HUNG_LIMIT_SHARE`` of the case's limit or, if less,
        ``HUNG_VALIDATION_SHARE`` times the case's validation in this run (two of its test runs, one after the
        other), when that ran here and the task is one test run (``execute``; a case health runs one per ablation):
        a case whose runs take a second under a 10 s limit is recognised hanging at under 2 s, not 2.5 s."""
        validated = self.validated.get(case_of(name)) if stage_of(name) == "execute" else None
        case_bar = HUNG_LIMIT_SHARE * limit
        if validated is not None:
            case_bar = min(case_bar, HUNG_VALIDATION_SHARE * validated)
        return max(OUTLIER * mean, HUNG_FLOOR_S, case_bar)

    def rows(self) -> list[tuple[str, int, int, int]]:
        with self.lock:
            return [(s, self.done.get(s, 0), t, self.failed.get(s, 0)) for s, t in self.total.items()]


def _money(v: float) -> str:
    return f"${v:,.4f}" if v < 10 else f"${v:,.2f}"


class LiveReporter(ExecutedOnlyReporter):
    """doit reporter that draws the live display (rich) instead of a line per task."""

    jobs = 1
    kinds: dict[str, str] = {}
    classes: dict[str, str] = {}
    setups: dict[tuple[str, str], float] | None = None
    limits: dict[str, float] = {}
    console: Console | None = None  # tests pass one
    every_task: tuple[str, ...] = ()
    """Every task with actions, in doit's order, when doit is given only some of them (a limited run,
    `evalkit.uptodate_manifest`): the others are counted as up to date, so the display shows the whole run."""

    def __init__(self, outstream: TextIO, options: dict[str, Any]) -> None:
        super().__init__(outstream, options)
        self.state = RunState(self.jobs, self.kinds, self.classes, self.setups, self.limits)
        self._live: Live | None = None
        self._lock = threading.RLock()

    # ---- display --------------------------------------------------------------------------
    def render(self) -> Group:
        self.state.sample_load()
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
        left = fmt_range(self.state.time_left(), self.state.time_range(), self.state.approximate())
        line = Text(f"elapsed {fmt_duration(elapsed)} · left {left} · "
                    f"{running} running · containers {c['containers']} · model calls {c['model_calls']} · {spend}",
                    style="dim")
        return Group(table, line, *(Text(extra(), style="dim") for extra in EXTRA_LINES))

    def __rich__(self) -> Group:
        return self.render()

    def write(self, text: str) -> None:
        with self._lock:
            if self._live is not None:
                self._live.console.print(text, end="", markup=False, highlight=False, soft_wrap=True)
            else:
                super().write(text)

    # ---- doit's reporter interface ---------------------------------------------------------
    def initialize(self, tasks: dict[str, Task], selected_tasks: list[str]) -> None:
        from rich.console import Console  # deferred: rich, only for the live display and the summary table
        from rich.live import Live  # deferred: rich, only for the live display and the summary table

        self.state.plan(tasks, list(selected_tasks))
        if self.every_task:
            _count_left_out(self.state, self.every_task)
        super().initialize(tasks, selected_tasks)  # freezes the heap (doitplus)
        console = self.console or Console(file=sys.stdout)
        with self._lock:
            self._live = Live(self, console=console, refresh_per_second=4, transient=False,
                              redirect_stdout=True, redirect_stderr=True)
            self._live.start()

    def execute_task(self, task: Task) -> None:  # no ".  name" line: the display counts it
        if task.actions and not task.name.startswith("_") and self.state.start(task.name):
            # a stage is drawn as soon as it starts (not only at the next 4 Hz tick, which a short
            # stage may finish before): one extra frame per stage
            with self._lock:
                live = self._live
            if live is not None:
                live.refresh()

    def add_success(self, task: Task) -> None:
        if task.actions and not task.name.startswith("_"):
            self.state.finish(task.name)

    def add_failure(self, task: Task, fail: BaseFail) -> None:
        if task.actions and not task.name.startswith("_"):
            self.state.finish(task.name, failed=True)
        with self._lock:
            super().add_failure(task, fail)

    def skip_uptodate(self, task: Task) -> None:
        if task.actions and not task.name.startswith("_"):
            self.state.finish(task.name, ran=False)

    def skip_ignore(self, task: Task) -> None:
        if task.actions and not task.name.startswith("_"):
            self.state.finish(task.name, ran=False)

    def complete_run(self) -> None:
        with self._lock:
            live, self._live = self._live, None
        if live is not None:
            live.refresh()
            live.stop()
        super().complete_run()


def _count_left_out(state: RunState, every_task: tuple[str, ...]) -> None:
    """Plan ``every_task`` and what ``state`` planned, the tasks doit was not given counted as up to date."""
    given = set(state.planned)
    known = set(every_task)
    state.plan_names([*every_task, *(n for n in state.planned if n not in known)])
    for name in every_task:
        if name not in given:
            state.finish(name, ran=False)


def is_live(reporter: type) -> bool:
    """Whether ``reporter`` (from `reporter_for`) draws the live display."""
    return issubclass(reporter, LiveReporter)


def with_every_task(reporter: type, every_task: list[str]) -> type:
    """The live reporter class ``reporter`` counting ``every_task`` (doit is given only some of them)."""
    return type(reporter.__name__, (reporter,), {"every_task": tuple(every_task)})


def show_up_to_date(reporter: type, every_task: list[str]) -> None:
    """The live display's last frame for a run in which doit was not started (every task up to date)."""
    from rich.console import Console  # deferred: rich, only for the live display and the summary table

    live = reporter(sys.stdout, {})
    _count_left_out(live.state, tuple(every_task))
    (live.console or Console(file=sys.stdout)).print(live.render())


class QuietReporter(ExecutedOnlyReporter):
    """No line per task; failures and doit's errors are still reported (`-q`)."""

    def execute_task(self, task: Task) -> None:
        pass


def reporter_for(mode: str, jobs: int = 1, kinds: dict[str, str] | None = None,
                 classes: dict[str, str] | None = None, setups: dict[tuple[str, str], float] | None = None,
                 limits: dict[str, float] | None = None) -> type:
    """The doit reporter class for a mode (plain: doitplus.ExecutedOnlyReporter, unchanged); ``kinds``:
    suite -> kind, ``classes``: system -> class (`SYSTEM_CLASSES`), ``setups``: `setups_for`, ``limits``:
    `sandbox_limits`, for the time left."""
    if mode == "live":
        return type("LiveReporter", (LiveReporter,), {"jobs": jobs, "kinds": dict(kinds or {}),
                                                      "classes": dict(classes or {}), "setups": setups,
                                                      "limits": dict(limits or {})})
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

    path = Path(site) / release / "report.json"
    try:
        report = read_report(path)
    except (OSError, ValueError):
        return []
    problems: dict[tuple[str, str], list[str]] = {}  # (suite, system) -> reasons of cells that are not results
    for row in report.cases:
        for name, cell in sorted(row.systems.items()):
            retry = (retries or {}).get((f"{row.suite}/{row.case_id}", name))
            if cell.excluded == "broken" or cell.status == "broken":
                continue  # the case's problem, not the system's: `broken_cases` says it once
            if cell.status in ERROR_STATUSES:
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
                value = render_code.fmt_value(h.value, headline)
                if h.low is not None and h.high is not None:
                    approx = "≈" if getattr(aggs.get(headline) if headline else None, "approximate", False) else ""
                    value += f" {approx}[{render_code.fmt_value(h.low, headline)}, {render_code.fmt_value(h.high, headline)}]"
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


def broken_cases(site: Path, release: str) -> list[str]:
    """suite/case: reason of each broken case of site/<release>/report.json, once per case (not per system)."""
    try:
        report = read_report(Path(site) / release / "report.json")
    except (OSError, ValueError):
        return []
    out = []
    for row in report.cases:
        cell = next((c for c in row.systems.values() if c.excluded == "broken" or c.status == "broken"), None)
        if cell is not None:
            reason = cell.reason.removeprefix("broken case: ")
            out.append(f"{row.suite}/{row.case_id}" + (f": {reason}" if reason else ""))
    return out


class _AsStdout(io.StringIO):
    """Text kept as rich writes it to this process's stdout: its encoding decides rich's characters (box lines
    where stdout takes them, ASCII where it does not)."""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(sys.stdout, "encoding", None) or "utf-8"


def summary_text(site: Path, release: str, retries: dict[tuple[str, str], str] | None = None) -> str:
    """The summary table as `print_summary` prints it when stdout is not a terminal ('' without a report.json)."""
    from rich.console import Console  # deferred: rich, only for the live display and the summary table

    out = _AsStdout()
    print_summary(site, release, Console(file=out, width=200), retries)
    return out.getvalue()


def print_summary(site: Path, release: str, console: Console | None = None,
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
    broken = broken_cases(site, release)
    if broken:  # a broken case is one problem, whatever the number of systems
        console.print(escape(terminal_safe(f"{len(broken)} broken case(s), left out of every system's count; first: "
                                           f"{_shorten(broken[0], FIRST_ERROR_CHARS)}")),
                      overflow="fold", highlight=False)
    for r in rows:  # why a row has errors: its first one, one line each, under the table
        if r["errors"]:
            console.print(escape(terminal_safe(f"first error of {r['suite']} × {r['system']} ({r['errors']}): "
                                               f"{_shorten(r['first_error'], FIRST_ERROR_CHARS)}")),
                          overflow="fold", highlight=False)
    return True
