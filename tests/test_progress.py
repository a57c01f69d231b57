"""`evalkit run`'s progress: live display on a terminal (a real pseudo-terminal), doit's lines when
the output is not a terminal, nothing with -q; the summary table at the end; the counters."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from evalkit import progress
from evalkit.llm.client import Budget
from helpers import REPO, TASK_LINE, evalkit, executed, make_project

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
SYSTEMS = ("naive", "rules", "gold")
CASES = ("jpa-entity", "cdi-inject")


def _report(project: Path) -> dict:
    return json.loads((project / "site" / "r1" / "report.json").read_text())


def _run_in_pty(project: Path, *args: str, timeout: float = 300) -> tuple[int, str]:
    """`python -m evalkit run ARGS` with stdout and stderr on a pseudo-terminal of 140x40."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    env = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), "PYTHONPATH": str(REPO),
           "TERM": "xterm-256color", "COLUMNS": "140", "LINES": "40"}
    for k in ("EVALKIT_RELEASE", "EVALKIT_PROGRESS", "NO_COLOR", "CI"):
        env.pop(k, None)
    proc = subprocess.Popen([sys.executable, "-m", "evalkit", "run", *args], cwd=str(project.parent), env=env,
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    code = proc.wait(timeout=30)
    return code, ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("progress") / "proj", list(CASES))


def _edit(project: Path, case: str) -> None:
    """Change a case's file (a comment line) so that its tasks run again."""
    path = project / "cases" / "migration" / case / "case.yaml"
    path.write_text(path.read_text(encoding="utf-8") + f"# edited {time.time_ns()}\n", encoding="utf-8")


def _frames(stage: str, out: str) -> list[tuple[str, str]]:
    """(done, total) of a stage in every frame the display drew, in order."""
    return re.findall(rf"{stage} +[━╸╺ ]*(\d+)/(\d+)", out)


def _table_rows(text: str) -> list[list[str]]:
    """Rows of the summary table (rich's box drawing: cells between │); a cell rich folded onto the next
    line (a narrow terminal) is joined back to its row."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not (line.strip().startswith("│") and line.count("│") >= 9):
            continue
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if rows and not cells[0] and not cells[1]:
            rows[-1] = [a + b for a, b in zip(rows[-1], cells)]
        else:
            rows.append(cells)
    return rows


def test_live_display_on_a_terminal(project: Path) -> None:
    code, out = _run_in_pty(project, "-n", "2")  # threads: the display is updated from doit's workers
    assert code == 0, out
    n = len(SYSTEMS) * len(CASES)
    # the last frame: every stage's tasks done of its total (one per system x case)
    for stage in ("generate", "grade", "score"):  # migration cases are not executed
        frames = _frames(stage, out)
        assert frames, f"no {stage} line in the display:\n{out}"
        assert frames[-1] == (str(n), str(n)), frames
        assert int(frames[0][0]) < n  # and it was shown while it ran, not only at the end
    assert _frames("summarize", out)[-1] == ("1", "1") and "model calls" in out and "containers" in out
    assert re.search(r"left (\S+)", out)
    assert not TASK_LINE.search(out), "the live display replaces doit's per-task lines"
    rows = _table_rows(out)
    report = _report(project)
    assert {(r[0], r[1]) for r in rows} == {(s["name"], sys_) for s in report["suites"] for sys_ in s["systems"]}
    assert all(r[-1].endswith("suites/migration.html") for r in rows)


def test_live_display_when_everything_is_up_to_date(project: Path) -> None:
    code, out = _run_in_pty(project)
    assert code == 0, out
    frames = _frames("generate", out)
    assert frames and frames[-1][0] == frames[-1][1] == str(len(SYSTEMS) * len(CASES))


def test_live_display_after_one_edit_counts_the_tasks_doit_was_not_given(project: Path) -> None:
    """After one edited case doit is given only that case's chain (evalkit.uptodate_manifest); the display still
    counts the whole run, the others as up to date."""
    _edit(project, list(CASES)[0])
    code, out = _run_in_pty(project)
    assert code == 0, out
    frames = _frames("generate", out)
    assert frames and frames[-1][0] == frames[-1][1] == str(len(SYSTEMS) * len(CASES))


def test_plain_lines_and_summary_when_not_a_terminal(project: Path) -> None:
    _edit(project, "cdi-inject")
    proc = evalkit(project, "run", env={"EVALKIT_PROGRESS": ""})
    names = executed(proc)
    assert "generate:naive:migration/cdi-inject" in names and "summarize" in names, proc.stdout
    assert not any("jpa-entity" in n for n in names)
    assert not _frames("generate", proc.stdout) and "model calls" not in proc.stdout  # no live frames in a pipe
    rows = _table_rows(proc.stdout)
    report = _report(project)
    by = {(r[0], r[1]): r for r in rows}
    for suite in report["suites"]:
        for system in suite["systems"]:
            r = by[(suite["name"], system)]
            cov = suite["coverage"][system]
            assert r[2] == str(cov["cases"]) and r[3] == str(cov["attempted"])
            assert (project.parent / r[-1]).exists()  # the page path, relative to where evalkit ran


def test_quiet_prints_nothing_but_still_runs(project: Path) -> None:
    _edit(project, "jpa-entity")
    before = (project / "site" / "r1" / "report.json").stat().st_mtime_ns
    proc = evalkit(project, "run", "-q")
    assert not TASK_LINE.search(proc.stdout), proc.stdout
    assert "│" not in proc.stdout and "suites/migration.html" not in proc.stdout
    assert (project / "site" / "r1" / "report.json").stat().st_mtime_ns > before  # the run did run


def test_run_state_is_thread_safe() -> None:
    tasks = {f"generate:s{i}": SimpleNamespace(actions=[1], task_dep=[], setup_tasks=[]) for i in range(400)}
    tasks["generate"] = SimpleNamespace(actions=[], task_dep=list(tasks), setup_tasks=[])
    tasks["summarize"] = SimpleNamespace(actions=[1], task_dep=["generate"], setup_tasks=[])
    tasks["unselected:x"] = SimpleNamespace(actions=[1], task_dep=[], setup_tasks=[])
    state = progress.RunState(jobs=4)
    state.plan(tasks, ["summarize"])
    assert dict((s, t) for s, _, t, _ in state.rows()) == {"generate": 400, "summarize": 1}

    def work(k: int) -> None:
        for i in range(k, 400, 8):
            state.start(f"generate:s{i}")
            state.time_left()
            state.finish(f"generate:s{i}", failed=i % 50 == 0, ran=i % 3 != 0)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state.rows()[0] == ("generate", 400, 400, 8)
    assert len(state.durations["generate"]) == sum(1 for i in range(400) if i % 3 != 0)
    assert state.time_left() is not None and not state.started


def test_counters_from_budget_and_containers() -> None:
    progress.COUNTERS.reset()
    b = Budget(2.0)
    Budget(None).charge(0.25)  # a system's client: counted, not against the judge's budget

    def charge() -> None:
        for _ in range(100):
            b.charge(0.001)

    threads = [threading.Thread(target=charge) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c = progress.COUNTERS.snapshot()
    assert c["model_calls"] == 401 and c["budget_usd"] == 2.0
    assert abs(c["budgeted_spend_usd"] - 0.4) < 1e-9 and abs(c["spend_usd"] - 0.65) < 1e-9
    with progress.COUNTERS.container():
        assert progress.COUNTERS.snapshot()["containers"] == 1
    assert progress.COUNTERS.snapshot()["containers"] == 0


def test_mode_for() -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    env = os.environ.pop("EVALKIT_PROGRESS", None)
    try:
        assert progress.mode_for(True, Tty()) == "quiet"
        assert progress.mode_for(False, Tty()) == ("live" if os.environ.get("TERM") != "dumb" else "plain")
        assert progress.mode_for(False, open(os.devnull, "w")) == "plain"
    finally:
        if env is not None:
            os.environ["EVALKIT_PROGRESS"] = env


def test_kept_durations_give_the_median_and_capped_sum_of_the_list() -> None:
    """`progress.Durations` keeps a group's durations sorted with their sum so that an estimate costs a bisection
    per group instead of a pass over every finished task: on random runs (skewed, with ties, timeouts and zeros)
    its median and capped sum are those of the plain list, whatever the order the tasks finished in."""
    import random
    import statistics

    rng = random.Random(36)
    for trial in range(400):
        n = rng.randint(1, 60)
        ds = [round(rng.lognormvariate(-2, 1.5), rng.choice((1, 3, 9))) for _ in range(n)]
        ds += [20.0] * rng.randint(0, 3) + [0.0] * rng.randint(0, 2)  # timeouts, instant tasks
        rng.shuffle(ds)
        kept = progress.Durations()
        for d in ds:
            kept.add(d)
        floor = rng.choice((0.0, 0.01, 0.5, 5.0))
        cap = progress.OUTLIER * max(statistics.median(ds), floor)
        assert len(kept) == len(ds) and kept.median() == statistics.median(ds)
        assert kept.robust_sum(floor) == pytest.approx(sum(min(d, cap) for d in ds), rel=1e-12, abs=1e-12), trial


def test_the_rag_grade_is_priced_its_ragas_import_only_when_a_judge_is_configured() -> None:
    """A rag suite's first grade imports ragas only to judge (the offline metrics are computed without it): the time
    left adds `SETUP_S` once for it with a judge, and nothing without one."""
    names = [f"{stage}:bot:rag/c{i}" for stage in ("generate", "grade") for i in range(4)]
    tasks = {n: SimpleNamespace(actions=[1], task_dep=[], setup_tasks=[]) for n in names}
    tasks["all"] = SimpleNamespace(actions=[], task_dep=names, setup_tasks=[])

    def left(judged: bool) -> float:
        clock = iter(range(1000)).__next__
        state = progress.RunState(1, {"rag": "rag"}, {"bot": "live"}, progress.setups_for(judged))
        state.clock = lambda: float(clock())
        state.plan(tasks, ["all"])
        for i in range(4):  # every generate done: the grades are all that is left
            state.start(f"generate:bot:rag/c{i}")
            state.finish(f"generate:bot:rag/c{i}")
        value = state.time_left()
        assert value is not None
        return value

    setup = progress.SETUP_S[("grade", "rag")]
    assert setup > 1.0 and progress.setups_for(False) == {}
    assert left(True) - left(False) > setup / 2  # the machine factor scales it; it is there with a judge only


def test_the_kept_summary_is_what_print_summary_writes_to_this_stdout(project: Path, monkeypatch) -> None:
    """`summary_text` (kept for a no-op to print again) equals what `print_summary` writes to a stdout that is not a
    terminal, for a UTF-8 stdout (box lines) and an ASCII one (rich then draws ASCII, and the text must encode)."""
    import io

    if not (project / "site" / "r1" / "report.json").exists():
        evalkit(project, "run", "-q")
    for encoding in ("utf-8", "ascii"):
        raw = io.BytesIO()
        stdout = io.TextIOWrapper(raw, encoding=encoding, newline="")
        monkeypatch.setattr(sys, "stdout", stdout)
        kept = progress.summary_text(project / "site", "r1")
        assert progress.print_summary(project / "site", "r1")
        stdout.flush()
        monkeypatch.undo()
        assert kept and raw.getvalue().decode(encoding) == kept, encoding
        kept.encode(encoding)  # writable to that stdout
        assert ("─" in kept) == (encoding == "utf-8")
