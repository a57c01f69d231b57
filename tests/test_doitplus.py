"""evalkit.doitplus does what doit does, faster: same database, same staleness answers, same links."""

from __future__ import annotations

import gc
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import doit.control
import doit.task
import pytest
from doit.dependency import JSONCodec, SqliteDB

from evalkit import doitplus
from evalkit.doitplus import BulkSqliteDB, MD5Checker
from evalkit.fsutil import atomic_write_text
from helpers import make_project, run


def _states(db: Path, cls: type) -> dict[str, dict]:
    ids = [r[0] for r in sqlite3.connect(db).execute("select task_id from doit")]
    store = cls(str(db), JSONCodec())
    return {i: store._get_task_data(i) for i in ids}


def test_bulk_backend_reads_what_doit_wrote_and_doit_reads_what_it_writes(tmp_path: Path) -> None:
    db = tmp_path / "deps.sqlite3"
    theirs = SqliteDB(str(db), JSONCodec())
    theirs.set("a", "deps:", ["x", "y"])
    theirs.set("b", "checker:", "MD5Checker")
    theirs.dump()

    ours = BulkSqliteDB(str(db), JSONCodec())
    assert ours.get("a", "deps:") == ["x", "y"] and ours.get("b", "checker:") == "MD5Checker"
    assert ours.in_("a") and not ours.in_("zzz") and ours.get("zzz", "deps:") is None
    ours.set("c", "_values_:", {"k": 1})
    ours.remove("a")
    assert not ours.in_("a")
    ours.dump()

    again = SqliteDB(str(db), JSONCodec())
    assert again.get("c", "_values_:") == {"k": 1} and again.get("b", "checker:") == "MD5Checker"
    assert not again.in_("a")


def test_bulk_backend_reads_a_few_rows_one_by_one_and_many_in_one_query(tmp_path: Path) -> None:
    """A limited run asks for a few of 14,000 rows: each is one query (the table is not read whole); past ONE_BY_ONE
    lookups the table is read in one query. Either way every answer is doit's, removals and all."""
    db = tmp_path / "deps.sqlite3"
    theirs = SqliteDB(str(db), JSONCodec())
    for i in range(300):
        theirs.set(f"t{i}", "deps:", [f"f{i}"])
    theirs.dump()
    ours = BulkSqliteDB(str(db), JSONCodec())
    statements: list[str] = []
    ours._conn.set_trace_callback(statements.append)
    few = BulkSqliteDB.ONE_BY_ONE // 2
    assert [ours.get(f"t{i}", "deps:") for i in range(few)] == [[f"f{i}"] for i in range(few)]
    assert not ours.in_("nope") and ours.in_("t200")
    assert ours._raw is None and len(statements) == few + 2
    assert all("where task_id" in s for s in statements)
    ours.remove("t250")
    assert not ours.in_("t250")
    asked = [ours.get(f"t{i}", "deps:") for i in range(300)]
    assert asked == [[f"f{i}"] if i != 250 else None for i in range(300)]
    assert ours._raw is not None and sum("where task_id" not in s and s.startswith("select") for s in statements) == 1
    assert ours.in_("t299") and not ours.in_("t300")


def test_a_project_database_reads_the_same_with_either_backend(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", cases=["jpa-entity"])
    run(root)
    db = root / ".evalkit" / "doit.sqlite3"
    assert doitplus.backend_name() == doitplus.BACKEND_NAME  # the entry point is installed
    theirs, ours = _states(db, SqliteDB), _states(db, BulkSqliteDB)
    assert len(theirs) >= 8 and theirs == ours
    # and a run with doit's own backend over the same database finds nothing to do
    assert run(root, "--", "--backend", "sqlite3") == set()


def test_checker_memo_sees_atomic_writes(tmp_path: Path) -> None:
    path = tmp_path / "artifact.json"
    checker = MD5Checker()
    assert not checker.exists(str(path))  # a missing file is not remembered as missing
    atomic_write_text(path, "one")
    assert checker.exists(str(path))
    first = checker.info(str(path))
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # changed behind the memo's back: not seen
    assert checker.info(str(path)) == first
    atomic_write_text(path, "a longer text")  # an atomic write is seen by the next check
    after = checker.info(str(path))
    assert after.st_size == len("a longer text") and after != first


def test_checker_saves_doits_state_from_the_stat_its_check_took(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """get_state: doit's (mtime, size, md5) of a file_dep after its task ran, or None when the saved time still
    holds, without stat'ing the file again; a file an earlier task of the run wrote (atomically) is stat'ed anew."""
    from doit.dependency import MD5Checker as DoitMD5Checker

    path = tmp_path / "scores.json"
    atomic_write_text(path, "one")
    ours, doits = MD5Checker(), DoitMD5Checker()
    assert not ours.check_modified(str(path), ours.info(str(path)), doits.get_state(str(path), None))
    calls: list[str] = []
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: calls.append(str(p)) or real_stat(p, *a, **k))
    fresh = ours.get_state(str(path), None)
    unchanged = ours.get_state(str(path), fresh)
    assert calls == [], "the memo's stat, not another"
    assert fresh == doits.get_state(str(path), None) and unchanged is None
    atomic_write_text(path, "a longer text")  # a task of this run rewrote it: the memo forgot it
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # (a later time than the file system's coarse clock may give)
    calls.clear()
    again = ours.get_state(str(path), fresh)
    assert len(calls) == 1 and again is not None and again[1] == len("a longer text")
    assert again == doits.get_state(str(path), fresh)


def test_checker_is_dropped_when_doit_is_done_with_it(tmp_path: Path) -> None:
    import gc

    from evalkit import fsutil

    before = len([r for r in fsutil._replace_listeners if r() is not None])
    checker = MD5Checker()
    assert len([r for r in fsutil._replace_listeners if r() is not None]) == before + 1
    del checker
    gc.collect()
    assert len([r for r in fsutil._replace_listeners if r() is not None]) == before


def _doit_original(targets: dict[str, str], task: object, deps_list: list[str]) -> None:
    # doit 0.37's TaskControl.add_implicit_task_dep, verbatim
    for dep in deps_list:
        if (dep in targets and targets[dep] not in task.task_dep):  # type: ignore[attr-defined]
            task.task_dep.append(targets[dep])  # type: ignore[attr-defined]


class _Task:
    def __init__(self, task_dep: list[str]) -> None:
        self.task_dep = list(task_dep)


def test_implicit_task_deps_are_doits_links_in_doits_order() -> None:
    assert doit.control.TaskControl.add_implicit_task_dep is doitplus.add_implicit_task_dep
    targets = {f"f{i}": f"t{i % 37}" for i in range(500)} | {"dup": "t3"}
    deps = [f"f{(i * 7) % 600}" for i in range(600)] + ["dup", "not-a-target"]
    for start in ([], ["t5", "other"]):
        a, b = _Task(start), _Task(start)
        _doit_original(targets, a, deps)
        doitplus.add_implicit_task_dep(targets, b, deps)
        assert b.task_dep == a.task_dep and len(set(b.task_dep)) == len(b.task_dep)


def test_checker_class_name_is_doits() -> None:
    # doit forgets every task's state when the checker's class name changes
    from doit.dependency import MD5Checker as DoitChecker

    assert MD5Checker.__name__ == DoitChecker.__name__


def test_parallel_run_leaves_the_process_streams_alone(tmp_path: Path) -> None:
    """doit's output capture swaps sys.stdout/sys.stderr per action; with threads the actions
    restored each other's tees into a chain (thousands deep after a large run: exit 120)."""
    import subprocess
    import sys
    import textwrap

    systems = "systems:\n  - name: gold\n    adapter: gold\n  - name: empty\n    adapter: empty\n"
    root = make_project(tmp_path / "p", cases=["jpa-entity"], systems=systems)
    cfg = root / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("baseline: naive\n", "baseline: gold\n"))
    suite = root / "cases" / "migration"
    for i in range(40):  # 41 cases x 2 systems x 3 stages: enough overlapping actions
        copy = suite / f"copy-{i:02d}"
        shutil.copytree(suite / "jpa-entity", copy)
        case = copy / "case.yaml"
        case.write_text(case.read_text().replace("id: jpa-entity", f"id: copy-{i:02d}"))
    probe = textwrap.dedent("""\
        import sys
        before = (sys.stdout, sys.stderr)
        from evalkit.cli import main
        code = main(["run", "--jobs", "2"])
        print(code, sys.stdout is before[0], sys.stderr is before[1], file=sys.__stderr__)
        """)
    proc = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "EVALKIT_CONFIG": str(cfg)})
    assert proc.stderr.strip().splitlines()[-1] == "0 True True", proc.stderr[-2000:]
    assert len(list((root / "site" / "r1" / "cases" / "migration").glob("*.json"))) == 41


def test_reporter_freezes_the_graph_when_the_run_starts() -> None:
    import io

    gc.unfreeze()
    reporter = doitplus.ExecutedOnlyReporter(io.StringIO(), {})
    before = gc.get_freeze_count()
    reporter.initialize({}, [])
    assert gc.get_freeze_count() > before
    gc.unfreeze()


class _Node:
    def __init__(self, name: str, meta: dict | None) -> None:
        self.task = doit.task.Task(name, None, meta=meta)


def test_ready_queue_serves_the_lowest_priority_first_and_doits_order_among_equals() -> None:
    ready = doitplus.PriorityReady()
    assert not ready and len(ready) == 0
    for name, meta in [("a", None), ("b", {"priority": 1}), ("c", {"other": "x"}), ("d", {"priority": 0})]:
        ready.append(_Node(name, meta))  # type: ignore[arg-type]
    assert len(ready) == 4 and ready
    assert [ready.popleft().task.name for _ in range(4)] == ["d", "b", "a", "c"]  # no priority: the default (2)
    assert not ready
    with pytest.raises(IndexError):
        ready.popleft()


def _dispatch_order(tmp_path: Path, metas: bool) -> list[str]:
    """The order doit runs a small graph in: x:1, x:2 depend on y:1, y:2; y:3 depends on nothing; the
    default tasks meet x first (as evalkit's meet execute before generate)."""
    from doit.cmd_base import ModuleTaskLoader
    from doit.doit_cmd import DoitMain

    ran: list[str] = []

    def record(name: str) -> None:
        ran.append(name)

    def task_x() -> Any:
        for i in (1, 2):
            yield {"name": str(i), "actions": [(record, [f"x:{i}"])], "task_dep": [f"y:{i}"],
                   "meta": {"priority": 0} if metas else None, "verbosity": 0}

    def task_y() -> Any:
        for i in (1, 2, 3):
            yield {"name": str(i), "actions": [(record, [f"y:{i}"])], "verbosity": 0}

    module = {"DOIT_CONFIG": {"dep_file": str(tmp_path / f"db-{metas}"), "default_tasks": ["x", "y"],
                              "reporter": doitplus.ExecutedOnlyReporter, "verbosity": 0},
              "task_x": task_x, "task_y": task_y}
    # one worker thread: evalkit's runner (`-P thread`), which hands doit each finished task, in a fixed order
    try:
        assert DoitMain(ModuleTaskLoader(module)).run(["run", "-n", "1", "-P", "thread"]) == 0
    finally:
        gc.unfreeze()  # evalkit's reporter froze the heap when the run started (as evalkit.api.run gives it back)
    return ran


def test_doit_runs_a_prioritised_task_as_soon_as_its_dependencies_are_done(tmp_path: Path) -> None:
    """With the priority in `meta`, x:1 runs as soon as y:1 is done; without it doit's queue, first in first
    out, runs y:2 before it (what made a hanging patch wait for every validation before it could start)."""
    assert doit.control.TaskControl.task_dispatcher is doitplus.task_dispatcher
    assert _dispatch_order(tmp_path, metas=True) == ["y:1", "x:1", "y:2", "x:2", "y:3"]
    assert _dispatch_order(tmp_path, metas=False) == ["y:1", "y:2", "x:1", "x:2", "y:3"]
