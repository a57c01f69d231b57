"""The live display's time left, replayed on real recorded runs of the demo (scripts/record-run-timeline.py:
the first run on 2 cores with Docker, one job and two): each start and finish fed to RunState at its
recorded time, the estimate compared with the time that was really left.

Figures (median |relative error| over the points after 20% of the tasks with >= 5 s left): the estimator
before (stage means, unseen stages at the mean of all, remaining over jobs) 1.57 and 0.85; this one 0.74
and 0.70. A first run's time left stays hard to tell from its first 20% of tasks (they are the fast
generate tasks; the containers and the ragas import come later); the bounds below hold what was reached.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from evalkit import progress

DATA = Path(__file__).resolve().parent / "data" / "progress"


def replay(path: Path) -> list[tuple[float, float, float]]:
    """(time, estimate, actual time left) after each event once 20% of the tasks are done."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    head, events = lines[0], lines[1:]
    end = events[-1]["t"]
    now = [0.0]
    state = progress.RunState(head["jobs"])
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


@pytest.mark.parametrize("name", ["demo-first-run-n1.jsonl", "demo-first-run-n2.jsonl"])
def test_time_left_on_recorded_runs(name: str) -> None:
    points = replay(DATA / name)
    errors = [abs(est - left) / left for _, est, left in points if left >= 5]
    assert len(errors) > 100
    assert statistics.median(errors) <= 0.8
    # never the 4-5x off the issue measured (16 s shown for 86 s, 147 s for 32 s) once a third of the run is done
    third = [abs(est - left) / left for t, est, left in points if left >= 5 and t >= points[-1][0] / 3]
    assert max(third) <= 2.0
    assert points[-1][1] <= 5.0  # the last tasks: seconds, not minutes


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
