#!/usr/bin/env python3
"""Run `evalkit run ARGS` (the command's own path: default jobs, container budget, progress mode) while
recording each task's start and finish, then print where the wall time went: each stage's span and busy
seconds, the longest tasks, and a timeline: what ran in each slice of the run.

    EVALKIT_CONFIG=demo/evalkit.yaml python scripts/first-run-timeline.py OUT.jsonl [evalkit run options]
    python scripts/first-run-timeline.py --show OUT.jsonl     # the summary of a recording

OUT.jsonl holds one JSON object per event: {"t": seconds since the start, "event": start|finish|fail|exit,
"task": name} (the format of scripts/record-run-timeline.py, without its plan line). Used for
docs/operations/performance.md, "Demo first run"."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import defaultdict
from typing import Any

Event = dict[str, Any]


def record(out: str, args: list[str]) -> int:
    from evalkit import cli, progress

    events: list[Event] = []
    lock = threading.Lock()
    t0 = time.monotonic()
    reporter_for = progress.reporter_for

    def log(event: str, name: str) -> None:
        with lock:
            events.append({"t": round(time.monotonic() - t0, 3), "event": event, "task": name})

    def recording(*args: Any, **kwargs: Any) -> type:  # evalkit.progress.reporter_for's arguments, passed on
        base: Any = reporter_for(*args, **kwargs)

        class Recorder(base):  # type: ignore[misc, valid-type]
            def execute_task(self, task: Any) -> None:
                if task.actions:
                    log("start", task.name)
                super().execute_task(task)

            def add_success(self, task: Any) -> None:
                if task.actions:
                    log("finish", task.name)
                super().add_success(task)

            def add_failure(self, task: Any, fail: Any) -> None:
                log("fail", task.name)
                super().add_failure(task, fail)

        return Recorder

    progress.reporter_for = recording  # evalkit.cli calls it through the module
    try:
        code = cli.main(["run", *args])
    finally:
        log("exit", "")
        with open(out, "w", encoding="utf-8") as f:
            for e in events:
                f.write(json.dumps(e) + "\n")
    show(events)
    return code


def show(events: list[Event]) -> None:
    started: dict[str, float] = {}
    rows: list[tuple[float, float, str]] = []
    for e in events:
        if e["event"] == "start":
            started[e["task"]] = e["t"]
        elif e["event"] in ("finish", "fail") and e["task"] in started:
            rows.append((started[e["task"]], e["t"], e["task"]))
    end = max((e["t"] for e in events), default=0.0)
    print(f"{len(rows)} tasks ran; the run ended at {end:.1f} s; the first task started at "
          f"{min((r[0] for r in rows), default=0.0):.1f} s")
    spans: dict[str, list[float]] = defaultdict(lambda: [float("inf"), 0.0, 0.0, 0.0])
    for s, f, name in rows:
        span = spans[name.split(":", 1)[0]]
        span[0], span[1], span[2], span[3] = min(span[0], s), max(span[1], f), span[2] + 1, span[3] + f - s
    print("stage            first start  last finish  tasks  busy s")
    for stage, (a, b, n, busy) in sorted(spans.items(), key=lambda kv: kv[1][0]):
        print(f"{stage:16s} {a:11.1f} {b:12.1f} {int(n):6d} {busy:7.1f}")
    print("longest tasks:")
    for s, f, name in sorted(rows, key=lambda r: r[0] - r[1])[:8]:
        print(f"  {f - s:6.1f} s  {s:6.1f} -> {f:6.1f}  {name}")
    print("timeline (per slice of the run: task-seconds per stage, and the task running longest in it):")
    width = max(end / 16, 0.5)
    for i in range(int(end / width) + 1):
        lo, hi = i * width, (i + 1) * width
        busy: dict[str, float] = defaultdict(float)
        for s, f, name in rows:
            overlap = min(f, hi) - max(s, lo)
            if overlap > 0:
                busy[name.split(":", 1)[0]] += overlap
        inside = [r for r in rows if r[0] < hi and r[1] > lo]
        longest = max(inside, key=lambda r: r[1] - r[0], default=None)
        stages = ", ".join(f"{k} {v:.1f}" for k, v in sorted(busy.items(), key=lambda kv: -kv[1]))
        print(f"  {lo:6.1f}-{hi:6.1f}  {stages or '(nothing ran)'}"
              + (f"  | {longest[2]} ({longest[1] - longest[0]:.1f} s)" if longest else ""))

def main() -> int:
    if len(sys.argv) >= 3 and sys.argv[1] == "--show":
        with open(sys.argv[2], encoding="utf-8") as f:
            show([json.loads(line) for line in f if line.strip()])
        return 0
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    return record(sys.argv[1], sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
