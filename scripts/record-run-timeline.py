#!/usr/bin/env python3
"""Record a real `evalkit run`'s task timeline (start, finish, up to date; seconds since the start) as JSON
lines, for tests/test_progress_eta.py, which replays it through the progress display's time-left
estimator. Run it in a project folder: `python scripts/record-run-timeline.py OUT.jsonl [-n JOBS]`.
The first line holds the planned tasks per stage, the jobs, each suite's kind, each system's class, whether a
judge is configured (`progress.setups_for`: without one no rag grade imports ragas) and each case's limit of one
sandbox run (`progress.sandbox_limits`) and the CPUs; the events are each task's start and finish and, twice a
second, a reading of the machine's load (`progress.machine_load`), which the replay feeds to `RunState.note_load`.
Command systems run in a clean environment: where evalkit is a worktree on PYTHONPATH rather than installed,
give them ``pass_env: [PYTHONPATH]`` in the project's evalkit.yaml, or every answer is an import error
(a recording of nothing). Recordings go to tests/data/progress/ (gzip them)."""

from __future__ import annotations

import argparse
import json
import threading
import time
from typing import Any

from doit.cmd_base import ModuleTaskLoader
from doit.doit_cmd import DoitMain

import evalkit.tasks as tasks
from evalkit import progress
from evalkit.llm.settings import configured
from evalkit.sandbox.budget import cpu_count


def progress_kinds() -> dict[str, str]:
    """Suite -> kind, as `evalkit run` gives the live display."""
    return {name: suite.kind for name, suite in tasks.graph().loaded.project.suites.items()}


def progress_classes() -> dict[str, str]:
    """System -> class (live, stored, canary), as `evalkit run` gives the live display."""
    return progress.system_classes(tasks.graph().cfg.systems)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("-n", "--jobs", type=int, default=1)
    args = ap.parse_args()
    events: list[dict[str, Any]] = []
    lock = threading.Lock()
    t0 = time.monotonic()

    def log(event: str, name: str) -> None:
        with lock:
            events.append({"t": round(time.monotonic() - t0, 4), "event": event, "task": name})

    stop = threading.Event()

    def sample_load() -> None:
        """The machine's load beside the run, twice a second (`progress.machine_load`)."""
        while not stop.wait(progress.LOAD_SAMPLE_S):
            load = progress.machine_load()
            if load is not None:
                with lock:
                    events.append({"t": round(time.monotonic() - t0, 4), "event": "load", **load})

    class Recorder(progress.QuietReporter):
        def initialize(self, tasks_: Any, selected: Any) -> None:
            state = progress.RunState(args.jobs)
            state.plan(tasks_, list(selected))
            events.append({"plan": dict(state.total), "planned": state.planned, "jobs": args.jobs,
                           "kinds": progress_kinds(), "classes": progress_classes(),
                           "judged": configured(tasks.graph().cfg.judge),
                           "limits": progress.sandbox_limits(tasks.graph().loaded.project.cases),
                           "cpus": cpu_count()})
            super().initialize(tasks_, selected)

        def execute_task(self, task: Any) -> None:
            if task.actions and not task.name.startswith("_"):
                log("start", task.name)

        def add_success(self, task: Any) -> None:
            if task.actions and not task.name.startswith("_"):
                log("finish", task.name)

        def add_failure(self, task: Any, fail: Any) -> None:
            if task.actions and not task.name.startswith("_"):
                log("fail", task.name)
            super().add_failure(task, fail)

        def skip_uptodate(self, task: Any) -> None:
            if task.actions and not task.name.startswith("_"):
                log("uptodate", task.name)

    module = {"DOIT_CONFIG": {**tasks.doit_config(), "reporter": Recorder},
              **{k: getattr(tasks, k) for k in dir(tasks) if k.startswith("task_")}}
    argv = ["run"] + (["-n", str(args.jobs), "-P", "thread"] if args.jobs > 1 else [])
    sampler = threading.Thread(target=sample_load, daemon=True)
    sampler.start()
    try:
        code = DoitMain(ModuleTaskLoader(module)).run(argv)
    finally:
        stop.set()
        sampler.join()
    with open(args.out, "w", encoding="utf-8") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
    print(f"{len(events) - 1} events in {time.monotonic() - t0:.1f} s -> {args.out}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
