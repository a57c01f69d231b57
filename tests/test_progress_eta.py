"""The live display's time left, replayed on real recorded runs (scripts/record-run-timeline.py): each start
and finish fed to RunState at its recorded time, the estimate compared with the time that was really left.

Recordings: the demo's first run on 2 cores with Docker, one job and two (demo-first-run-n1/-n2; n1 is the
reference the priors of evalkit.progress were read from), and a held-out one recorded after the priors were
set: an `evalkit init --no-history` project's first run, one job (init-first-run-n1: 9 canary systems, one
patch timing out at 20 s).

Figures (|relative error| over the points after 20% of the tasks with >= 5 s left; median, 90th percentile,
share within 30%):
  demo n1  before 0.74 / 0.86 / 11%   now 0.24 / 0.33 / 88%
  demo n2  before 0.70 / 0.86 / 18%   now 0.35 / 0.51 / 47%
  init n1  before 0.84 / 10.0 / 1%    now 0.91 / 6.3 / 0%   (held out: NOT within 30%)
On the held-out run the per-task priors cannot know that 66 of its 88 execute tasks are canaries that take
no time, nor when a container will time out; the bounds below hold what was reached, no more.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from evalkit import progress

DATA = Path(__file__).resolve().parent / "data" / "progress"


SUITE_KINDS = {k: k for k in ("agentic", "e2e", "generation", "migration", "patch", "rag")}
"""Both recorded projects name each suite after its kind (the demo's cases/ and `evalkit init`'s)."""


def replay(path: Path) -> list[tuple[float, float, float]]:
    """(time, estimate, actual time left) after each event once 20% of the tasks are done."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    head, events = lines[0], lines[1:]
    end = events[-1]["t"]
    now = [0.0]
    state = progress.RunState(head["jobs"], SUITE_KINDS)
    state.clock = lambda: now[0]
    state.t0 = 0.0
    state.plan_names(head["planned"])
    total, done, points = len(head["planned"]), 0, []
    for e in events:
        now[0] = e["t"]
        if e["event"] == "start":
            state.start(e["task"])
            continue
        state.finish(e["task"], failed=e["event"] == "fail", ran=e["event"] in ("finish", "fail"))
        done += 1
        if done >= 0.2 * total:
            estimate = state.time_left()
            assert estimate is not None
            points.append((e["t"], estimate, end - e["t"]))
    return points


def errors_of(points: list[tuple[float, float, float]]) -> list[float]:
    return [abs(est - left) / left for _, est, left in points if left >= 5]


@pytest.mark.parametrize(("name", "median", "p90"), [("demo-first-run-n1.jsonl", 0.30, 0.40),
                                                     ("demo-first-run-n2.jsonl", 0.40, 0.60)])
def test_time_left_on_recorded_runs(name: str, median: float, p90: float) -> None:
    points = replay(DATA / name)
    errors = errors_of(points)
    assert len(errors) > 100
    assert statistics.median(errors) <= median
    assert statistics.quantiles(errors, n=10)[-1] <= p90
    # from the first point on (20% of the tasks: only the fast generate tasks have run) within 30%
    assert errors[0] <= 0.3
    # never the 4-5x off the issue measured (16 s shown for 86 s, 147 s for 32 s)
    assert max(errors) <= 1.2
    assert points[-1][1] <= 5.0  # the last tasks: seconds, not minutes


def test_time_left_on_a_held_out_run() -> None:
    """A project the priors were not read from: better than before in its tail, not within 30%."""
    errors = errors_of(replay(DATA / "init-first-run-n1.jsonl"))
    assert len(errors) > 100
    assert statistics.quantiles(errors, n=10)[-1] <= 7.0  # the estimator before: 10.0
    assert max(errors) <= 7.5  # before: 13.7


def test_a_timed_out_task_does_not_price_every_task_left() -> None:
    """One 20 s timeout among half-second tasks: the timeout counts at most 4x the group's typical task."""
    state = progress.RunState(1, {"patch": "patch"})
    now = [0.0]
    state.clock = lambda: now[0]
    state.t0 = 0.0
    names = [f"execute:s:patch/c{i}" for i in range(60)]
    state.plan_names(names)
    for i, name in enumerate(names[:10]):
        state.start(name)
        now[0] += 20.0 if i == 3 else 0.5
        state.finish(name)
    left = state.time_left()
    # 50 x ~1.4 s (the machine looks slower), not 50 x 2.3 s = 116 s (the mean with the whole timeout)
    assert left is not None and 25.0 <= left <= 80.0


def test_a_kind_without_containers_is_priced_apart() -> None:
    """Before any execute ran, a patch suite's are priced at seconds and a migration's validate at nothing."""
    state = progress.RunState(1, {"patch": "patch", "migration": "migration"})
    now = [0.0]
    state.clock = lambda: now[0]
    state.t0 = 0.0
    state.plan_names(["generate:s:patch/a", "execute:s:patch/a", "validate:migration/b"])
    state.start("generate:s:patch/a")
    now[0] = 0.04
    state.finish("generate:s:patch/a")
    left = state.time_left()
    assert left is not None and 0.8 <= left <= 2.0


def test_up_to_date_tasks_cost_nothing_left() -> None:
    """A rerun where most tasks are up to date: the tasks left are priced at the share that ran."""
    state = progress.RunState(1)
    now = [0.0]
    state.clock = lambda: now[0]
    state.t0 = 0.0
    names = [f"score:s:migration/c{i}" for i in range(100)]
    state.plan_names(names)
    for i, name in enumerate(names[:50]):
        state.start(name)
        now[0] += 1.0 if i % 10 == 0 else 0.0
        state.finish(name, ran=i % 10 == 0)  # one in ten ran, for 1 s each
    left = state.time_left()
    assert left is not None and 3.0 <= left <= 7.0  # 50 left x 1/10 ran x ~1 s, not 50 s
