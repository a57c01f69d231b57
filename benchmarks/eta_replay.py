"""Replay every recorded run (tests/data/progress/) through the progress display's time-left estimator.

    python benchmarks/eta_replay.py [--json]

Each recording (scripts/record-run-timeline.py) holds a real run's planned tasks and each task's start and end
(seconds since the start), and, since session 45, readings of the machine's load (fed to `RunState.note_load`). The replay feeds them to `evalkit.progress.RunState` at their recorded times and,
after each task's end from 20% of the tasks on, compares the time left it estimates with the time that was
really left. Per recording: |relative error| of the point estimate over the points with at least 5 s left
(median, 90th percentile, largest, share within 30%, points more than 30% off shown without `~`), and for
the range the display shows (`RunState.time_range`) the share of those points whose real time left lies in it
and the median of high / low.

The priors (`evalkit.eta_priors`: seconds a task of each stage, kind and class takes on the reference machine)
are read from two reference recordings (``REFERENCES``: the demo's first run with one job and with two) by
``--write-priors``, which writes evalkit/eta_priors.py; tests/test_progress_eta.py checks that the shipped table is
what they give.

Per-task durations of a previous run of the same project (the other recordings) were tried as priors and not
kept: commit 2a7b09c holds that variant of RunState and of this harness (``HISTORY``: which recording plays
which one's previous run); docs/guide/cli.md (Progress) gives its figures. Last line with ``--json``: one JSON
object, recording -> figures.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalkit import eta_priors, progress  # noqa: E402  (the repository's evalkit, not an installed one)

DATA = REPO / "tests" / "data" / "progress"
PRIORS_MODULE = REPO / "evalkit" / "eta_priors.py"
REFERENCES = {1: "s43-demo-first-run-n1.jsonl.gz", 2: "s43-demo-first-run-n2.jsonl.gz"}
"""Jobs -> the recording the priors for runs with that many jobs are read from: the demo's first run on a quiet
2-core machine (load 1-2), Docker, the code of session 43, with one job and with two (`evalkit run`'s default
there). With two jobs doit runs tasks in two threads of one process, so a task that computes in Python takes
longer than alone (the other thread holds the interpreter half the time): the two tables differ most there."""
SUITE_KINDS = {k: k for k in ("agentic", "e2e", "generation", "migration", "patch", "rag")}
"""The recorded projects name each suite after its kind (the demo's cases/ and `evalkit init`'s)."""

MIN_LEFT_S = 5.0
"""Points with less than this many seconds left are not judged (a relative error of the last seconds)."""


@dataclass
class Point:
    t: float
    estimate: float
    low: float
    high: float
    left: float
    approximate: bool


def read(path: Path) -> tuple[dict, list[dict]]:
    """A recording's head (planned tasks, jobs, kinds, classes) and its events."""
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text(encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    return lines[0], lines[1:]


def classes_of(head: dict, planned: list[str]) -> dict[str, str]:
    """System -> class: the recording's (newer recordings hold it), else from the names (gold and empty store
    their answers, canary-* are canaries). A canary is classed by its variant (``canary-<variant>``, its system's
    name: `progress.class_of_system`), also in recordings made before classes named the variant."""
    classes = head.get("classes")
    if isinstance(classes, dict):
        return {str(k): str(k) if v == "canary" and str(k).startswith("canary-") else str(v)
                for k, v in classes.items()}
    systems = {progress.key_of(n)[2] for n in planned} - {""}
    return {s: s if s.startswith("canary-") else "stored" if s in ("gold", "empty") else "live" for s in systems}


def durations(path: Path) -> dict[str, float]:
    """Task -> seconds it ran in a recording (tasks up to date are left out), as a run stores them."""
    _, events = read(path)
    started: dict[str, float] = {}
    out: dict[str, float] = {}
    for e in events:
        if e["event"] == "start":
            started[e["task"]] = e["t"]
        elif e.get("task") in started:
            out[e["task"]] = e["t"] - started.pop(e["task"])
    return out


def fit_priors(path: Path) -> dict[tuple[str, str, str], float]:
    """(stage, kind, class) -> the mean seconds of a recording's tasks that ran, at each level `eta_priors.prior_s`
    looks up: the class itself, a canary's variants together (``canary``), every class of the kind (``""``) and
    every kind of the stage (``"", ""``). Four significant digits."""
    head, _ = read(path)
    kinds = head.get("kinds", SUITE_KINDS)
    classes = classes_of(head, head["planned"])
    groups: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for name, seconds in durations(path).items():
        stage, suite, system = progress.key_of(name)
        kind = kinds.get(suite, "")
        cls = classes.get(system, "live") if system else ""
        for key in dict.fromkeys([(stage, kind, cls), (stage, kind, eta_priors.base_class(cls)), (stage, kind, ""),
                                  (stage, "", "")]):
            groups[key].append(seconds)
    return {key: float(f"{statistics.fmean(v):.4g}") for key, v in sorted(groups.items())}


def fitted_priors() -> dict[int, dict[tuple[str, str, str], float]]:
    """Jobs -> `fit_priors` of its reference recording (``REFERENCES``)."""
    return {jobs: fit_priors(DATA / name) for jobs, name in sorted(REFERENCES.items())}


def priors_module(priors: dict[int, dict[tuple[str, str, str], float]]) -> str:
    """evalkit/eta_priors.py's text: its code (kept from the file) with ``PRIORS`` set to ``priors``."""
    text = PRIORS_MODULE.read_text(encoding="utf-8")
    head, sep, _ = text.partition(PRIORS_START)
    assert sep, f"{PRIORS_MODULE} lost its marker line {PRIORS_START!r}"
    rows = []
    for jobs, table in priors.items():
        rows.append(f"    {jobs}: {{\n")
        rows += [f"        {key!r}: {value!r},\n" for key, value in table.items()]
        rows.append("    },\n")
    return head + PRIORS_START + "PRIORS: dict[int, dict[tuple[str, str, str], float]] = {\n" + "".join(rows) + "}\n"


PRIORS_START = "# generated by benchmarks/eta_replay.py --write-priors from REFERENCES: do not edit below\n"


def replay(path: Path) -> list[Point]:
    """A `Point` after each task's end once 20% of the tasks are done."""
    head, events = read(path)
    end = max(e["t"] for e in events if e["event"] != "load")
    state = progress.RunState(head["jobs"], head.get("kinds", SUITE_KINDS), classes_of(head, head["planned"]),
                              progress.setups_for(judged=head.get("judged", True)), head.get("limits"),
                              head.get("cpus", 2))
    now = [0.0]
    state.clock = lambda: now[0]
    state.t0 = 0.0
    state.plan_names(head["planned"])
    total, done, points = len(head["planned"]), 0, []
    for e in events:
        now[0] = e["t"]
        if e["event"] == "load":
            state.note_load(e["running"])
            continue
        if e["event"] == "start":
            state.start(e["task"])
            continue
        state.finish(e["task"], failed=e["event"] == "fail", ran=e["event"] in ("finish", "fail"))
        done += 1
        if done >= 0.2 * total:
            estimate = state.time_left()
            span = state.time_range()
            assert estimate is not None and span is not None
            points.append(Point(e["t"], estimate, span[0], span[1], end - e["t"], state.approximate()))
    return points


def figures(points: list[Point]) -> dict[str, float]:
    """|relative error| of the point estimate (median, p90, largest, share within 30%) and the range's cover."""
    judged = [p for p in points if p.left >= MIN_LEFT_S]
    errors = [abs(p.estimate - p.left) / p.left for p in judged]
    if not errors:
        return {"points": 0}
    return {"points": len(errors), "median": statistics.median(errors),
            "p90": statistics.quantiles(errors, n=10)[-1] if len(errors) > 1 else errors[0],
            "largest": max(errors), "within30": sum(e <= 0.30 for e in errors) / len(errors),
            "in_range": sum(p.low <= p.left <= p.high for p in judged) / len(judged),
            "width": statistics.median(p.high / max(p.low, 1e-9) for p in judged),
            "off_exact": sum(1 for p, e in zip(judged, errors) if e > 0.30 and not p.approximate)}


def run_all(limit: int | None = None) -> dict[str, dict[str, float]]:
    """Recording -> `figures`, for every recording in tests/data/progress/ (the first ``limit`` of them)."""
    return {path.name: figures(replay(path)) for path in sorted(DATA.iterdir())[:limit]}


def main() -> int:
    ap = argparse.ArgumentParser(description="Replay every recorded run through the time-left estimator.")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    ap.add_argument("--smoke", action="store_true", help="replay one recording, print its JSON (tests run it)")
    ap.add_argument("--write-priors", action="store_true",
                    help="read the priors from the reference recordings into evalkit/eta_priors.py, then replay")
    args = ap.parse_args()
    if args.write_priors:
        PRIORS_MODULE.write_text(priors_module(fitted_priors()), encoding="utf-8")
        importlib.reload(eta_priors)  # the replay below prices with the table just written
        print(f"wrote {PRIORS_MODULE}")
    results = run_all(1 if args.smoke else None)
    print("| recording | median | 90th pct | largest | within 30% | in range | range high/low | off, shown exact |")
    print("|---|---|---|---|---|---|---|---|")
    for name, f in results.items():
        if not f.get("points"):
            print(f"| {name} | – | no point with >= {MIN_LEFT_S:.0f} s left |")
            continue
        print(f"| {name.split('.jsonl')[0]} | {f['median']:.2f} | {f['p90']:.2f} | "
              f"{f['largest']:.2f} | {f['within30']:.0%} | {f['in_range']:.0%} | {f['width']:.2f} | {f['off_exact']:.0f} |")
    if args.json or args.smoke:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
