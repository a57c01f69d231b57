"""The live display's time left, replayed on real recorded runs (scripts/record-run-timeline.py): each start
and finish fed to RunState at its recorded time, the estimate compared with the time that was really left.

Recordings, 2 cores with Docker shared with other work (durations are noisy, as a user's are):
- demo-first-run-n1/-n2: the demo's first run, one job and two; n1 is the run the priors were read from.
- init-first-run-n1: an `evalkit init --no-history` project (every kind, 9 canaries, one patch timing out at
  20 s), one job; looked at while the estimator was designed.
- held out, recorded and first replayed after the estimator was fixed: init-patch-migration-n1 (`evalkit init
  --kind patch --kind migration --no-history`, one job), init-first-run-n2 (`evalkit init --no-history`, two
  jobs), init-rerun-v2-n2 (`evalkit init --kind agentic --kind e2e --kind rag --kind generation`, whose v1
  init evaluated: the recorded v2 run reuses most sandbox runs; two jobs, 13 s).
- held out, recorded in session 26 (the fixer given ``pass_env: [PYTHONPATH]``, the recording machine's evalkit
  being a worktree): init-patch-first-run-n2 (`evalkit init --kind patch --no-history`, two jobs, a load average
  of 17 on 2 cores: each container 4-20 s), init-patch-rerun-edit-n1 (the same project after one case's
  problem statement was edited: that case's 36 tasks run, 205 are up to date; one job, 6.6 s).
- held out, recorded in session 27 (load average 8 to 14 on 2 cores): demo977-first-run-n1/-n2, the demo's first
  run as it is now (977 tasks: canaries, a recorded system, health), one job and two; demo977-first-run-n1b, the
  same run again with the same code 25 minutes later (67% of its points within 30%, then 2%: the run-to-run
  spread on this machine is larger than any change of order or estimator tried); init-first-run-2-n2
  (`evalkit init --no-history` as it is now, two jobs). Recorded to measure a pilot ordering (one case per
  suite and kind of system run first), which was not kept: docs/guide/cli.md (Progress) gives its figures.

- recorded in session 28, before the range (`RunState.time_range`) was added, whose spreads were then chosen on
  all thirteen: demo977-first-run-s28-n2, the demo's first run with two jobs at a load average of 3 rising to
  16-21 (542 s; 167 s user + 14 s sys CPU, the command systems included); held out, recorded after it was
  fixed: demo977-first-run-s28-n1, the same with one job at a load average of 20-21 (244 s; 11.6 s user + 2.0 s
  sys).

- recorded in session 43 on a quiet machine (load average 0.5-3.7 on 2 cores), with the code of that session (the
  sandbox first, ragas imported only with a judge): the s43-* recordings. Two are the references the priors are
  read from (`evalkit.eta_priors`, benchmarks/eta_replay.py ``REFERENCES``): s43-demo-first-run-n1 and -n2, the
  demo's first run with one job and with two. The estimator was changed three times, each time followed by runs
  recorded after the change and replayed once (held out): docs/guide/cli.md (Progress) lists which.
- recorded in session 44 on the same kind of machine (load average 0.7-3.7), the s44-* recordings: batch E with the
  estimator of session 43, then the change it led to (a case's validation as evidence of a hang, the last stages
  after a hang), then batch F, replayed once.

- recorded in session 45 (load average 0.3-5.3), the s45* recordings, with readings of the machine's load twice a
  second: nine quiet and seventeen beside three busy processes on the 2 cores, in batches G (looked at), H, I and J
  (each recorded after a change of the estimator and replayed once; nothing changed after J).

Figures (|relative error| over the points from 20% of the tasks on with >= 5 s left: median, 90th percentile,
largest, share within 30%) are in docs/guide/cli.md (Progress). The issue's criterion, within 30% at every
such point, is met on thirty-eight of the forty-two quiet session-43 to -45 recordings (`QUIET`, `QUIET_MISSED`), on
eleven of the seventeen loaded ones with readings (`LOADED_WITHIN`, `LOADED`) and on none
of the fourteen older ones, recorded with
older code (its task costs, the priors' of then) on a machine shared with other work (`MAX_ERROR`).
"""

from __future__ import annotations

import functools
import importlib.util
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable

import pytest

from evalkit import eta_priors, progress

DATA = Path(__file__).resolve().parent / "data" / "progress"




def _harness() -> ModuleType:
    """benchmarks/eta_replay.py as a module: its ``replay(path)`` feeds a recording to RunState."""
    spec = importlib.util.spec_from_file_location("eta_replay", DATA.parents[2] / "benchmarks" / "eta_replay.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up
    spec.loader.exec_module(mod)
    return mod


HARNESS = _harness()


@functools.cache
def replay(path: Path) -> tuple:
    """A recording's replayed points, once per test process: four tests read each recording, none changes it."""
    return tuple(HARNESS.replay(path))


MAX_ERROR = {"demo-first-run-n1.jsonl": 0.8, "demo-first-run-n2.jsonl": 0.8, "init-first-run-n1.jsonl": 1.5,
             "init-first-run-n2.jsonl.gz": 0.75, "init-patch-migration-n1.jsonl.gz": 0.85, "init-rerun-v2-n2.jsonl.gz": 0.55,
             "init-patch-first-run-n2.jsonl.gz": 1.3, "init-patch-rerun-edit-n1.jsonl.gz": 0.65,
             "demo977-first-run-n1.jsonl.gz": 0.8, "demo977-first-run-n2.jsonl.gz": 0.75, "init-first-run-2-n2.jsonl.gz": 1.25,
             "demo977-first-run-n1b.jsonl.gz": 2.3, "demo977-first-run-s28-n2.jsonl.gz": 7.4,
             "demo977-first-run-s28-n1.jsonl.gz": 0.7}
"""The older recordings (session 26 to 28: older code, a machine shared with other work): the issue's criterion,
within 30% of the time really left at EVERY point from 20% of the tasks on (>= 5 s left), is met on none. The largest
errors (bounds a little above what is reached, so a change that makes one worse fails), in this order: 0.75, 0.77,
1.44, 0.71, 0.82, 0.52, 1.24, 0.60, 0.77, 0.73, 1.22, 2.26, 7.35, 0.65. Why, in docs/guide/cli.md (Progress): their
tasks cost what the code of then made them cost (a patch case's health ran two containers; every rag grade imported
ragas), not what the priors, read from session 43's runs, say; and a container's time varied up to 10x between
recordings of the same project on the shared machine (demo977-first-run-s28-n2, at a load average of 16 to 21 on
2 cores: containers 5-10x slower than the priors times the machine factor measured on the answers)."""

QUIET = {"s43-demo-first-run-n1.jsonl.gz": 60, "s43-demo-first-run-n2.jsonl.gz": 20, "s43-demo-first-run-n2b.jsonl.gz": 20,
         "s43-demo-first-run-n2c.jsonl.gz": 20, "s43-demo-first-run-n2d.jsonl.gz": 70, "s43-demo-first-run-n3.jsonl.gz": 70,
         "s43-demo-first-run-n4.jsonl.gz": 90, "s43-demo-first-run-n4b.jsonl.gz": 200, "s43-demo-first-run-n4c.jsonl.gz": 150,
         "s43-init-first-run-n1.jsonl.gz": 10, "s43-init-first-run-n1b.jsonl.gz": 7, "s43-init-first-run-n2.jsonl.gz": 8,
         "s43-init-first-run-n2b.jsonl.gz": 8, "s43-init-first-run-n4.jsonl.gz": 6,
         "s43-init-patch-agentic-n2.jsonl.gz": 60, "s43-init-patch-agentic-n4.jsonl.gz": 70,
         "s43-init-patch-migration-n1.jsonl.gz": 9, "s43-init-patch-migration-n2.jsonl.gz": 30,
         "s44-demo-first-run-n1.jsonl.gz": 60, "s44-demo-first-run-n2.jsonl.gz": 20, "s44-demo-first-run-n2b.jsonl.gz": 20,
         "s44-demo-first-run-n3.jsonl.gz": 40, "s44-demo-first-run-n4.jsonl.gz": 100, "s44-init-first-run-n1.jsonl.gz": 7,
         "s44-init-first-run-n2.jsonl.gz": 60, "s44-init-pa-n2.jsonl.gz": 60, "s44-init-pa-n4.jsonl.gz": 100,
         "s44-init-pm-n1.jsonl.gz": 7, "s44-init-pm-n2.jsonl.gz": 30, "s44-init-pm-n2c.jsonl.gz": 190,
         "s45-demo-n2.jsonl.gz": 60, "s45-demo-n2b.jsonl.gz": 60, "s45-demo-n4.jsonl.gz": 90, "s45-init-n1.jsonl.gz": 9,
         "s45-pm-n2.jsonl.gz": 30, "s45i-demo-n2.jsonl.gz": 60, "s45j-demo-n2.jsonl.gz": 20, "s45j-pm-n2.jsonl.gz": 30}
"""Sessions 43's, 44's and 45's recordings on a quiet machine where the issue's criterion holds, with the points from 20%
of the tasks on with >= 5 s left each has at least: within 30% at every one (and the range shown holds the time
left). With the sandbox first (`evalkit.tasks.FIRST`), 20% of a first run's tasks are done when about three quarters
of its time has gone (docs/guide/cli.md, Progress, gives the errors from 20% of the time too). Which were held out
from which change of the estimator: docs/guide/cli.md."""

QUIET_MISSED = {"s43-init-patch-migration-n2b.jsonl.gz": (0.05, 0.06, 0.4), "s44-init-pm-n4.jsonl.gz": (0.02, 0.02, 0.7),
                "s44-init-pm-n4b.jsonl.gz": (0.1, 0.12, 0.55), "s45-pm-n4.jsonl.gz": (0.02, 0.02, 0.66)}
"""The quiet recordings where it does not: (median, 90th percentile, largest) bounds a little above what is reached.
s43-init-patch-migration-n2b (98% of its points within 30%, largest 0.38): one point, where a patch suite's case
health is priced at the one health that had run, which ran containers, while the others left are cached answers.
s44-init-pm-n4, s44-init-pm-n4b and s45-pm-n4 (four jobs on two cores, 98%, 98% and 91%, largest 0.65, 0.52 and
0.63): their hanging patch
starts just before 20% of the tasks, and for its first 1-2.5 s it is not yet told from a slow test run (containers
take 2.5-3.5 s at four at once: `progress.RunState.hang_bar`)."""


def clocked(names: list[str], kinds: dict[str, str] | None = None, classes: dict[str, str] | None = None,
            jobs: int = 1, limits: dict[str, float] | None = None) -> tuple[progress.RunState, list[float]]:
    """A RunState planned with ``names``, on a clock the caller moves (``now[0]``)."""
    state = progress.RunState(jobs, kinds, classes, limits=limits)
    now = [0.0]
    state.clock = lambda: now[0]
    state.t0 = 0.0
    state.plan_names(names)
    return state, now


def run_in_turn(state: progress.RunState, now: list[float], names: list[str],
                seconds: Callable[[int, str], float], ran: Callable[[int], bool] = lambda i: True) -> None:
    """Start and finish ``names`` one after another, the i-th taking ``seconds(i, name)`` (up to date unless ``ran(i)``)."""
    for i, name in enumerate(names):
        state.start(name)
        now[0] += seconds(i, name)
        state.finish(name, ran=ran(i))


def one_running(names: list[str], seconds: float, task: str, run_for: float, limits: dict[str, float],
                jobs: int = 1) -> tuple[progress.RunState, list[float]]:
    """A patch suite's first eight tasks of ``names`` finished at ``seconds`` each, then ``task`` running for
    ``run_for`` seconds, with the cases' sandbox ``limits``."""
    state, now = clocked(names, {"patch": "patch"}, jobs=jobs, limits=limits)
    run_in_turn(state, now, names[:8], lambda i, _: seconds)
    state.start(task)
    now[0] += run_for
    return state, now


def errors_of(points: tuple | list) -> list[float]:
    """|estimate - actual| / actual at the points with at least 5 s left (the last seconds are not judged)."""
    return [abs(p.estimate - p.left) / p.left for p in points if p.left >= HARNESS.MIN_LEFT_S]


WITHIN_30 = {"demo977-first-run-n1.jsonl.gz": 500, "demo977-first-run-n2.jsonl.gz": 500, "init-first-run-n2.jsonl.gz": 500,
             "demo-first-run-n1.jsonl": 100, "demo-first-run-n2.jsonl": 100}
"""Older recordings where the median error from 20% of the tasks on is within 30% (and the 90th percentile within
75%), and the points each has at least."""
NOT_WITHIN_30 = {"init-first-run-n1.jsonl": (0.35, 1.45), "init-patch-migration-n1.jsonl.gz": (0.66, 0.70),
                 "init-rerun-v2-n2.jsonl.gz": (0.53, 0.54), "init-patch-first-run-n2.jsonl.gz": (0.10, 1.25),
                 "init-first-run-2-n2.jsonl.gz": (0.45, 0.66), "demo977-first-run-n1b.jsonl.gz": (0.95, 2.2),
                 "demo977-first-run-s28-n2.jsonl.gz": (1.45, 7.3), "demo977-first-run-s28-n1.jsonl.gz": (0.10, 0.66)}
"""The other older ones (the rerun of one edited case, init-patch-rerun-edit-n1, has 15 points: `MAX_ERROR` only):
(median, 90th percentile) bounds a little above what is reached, so a change that makes them worse fails; the
issue's 30% is NOT met on these (on init-patch-first-run-n2 and demo977-first-run-s28-n1 the median is)."""


@pytest.mark.parametrize(("name", "min_points"), sorted(WITHIN_30.items()))
def test_time_left_within_30_percent(name: str, min_points: int) -> None:
    points = replay(DATA / name)
    errors = errors_of(points)
    assert len(errors) >= min_points
    assert statistics.median(errors) <= 0.30
    assert statistics.quantiles(errors, n=10)[-1] <= 0.75
    assert max(errors) <= 1.1  # never the 4-5x off the issue measured (16 s shown for 86 s, 147 s for 32 s)
    assert points[-1].estimate <= 5.0  # the last tasks: seconds, not minutes


@pytest.mark.parametrize(("name", "bounds"), sorted(QUIET_MISSED.items()))
def test_time_left_on_quiet_runs_not_within_30_percent(name: str, bounds: tuple[float, float, float]) -> None:
    errors = errors_of(replay(DATA / name))
    assert len(errors) >= 40
    median, p90, largest = bounds
    assert statistics.median(errors) <= median and statistics.quantiles(errors, n=10)[-1] <= p90
    assert max(errors) <= largest
    assert sum(e <= 0.30 for e in errors) / len(errors) >= 0.9


LOADED_WITHIN = {"s45-loaded-demo-n2.jsonl.gz": 300, "s45-loaded-demo-n2b.jsonl.gz": 400,
                 "s45-loaded-init-n2.jsonl.gz": 200, "s45-loaded-pm-n2.jsonl.gz": 70, "s45-loadmid-demo-n2.jsonl.gz": 500,
                 "s45-loadmid-pm-n2.jsonl.gz": 60, "s45-loadstart-demo-n2.jsonl.gz": 290, "s45i-loaded-pm-n2.jsonl.gz": 50,
                 "s45i-loadmid-init-n2.jsonl.gz": 190, "s45j-loaded-pm-n2.jsonl.gz": 50,
                 "s45j-loadmid-demo-n2.jsonl.gz": 300}
"""Session 45's recordings on a loaded machine (three busy processes beside the run on 2 cores: from before it,
from its start or from 5-12 s in: "loaded", "loadstart", "loadmid") where the issue's criterion holds at every point,
with the points each has at least. The machine's load is read beside the run (`progress.RunState.note_load`) and a
task outside the sandbox is priced at its share of the CPUs (`RunState.cpu_factor`); with session 44's estimator
two of these eleven met it (docs/guide/cli.md, Progress)."""

LOADED = {"s44-loaded-demo-n2.jsonl.gz": (0.4, 0.47, 0.52, 0.08), "s44-loaded-init-pm-n2.jsonl.gz": (0.33, 0.47, 0.47, 0.39),
          "s45-loaded-demo-n1.jsonl.gz": (0.16, 0.22, 0.47, 0.99), "s45-loaded-pm-n4.jsonl.gz": (0.1, 0.12, 0.32, 0.98),
          "s45i-loaded-demo-n2.jsonl.gz": (0.14, 0.32, 0.43, 0.83), "s45i-loaded-demo-n4.jsonl.gz": (0.15, 0.28, 0.33, 0.97),
          "s45j-loaded-demo-n2.jsonl.gz": (0.17, 0.26, 0.32, 0.99), "s45j-loaded-init-n2.jsonl.gz": (0.23, 0.27, 0.34, 0.97)}
"""Loaded runs where it does not hold at every point: (median, 90th percentile, largest) bounds a little above what is
reached, and the share of points within 30% a little below; the range shown holds the time left at every point. The two of session 44 were recorded without readings of
the machine's load, so they replay as the machine-factor-only estimator (9% and 40% of their points within 30%: the
Python tasks of the last 15 s took 3-4x their priors, the containers before them 1.5x). Session 45's six have 83% to
99.6% of their points within 30%: a few points just after the containers end, while Docker's own processes still run
and count as load for a second (s45i-loaded-demo-n2, 0.42), or where the load moved within the window."""


@pytest.mark.parametrize(("name", "min_points"), sorted({**QUIET, **LOADED_WITHIN}.items()))
def test_time_left_within_30_percent_at_every_point(name: str, min_points: int) -> None:
    """The issue's criterion: from 20% of the tasks on, every estimate within 30% of the time really left (quiet runs
    and loaded ones)."""
    points = replay(DATA / name)
    errors = errors_of(points)
    assert len(errors) >= min_points
    assert max(errors) <= 0.30, sorted(errors)[-5:]
    judged = [p for p in points if p.left >= HARNESS.MIN_LEFT_S]
    assert all(p.low <= p.left <= p.high for p in judged)  # and the range shown holds it


@pytest.mark.parametrize(("name", "bounds"), sorted(LOADED.items()))
def test_time_left_on_a_loaded_machine(name: str, bounds: tuple[float, float, float, float]) -> None:
    points = replay(DATA / name)
    errors = errors_of(points)
    assert len(errors) >= 50
    median, p90, largest, within = bounds
    assert statistics.median(errors) <= median and statistics.quantiles(errors, n=10)[-1] <= p90
    assert max(errors) <= largest
    assert sum(e <= 0.30 for e in errors) / len(errors) >= within
    assert all(p.low <= p.left <= p.high for p in points if p.left >= HARNESS.MIN_LEFT_S)


def test_the_priors_are_what_the_reference_recordings_give() -> None:
    """`evalkit.eta_priors` is written from the references (``eta_replay.py --write-priors``), never edited."""
    assert eta_priors.PRIORS == HARNESS.fitted_priors()
    assert (DATA.parents[2] / "evalkit" / "eta_priors.py").read_text(encoding="utf-8") == \
        HARNESS.priors_module(HARNESS.fitted_priors())


@pytest.mark.parametrize(("name", "bounds"), sorted(NOT_WITHIN_30.items()))
def test_time_left_on_runs_not_within_30_percent(name: str, bounds: tuple[float, float]) -> None:
    errors = errors_of(replay(DATA / name))
    assert len(errors) >= 40
    median, p90 = bounds
    assert statistics.median(errors) <= median
    assert statistics.quantiles(errors, n=10)[-1] <= p90
    assert max(errors) <= MAX_ERROR[name]  # init-first-run-n1's was 6.9 with per-suite means (canaries as containers)


@pytest.mark.parametrize("name", sorted(MAX_ERROR))
def test_time_left_at_every_point_after_20_percent(name: str) -> None:
    """The largest error from 20% of the tasks on (the issue's bar: 0.30)."""
    points = replay(DATA / name)
    assert max(errors_of(points)) <= MAX_ERROR[name]
    # every estimate that is more than 30% off is shown as approximate ("~1m"), never as a precise figure
    for p in points:
        if p.left >= 5 and abs(p.estimate - p.left) / p.left > 0.30:
            assert p.approximate


IN_RANGE = {"demo-first-run-n1.jsonl": 0.97, "demo-first-run-n2.jsonl": 0.99, "demo977-first-run-n1.jsonl.gz": 1.0,
            "demo977-first-run-n1b.jsonl.gz": 0.68, "demo977-first-run-n2.jsonl.gz": 1.0,
            "demo977-first-run-s28-n2.jsonl.gz": 0.28, "demo977-first-run-s28-n1.jsonl.gz": 0.87,
            "init-first-run-2-n2.jsonl.gz": 0.71,
            "init-first-run-n1.jsonl": 0.97, "init-first-run-n2.jsonl.gz": 0.85, "init-patch-first-run-n2.jsonl.gz": 0.71,
            "init-patch-migration-n1.jsonl.gz": 0.46, "init-patch-rerun-edit-n1.jsonl.gz": 0.93,
            "init-rerun-v2-n2.jsonl.gz": 1.0}
"""Share of the points (from 20% of the tasks on, >= 5 s left) where the time really left lies in the range the
display shows (`RunState.time_range`), at least, on the older recordings: 90% or more on seven of the fourteen
(before session 43's priors, ten: their priors were read from one of them, demo-first-run-n1, and priced the
older code's tasks; init-patch-migration-n1, whose patch case's health then ran two containers where the priors now
price it at a cached answer, fell from all to 46%). Every recording of `QUIET`: all."""


@pytest.mark.parametrize("name", sorted(IN_RANGE))
def test_the_range_holds_the_time_really_left(name: str) -> None:
    points = replay(DATA / name)
    judged = [p for p in points if p.left >= HARNESS.MIN_LEFT_S]
    assert sum(p.low <= p.left <= p.high for p in judged) / len(judged) >= IN_RANGE[name]
    for p in points:  # the point estimate inside its range
        assert p.low <= p.estimate + 1e-9 and p.estimate <= p.high + 1e-9


def test_the_range_is_shown_while_approximate() -> None:
    """``~1m (25s–3m)`` while approximate; the point alone once measured, or when the range rounds to one figure."""
    assert progress.fmt_range(62.0, (25.0, 170.0), True) == "~1m (25s–3m)"
    assert progress.fmt_range(62.0, (25.0, 170.0), False) == "1m 02s"
    assert progress.fmt_range(3.2, (3.0, 3.4), True) == "~3s"
    assert progress.fmt_range(None, None, True) == "estimating…"
    names = [f"execute:s:patch/c{i}" for i in range(10)]
    state, now = clocked(names, {"patch": "patch"})
    assert state.time_range() is None  # nothing ran yet
    run_in_turn(state, now, names[:4], lambda i, _: 2.0)
    span, left = state.time_range(), state.time_left()
    assert span is not None and left is not None
    # six tasks left priced by four of their own at 2 s (shrunk toward the prior): about 12 s, within a factor
    # 1 + 1/sqrt(4) = 1.5 either way
    assert 10.0 <= left <= 13.0 and abs(span[0] * 1.5 / left - 1) < 0.01 and abs(span[1] / 1.5 / left - 1) < 0.01


def test_the_time_left_is_approximate_until_measured() -> None:
    """Before 20% of the tasks: "~"; once most of the work left is priced by its own finished tasks: exact."""
    names = [f"execute:s:patch/c{i}" for i in range(10)]
    state, now = clocked(names, {"patch": "patch"})
    run_in_turn(state, now, names[:1], lambda i, _: 2.0)
    assert state.approximate()  # 1 of 10 done
    run_in_turn(state, now, names[1:3], lambda i, _: 2.0)
    assert not state.approximate() and state.measured_share() == 1.0
    left = state.time_left()
    assert left is not None and progress.fmt_left(left, state.approximate()) == progress.fmt_duration(left)
    assert progress.fmt_left(62.0, True) == "~1m" and progress.fmt_left(23.0, True) == "~25s"
    assert progress.fmt_left(0.2, True) == "~1s" and progress.fmt_left(7.4, True) == "~7s" and progress.fmt_left(3700.0, True) == "~1h 02m"
    assert progress.fmt_left(None, True) == "estimating…" and progress.fmt_left(62.0, False) == "1m 02s"


def test_a_timed_out_task_does_not_price_every_task_left() -> None:
    """One 20 s timeout among half-second tasks: the timeout counts at most 4x the group's typical task."""
    names = [f"execute:s:patch/c{i}" for i in range(60)]
    state, now = clocked(names, {"patch": "patch"})
    run_in_turn(state, now, names[:10], lambda i, _: 20.0 if i == 3 else 0.5)
    left = state.time_left()
    # 50 x ~1.4 s (the machine looks slower), not 50 x 2.3 s = 116 s (the mean with the whole timeout)
    assert left is not None and 25.0 <= left <= 80.0


def test_a_kind_without_containers_is_priced_apart() -> None:
    """Before any execute ran, a patch suite's are priced at seconds and a migration's validate at nothing."""
    state, now = clocked(["generate:s:patch/a", "execute:s:patch/a", "validate:migration/b"],
                         {"patch": "patch", "migration": "migration"})
    run_in_turn(state, now, ["generate:s:patch/a"], lambda i, _: 0.04)
    left = state.time_left()
    assert left is not None and 0.8 <= left <= 2.0


def test_up_to_date_tasks_cost_nothing_left() -> None:
    """A rerun where most tasks are up to date: the tasks left are priced at the share that ran."""
    names = [f"score:s:migration/c{i}" for i in range(100)]
    state, now = clocked(names)
    # one in ten ran, for 1 s each
    run_in_turn(state, now, names[:50], lambda i, _: 1.0 if i % 10 == 0 else 0.0, ran=lambda i: i % 10 == 0)
    left = state.time_left()
    assert left is not None and 3.0 <= left <= 7.0  # 50 left x 1/10 ran x ~1 s, not 50 s


def test_a_canary_not_run_yet_is_priced_at_the_canaries_that_have() -> None:
    """Six real patches took a second each, six canaries nothing: the six canaries left cost about nothing."""
    names = [f"execute:{s}:patch/c{i}" for s in ("fixer", "canary-a", "canary-b") for i in range(6)]
    state, now = clocked(names, {"patch": "patch"}, {"fixer": "live", "canary-a": "canary", "canary-b": "canary"})
    run_in_turn(state, now, names[:12], lambda i, name: 1.0 if ":fixer:" in name else 0.0)
    left = state.time_left()
    assert left is not None and left < 1.0  # not 6 x ~0.6 s (one mean per stage and suite)
    assert progress.key_of("execute:canary-a:patch/c1") == ("execute", "patch", "canary-a")
    assert progress.key_of("validate:patch/c1") == ("validate", "patch", "")
    assert progress.key_of("render") == ("render", "", "")


def test_a_hung_sandbox_task_is_charged_until_its_cases_limit() -> None:
    """Half-second test runs, then one that has run 4 s of a 10 s limit: at least the 6 s it has left, where the
    "a slow task is slower still" rule gave 2 s; without a limit, or in a stage that runs no sandbox, that rule."""
    names = [f"execute:s:patch/c{i}" for i in range(8)] + ["execute:s:patch/hang", "generate:s:patch/slow"]
    for limits, expect_hung in (({"patch/hang": 10.0}, True), ({}, False)):
        state, now = one_running(names, 0.5, "execute:s:patch/hang", 4.0, limits, jobs=2)
        left, span = state.time_left(), state.time_range()
        assert left is not None and span is not None
        if expect_hung:
            assert 6.0 <= left <= 8.0 and span[1] >= 6.0  # the range's high end too
        else:
            assert left < 4.0
    # a task just past its group's time, under the floor, or past its limit (being killed): not charged to it
    state, now = one_running(names, 0.1, "execute:s:patch/hang", 0.9, {"patch/hang": 10.0})  # 9x 0.1 s, under 1 s
    left = state.time_left()
    assert left is not None and left < 2.0
    now[0] += 10.0  # past its limit
    left = state.time_left()
    assert left is not None and left < 8.0
    # a generate task (no sandbox) with the same case: the general rule
    state, now = one_running(names, 0.5, "generate:s:patch/slow", 4.0, {"patch/slow": 10.0})
    left = state.time_left()
    assert left is not None and left < 6.0


def test_the_limits_come_from_the_cases() -> None:
    """Each sandboxed case's one-run limit, by case key; a case of a kind without one is left out."""
    from evalkit.project import load

    loaded = load(str(Path(__file__).resolve().parents[1] / "evalkit.yaml"))
    limits = progress.sandbox_limits(loaded.project.cases)
    assert limits["patch/total-value-quantity"] == 10.0 and limits["patch/currency-code"] == 20.0
    assert not any(key.startswith("migration/") for key in limits)
    assert progress.case_of("execute:canary-empty:patch/round-half-up") == "patch/round-half-up"
    assert progress.case_of("validate:patch/round-half-up") == "patch/round-half-up"
    assert progress.case_of("summarize") == ""
    classes = progress.system_classes(loaded.config.systems)  # what `evalkit run` gives the display
    assert classes["canary-placeholder"] == "canary-placeholder" and classes["gold"] == "stored"


def test_a_canary_is_priced_by_its_variant() -> None:
    """One canary's patch starts a container where another's is answered from the cache: each variant has its
    prior; a variant the references never ran takes the canaries' together, a kind they never ran its stage's."""
    assert progress.class_of_system("canary", "placeholder") == "canary-placeholder"
    assert progress.class_of_system("gold") == "stored" and progress.class_of_system("command") == "live"
    table = eta_priors.PRIORS[1]
    placeholder = eta_priors.prior_s("execute", "patch", "canary-placeholder", 1)
    empty = eta_priors.prior_s("execute", "patch", "canary-empty", 1)
    assert placeholder == table[("execute", "patch", "canary-placeholder")] and placeholder > 20 * empty
    assert eta_priors.prior_s("execute", "patch", "canary-new-variant", 1) == table[("execute", "patch", "canary")]
    assert eta_priors.prior_s("execute", "a-plugin-kind", "live", 1) == table[("execute", "", "")]
    assert eta_priors.prior_s("a-plugin-stage", "patch", "live", 1) == eta_priors.DEFAULT_PRIOR_S
    assert eta_priors.prior_s("score", "migration", "live", 4) == eta_priors.PRIORS[2][("score", "migration", "live")]


def test_a_cached_group_whose_task_starts_containers_is_not_hung() -> None:
    """A case health mostly answered from the cache (0.03 s) whose task runs its ablations (2 s of a 20 s limit):
    past 4x its group and the 1 s floor, but not a quarter of its limit: the general rule, not 18 s more."""
    names = [f"health:patch/c{i}" for i in range(8)] + ["health:patch/slow"]
    state, now = one_running(names, 0.03, "health:patch/slow", 2.0, {"patch/slow": 20.0}, jobs=2)
    left = state.time_left()
    assert left is not None and left < 3.0
    now[0] += 4.0  # 6 s of 20 s: more than a quarter, taken for a hang
    left = state.time_left()
    assert left is not None and left >= 14.0


@pytest.mark.parametrize(("validated_s", "bar"), [(1.0, 1.5), (None, 2.5), (3.0, 2.5)])
def test_a_case_validated_here_is_taken_for_hanging_sooner(validated_s: float | None, bar: float) -> None:
    """A case whose validation (two test runs) took 1 s in this run: its patch's run of 1.6 s (past 1.5 x that, under a
    quarter of its 10 s limit) is taken for a hang; the same run of a case whose validation was up to date is not,
    until 2.5 s; and evidence never raises the bar over that quarter (a case validated in 3 s)."""
    names = ["validate:patch/hang"] + [f"execute:s:patch/c{i}" for i in range(7)] + ["execute:s:patch/hang"]
    state, now = clocked(names, {"patch": "patch"}, jobs=2, limits={"patch/hang": 10.0})
    state.start(names[0])
    now[0] += validated_s or 0.0
    state.finish(names[0], ran=validated_s is not None)
    run_in_turn(state, now, names[1:8], lambda i, _: 0.3)
    state.start("execute:s:patch/hang")
    now[0] += 1.6
    assert state.hang_bar("execute:s:patch/hang", 0.3, 10.0) == pytest.approx(bar)
    left = state.time_left()
    assert left is not None and (left >= 8.4 if bar < 1.6 else left < 4.0)


def test_after_a_hang_come_the_stages_that_wait_on_every_task() -> None:
    """Two jobs busy (1.5 tasks at once on average), then a hang with 6 s of its limit left while the other job ends the
    other tests, and summarize and render still to run: the time left is at least the 6 s and their seconds after
    them (they cannot start before the hang ends), in the estimate and the range's high end, though the work left
    over the run's concurrency is less."""
    names = [f"execute:s:patch/c{i}" for i in range(16)] + ["execute:s:patch/hang", "summarize", "render:r"]
    state, now = clocked(names, {"patch": "patch"}, jobs=2, limits={"patch/hang": 10.0})
    for i in range(0, 8, 2):
        state.start(names[i]), state.start(names[i + 1])
        now[0] += 1.0
        state.finish(names[i]), state.finish(names[i + 1])
    state.start("execute:s:patch/hang")
    run_in_turn(state, now, names[8:16], lambda i, _: 0.5)  # 4 s: the hang has 6 s of its 10 s left
    last = sum(state.means()[progress.key_of(n)] for n in ("summarize", "render:r"))
    assert last > 0.3
    left, span = state.time_left(), state.time_range()
    assert left is not None and span is not None
    assert left >= 6.0 + last and span[1] >= 6.0 + last


def test_more_jobs_than_the_two_job_table_price_python_work_in_proportion() -> None:
    """doit's jobs are threads of one interpreter: with four, a grade is priced at twice the two-job prior; a
    container's test run (a sandbox stage) is not."""
    state = progress.RunState(4, {"patch": "patch"})
    two = progress.RunState(2, {"patch": "patch"})
    assert state.group_prior(("grade", "patch", "bot")) == pytest.approx(2 * two.group_prior(("grade", "patch", "bot")))
    assert state.group_prior(("execute", "patch", "bot")) == two.group_prior(("execute", "patch", "bot"))
    assert two.group_prior(("grade", "patch", "bot")) == eta_priors.prior_s("grade", "patch", "live", 2)
    # summarize and render run alone, after every other task: the two-job table's price
    assert state.group_prior(("summarize", "", "")) == two.group_prior(("summarize", "", ""))
    assert state.group_prior(("render", "", "")) == two.group_prior(("render", "", ""))


def loaded_state(readings: list[float], running_tasks: int = 1, cpus: int = 2) -> tuple[progress.RunState, list[float]]:
    """Eight grades and eight test runs of a patch suite done at their priors (the machine factor 1), a grade, a test
    run and summarize left, ``running_tasks`` tasks running, then ``readings`` of the machine's runnable tasks half a
    second apart."""
    names = [f"grade:s:patch/c{i}" for i in range(9)] + [f"execute:s:patch/c{i}" for i in range(9)]
    names += [f"score:s:patch/c{i}" for i in range(running_tasks)] + ["summarize"]
    state = progress.RunState(2, {"patch": "patch"}, cpus=cpus)
    now = [0.0]
    state.clock = lambda: now[0]
    state.t0 = 0.0
    state.plan_names(names)
    for name in names[:8] + names[9:17]:
        state.start(name)
        now[0] += state.group_prior(progress.key_of(name))
        state.finish(name)
    for name in names[18:-1]:
        state.start(name)
    for running in readings:
        now[0] += 0.5
        state.note_load(running)
    return state, now


def test_a_busy_machine_prices_the_work_outside_the_sandbox_at_its_share_of_the_cpus() -> None:
    """Six tasks runnable while one task of the run runs: the reader, that task and four others, on two CPUs. A grade
    left (computed here) takes (4 + 1) / 2 = 2.5 times its price on the idle machine; a test run in a container (the
    machine factor prices it: it waits on Docker as much as it computes) does not change. A group whose own tasks ran
    (the grades) leans on them as before, its prior's share priced for the load."""
    idle, _ = loaded_state([])
    busy, _ = loaded_state([6.0] * 10)
    assert idle.cpu_factor() == 1.0 and busy.cpu_factor() == pytest.approx(2.5)
    summarize, grade, test_run = ("summarize", "", ""), ("grade", "patch", "s"), ("execute", "patch", "s")
    assert busy.means()[summarize] == pytest.approx(2.5 * idle.means()[summarize])
    assert idle.means()[grade] < busy.means()[grade] < 2.5 * idle.means()[grade]
    assert busy.means()[test_run] == pytest.approx(idle.means()[test_run])
    left_idle, left_busy = idle.time_left(), busy.time_left()
    assert left_idle is not None and left_busy is not None and left_busy > left_idle


@pytest.mark.parametrize("readings", [[3.0] * 10, [2.0, 9.0, 2.0, 3.0, 2.0], [1.0]])
def test_the_runs_own_tasks_and_spare_cpus_are_not_load(readings: list[float]) -> None:
    """The reader and the run's own running tasks are not counted; up to one task more on two CPUs (a moment's spike,
    a task of the run's containers) leaves a task its whole CPU: the same prices as without readings."""
    idle, _ = loaded_state([], running_tasks=2)
    quiet, _ = loaded_state(readings, running_tasks=2)
    assert quiet.cpu_factor() == 1.0
    assert quiet.means() == idle.means()


def test_load_that_has_gone_is_forgotten() -> None:
    """Only the last ``LOAD_WINDOW_S`` of readings count: ten busy seconds, then ten quiet ones."""
    state, _ = loaded_state([7.0] * 20)
    assert state.cpu_factor() == pytest.approx(3.0)
    for _ in range(int(progress.LOAD_WINDOW_S / 0.5) + 1):
        state.clock = (lambda t: lambda: t)(state.clock() + 0.5)
        state.note_load(2.0)
    assert state.cpu_factor() == 1.0


def test_a_quicker_machine_keeps_its_speed_under_load() -> None:
    """A machine twice as quick as the reference (machine factor 0.5) with four tasks beside the run on two CPUs: a grade
    is priced at 0.5 x 2.5, not at the load alone (which would forget the machine's speed), and at 0.5 without
    readings (the recordings made before readings replay as they did)."""
    names = [f"execute:s:patch/c{i}" for i in range(30)] + ["grade:s:patch/c0"]
    state = progress.RunState(1, {"patch": "patch"}, cpus=2)
    now = [0.0]
    state.clock = lambda: now[0]
    state.t0 = 0.0
    state.plan_names(names)
    for name in names[:29]:
        state.start(name)
        now[0] += 0.5 * state.group_prior(progress.key_of(name))
        state.finish(name)
    grade = ("grade", "patch", "s")
    factor = state.machine_factor()
    assert factor < 0.6
    assert state.means()[grade] == pytest.approx(factor * state.group_prior(grade))
    state.start(names[29])
    for _ in range(5):
        now[0] += 0.5
        state.note_load(6.0)  # the reader, the running test and four others
    assert state.means()[grade] == pytest.approx(2.5 * factor * state.group_prior(grade))


def test_a_case_health_is_not_judged_by_one_validation() -> None:
    """A case health runs one test run per ablation: 2.3 s of a case whose validation (two runs) took 1.4 s is not a
    hang (the bar is a quarter of the 20 s limit); a patch's test run of that case is, past 1.5 x 1.4 s."""
    state, now = clocked(["validate:patch/c", "health:patch/c", "execute:s:patch/c"], {"patch": "patch"},
                         limits={"patch/c": 20.0})
    state.start("validate:patch/c")
    now[0] += 1.4
    state.finish("validate:patch/c")
    assert state.hang_bar("health:patch/c", 0.05, 20.0) == pytest.approx(5.0)
    assert state.hang_bar("execute:s:patch/c", 0.05, 20.0) == pytest.approx(2.1)


def test_the_machines_load_is_read_from_proc() -> None:
    """On Linux (CI's machine and this one) the runnable tasks are read, the reader among them; the live display reads
    at most every ``LOAD_SAMPLE_S``."""
    running = progress.runnable_tasks()
    assert running is not None and running >= 1
    load = progress.machine_load()
    assert load is not None and load["running"] >= 1
    state = progress.RunState(1)
    now = [10.0]
    state.clock = lambda: now[0]
    state.sample_load()
    state.sample_load()
    assert len(state.beside) == 1
    now[0] += progress.LOAD_SAMPLE_S
    state.sample_load()
    assert len(state.beside) == 2


def test_a_test_run_past_its_limit_is_being_killed() -> None:
    """A patch's test run 10.3 s into its 10 s limit is being killed: nothing of it is left, only summarize and render
    after it (at half its run, as a task that merely overran is charged, the estimate said 5 s more: s45i-loaded-pm-n2
    0.68 off). A validation runs two test runs, each under the limit: 10.3 s of one is still an overrun."""
    names = [f"execute:s:patch/c{i}" for i in range(8)] + ["execute:s:patch/hang", "summarize", "render:r"]
    state, now = one_running(names, 0.5, "execute:s:patch/hang", 10.3, {"patch/hang": 10.0})
    last = sum(state.means()[progress.key_of(n)] for n in ("summarize", "render:r"))
    left = state.time_left()
    assert left is not None and left == pytest.approx(last)
    names = [f"validate:patch/c{i}" for i in range(8)] + ["validate:patch/slow", "summarize", "render:r"]
    state, now = one_running(names, 0.5, "validate:patch/slow", 10.3, {"patch/slow": 10.0})
    left = state.time_left()
    assert left is not None and left >= 5.0
