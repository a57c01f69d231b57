"""The limited doit run (evalkit.uptodate_manifest `affected`): after a change, doit is given only the tasks the
change reaches, and must run exactly what doit's full run would.

Property: from a settled state (a run saved the task manifest), each kind of change is made; the state is copied
aside (modification times kept: doit's database stays valid for the copy), the change is run the limited way,
then the copy is put back in the same place and run with doit on every task (no manifest). Both runs must execute
the same tasks and leave the same files; the limited run must have loaded fewer tasks when the change is local;
and the run after the limited one must take the no-op fast path (doit not started).

Two graphs: a synthetic doit namespace run in this process (chains through file_deps, a group, a task_dep on a
group and on a task, an `uptodate` doit must call, a failing task), and an evalkit project run as `evalkit run`.
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import subprocess
import sqlite3
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from doit.reporter import ExecutedOnlyReporter

from evalkit import cli
from evalkit.uptodate_manifest import MANIFEST, TASKS_MANIFEST, plan
from helpers import both, evalkit, executed, make_project

RAN: list[str] = []
"""Tasks with actions the synthetic graph's reporter saw start."""


class Recording(ExecutedOnlyReporter):
    def execute_task(self, task: Any) -> None:
        if task.actions:
            RAN.append(task.name)
        super().execute_task(task)


def concat(srcs: list[str], dest: str) -> bool:
    """A doit action: ``dest`` is the files ``srcs`` joined; fails when one of them says FAIL."""
    text = "".join(Path(s).read_text() for s in srcs)
    Path(dest).write_text(text)
    return "FAIL" not in text


def stamp(dest: str) -> bool:
    Path(dest).write_text("stamped")
    return True


def flag_clear(root: str) -> bool:
    """An `uptodate` doit must call: up to date unless the file FLAG exists."""
    return not os.path.exists(os.path.join(root, "FLAG"))


N = 4


def namespace(root: Path) -> dict[str, object]:
    """src/i -> a:i -> b:i -> total -> report:x (task_dep on the group b and on total); check:i with an
    `uptodate` callable; audit with a task_dep on `check:0`; retry:i with `uptodate: [False]` when a marker exists."""
    r = str(root)

    def task_a() -> Iterator[dict[str, object]]:
        yield {"basename": "a", "name": None}
        for i in range(N):
            yield {"name": str(i), "actions": [(concat, [[f"{r}/src/{i}"], f"{r}/out/a{i}"])],
                   "file_dep": [f"{r}/src/{i}"], "targets": [f"{r}/out/a{i}"]}

    def task_b() -> Iterator[dict[str, object]]:
        yield {"basename": "b", "name": None}
        for i in range(N):
            yield {"name": str(i), "actions": [(concat, [[f"{r}/out/a{i}", f"{r}/conf"], f"{r}/out/b{i}"])],
                   "file_dep": [f"{r}/out/a{i}", f"{r}/conf"], "targets": [f"{r}/out/b{i}"]}

    def task_total() -> dict[str, object]:
        deps = [f"{r}/out/b{i}" for i in range(N)]
        return {"actions": [(concat, [deps, f"{r}/out/total"])], "file_dep": deps, "targets": [f"{r}/out/total"]}

    def task_report() -> Iterator[dict[str, object]]:
        yield {"name": "x", "actions": [(concat, [[f"{r}/out/total"], f"{r}/out/report"])],
               "file_dep": [f"{r}/out/total"], "targets": [f"{r}/out/report"], "task_dep": ["b", "total"]}

    def task_check() -> Iterator[dict[str, object]]:
        for i in range(2):
            yield {"name": str(i), "actions": [(stamp, [f"{r}/out/check{i}"])], "targets": [f"{r}/out/check{i}"],
                   "uptodate": [(flag_clear, [r])]}

    def task_audit() -> dict[str, object]:
        return {"actions": [(concat, [[f"{r}/src/0"], f"{r}/out/audit"])], "file_dep": [f"{r}/src/0"],
                "targets": [f"{r}/out/audit"], "task_dep": ["check:0"]}

    def task_retry() -> Iterator[dict[str, object]]:
        for i in range(2):
            task: dict[str, object] = {"name": str(i), "actions": [(concat, [[f"{r}/src/{i}"], f"{r}/out/retry{i}"])],
                                       "file_dep": [f"{r}/src/{i}"], "targets": [f"{r}/out/retry{i}"]}
            if os.path.exists(f"{r}/out/retry{i}.retry"):
                task["uptodate"] = [False]
            yield task

    return {"DOIT_CONFIG": {"dep_file": f"{r}/db.sqlite3", "backend": "sqlite3", "verbosity": 0,
                            "reporter": Recording, "default_tasks": ["a", "b", "total", "report", "check", "audit",
                                                                     "retry"]},
            "task_a": task_a, "task_b": task_b, "task_total": task_total, "task_report": task_report,
            "task_check": task_check, "task_audit": task_audit, "task_retry": task_retry}


ARGS = argparse.Namespace(doit_args=[], strict=False)
ALL = {f"{g}:{i}" for g in "ab" for i in range(N)} | {"total", "report:x", "check:0", "check:1", "audit", "retry:0",
                                                       "retry:1"}


LEFT_OUT: list[frozenset[str]] = []
"""The targets each `run_graph` left out of its limited run (`Plan.left_out`), last one last."""


def run_graph(root: Path, argv: list[str] | None = None) -> tuple[int, list[str]]:
    RAN.clear()
    code, _noop, left_out = cli._doit_unless_noop(namespace(root), argv or ["run"], ARGS, root / "work")
    LEFT_OUT.append(left_out)
    return code, sorted(RAN)


def target(root: Path, task: str) -> str:
    """The file task ``task`` of `namespace` makes."""
    group, _, index = task.partition(":")
    return f"{root}/out/{group}" if group in ("total", "report", "audit") else f"{root}/out/{group}{index}"


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "out").rglob("*")) if p.is_file()}


def loaded(work: Path) -> int:
    with open(work / TASKS_MANIFEST, "rb") as fh:
        return int(pickle.load(fh)["loaded"])


ALWAYS = 3
"""check:0 and check:1 (an `uptodate` doit must call) and audit (a task_dep on check:0): loaded on every run."""


def settle_graph(root: Path) -> None:
    """Run until a run executes nothing and gives doit only the tasks it must always decide itself."""
    for _ in range(3):
        code, ran = run_graph(root)
        if code == 0 and ran == [] and loaded(root / "work") == ALWAYS:
            return
    raise AssertionError("three runs and none was limited to the tasks doit must decide itself")


def _write(rel: str, text: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return change


def _unlink(rel: str) -> Callable[[Path], None]:
    return lambda root: (root / rel).unlink()


def _touch(rel: str) -> Callable[[Path], None]:
    def touch(root: Path) -> None:
        st = os.stat(root / rel)
        os.utime(root / rel, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    return touch


# (id, change, whether the limited run must have loaded fewer tasks than all)
GRAPH_CHANGES: list[tuple[str, Callable[[Path], None], bool]] = [
    ("edited source", _write("src/2", "two edited\n"), True),
    ("edited source, same size and content after", both(_write("src/2", "xxxx"), _write("src/2", "2\n\n\n")), True),
    ("source touched only", _touch("src/3"), True),
    ("edited intermediate target", _write("out/a1", "tampered\n"), True),
    ("deleted intermediate target", _unlink("out/b2"), True),
    ("deleted final target", _unlink("out/report"), True),
    ("edited shared input", _write("conf", "conf edited\n"), True),
    ("uptodate callable says run", _write("FLAG", "x"), True),
    ("retry marker", _write("out/retry1.retry", ""), True),
    ("failing task", _write("src/1", "FAIL\n"), True),
    ("failure healed", _write("src/1", "one again\n"), True),
    ("nothing changed", lambda root: None, True),
]


@pytest.fixture(scope="module")
def graph_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("limited") / "g"
    (root / "src").mkdir(parents=True)
    (root / "out").mkdir()
    for i in range(N):
        (root / "src" / str(i)).write_text(f"{i}\n")
    (root / "conf").write_text("conf\n")
    code, ran = run_graph(root)
    assert code == 0 and set(ran) == ALL
    return root


@pytest.mark.parametrize("name,change,local", GRAPH_CHANGES, ids=[c[0] for c in GRAPH_CHANGES])
def test_a_limited_run_runs_what_doit_runs(graph_root: Path, tmp_path: Path, name: str,
                                           change: Callable[[Path], None], local: bool) -> None:
    root = graph_root
    if (root / "FLAG").exists():
        (root / "FLAG").unlink()
    if name != "failure healed":
        settle_graph(root)
    assert (root / "work" / TASKS_MANIFEST).exists() or name == "failure healed"
    change(root)
    snapshot = tmp_path / "snapshot"
    shutil.copytree(root, snapshot)  # copy2: modification times kept, so doit's database holds for the copy
    code, ran = run_graph(root)
    limited_files, limited_code = files(root), code
    left_out = LEFT_OUT[-1]  # what evalkit.run_status takes as unmarked without a stat: no marker, no task ran it
    assert not any(os.path.exists(f"{t}.retry") for t in left_out), name
    assert left_out.isdisjoint(target(root, t) for t in ran), name
    if name == "retry marker":
        assert target(root, "retry:1") not in left_out, "a marked task is never left out"
    if code == 0:  # a limited run leaves out every task it did not load; a run of every task (loaded -1) none
        assert len(left_out) == (len(ALL) - loaded(root / "work") if loaded(root / "work") >= 0 else 0), name
    if code == 0:
        assert loaded(root / "work") < len(ALL) or not local
        if not (root / "FLAG").exists() and not any((root / "out").glob("*.retry")):
            again, ran_again = run_graph(root)
            assert (again, ran_again) == (0, []), f"{name}: the next run runs nothing"
            assert loaded(root / "work") == ALWAYS, f"{name}: the next run gives doit the {ALWAYS} it must decide"
    # the reference: the same state, every task given to doit
    aside = tmp_path / "limited"
    root.rename(aside)
    shutil.copytree(snapshot, root)
    shutil.rmtree(root / "work", ignore_errors=True)
    full_code, full_ran = run_graph(root)
    assert (limited_code == 0) == (full_code == 0), name
    assert ran == full_ran, f"{name}: limited ran {ran}, doit's full run {full_ran}"
    assert limited_files == files(root), name
    shutil.rmtree(root)
    aside.rename(root)  # the limited run's state (and manifest) goes on to the next change
    for marker in (root / "out").glob("*.retry"):
        marker.unlink()


def test_tasks_not_loaded_keep_their_state_in_doits_database(graph_root: Path) -> None:
    """doit writes back only the tasks it ran (SqliteDB.dump of dirty rows): a limited run forgets no other."""
    root = graph_root
    if (root / "FLAG").exists():
        (root / "FLAG").unlink()
    settle_graph(root)
    rows_before = _rows(root)
    (root / "src" / "3").write_text("three edited\n")
    code, ran = run_graph(root)
    assert code == 0 and ran == ["a:3", "b:3", "report:x", "total"]
    rows_after = _rows(root)
    assert set(rows_after) == set(rows_before)
    changed = {k for k in rows_before if rows_before[k] != rows_after[k]}
    assert changed <= {"a:3", "b:3", "total", "report:x", "check:0", "check:1"}, changed


def _rows(root: Path) -> dict[str, str]:
    with sqlite3.connect(root / "db.sqlite3") as conn:
        return dict(conn.execute("select task_id, task_data from doit").fetchall())


# ---- an evalkit project -------------------------------------------------------------------------------------

SYSTEMS_YAML = """\
systems:
  - name: gold
    adapter: gold
  - name: empty
    adapter: empty
"""


def site_files(project: Path) -> dict[str, bytes]:
    site = project / "site"
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(site).parts)}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_project(tmp_path_factory.mktemp("limited-project") / "p", systems=SYSTEMS_YAML,
                        cases=["jpa-entity", "cdi-inject", "ejb-stateless"])
    (root / "evalkit.yaml").write_text((root / "evalkit.yaml").read_text().replace("baseline: naive", "baseline: gold"))
    evalkit(root, "run")
    return root


def run_end(proc: subprocess.CompletedProcess[str]) -> tuple[int, list[str]]:
    """How `evalkit run` ended: its exit status and evalkit's own lines on stderr (pending retries, the status)."""
    return proc.returncode, [line for line in proc.stderr.splitlines() if line.startswith("evalkit: ")]


def settle(project: Path, env: dict[str, str] | None = None) -> None:
    db = project / ".evalkit" / "doit.sqlite3"
    for _ in range(3):
        before = os.stat(db).st_mtime_ns
        if executed(evalkit(project, "run", env=env)) == set() and os.stat(db).st_mtime_ns == before:
            return
    raise AssertionError("three runs and none took the fast path")


def _append(rel: str, text: str) -> Callable[[Path], None]:
    def change(project: Path) -> None:
        (project / rel).write_text((project / rel).read_text() + text)
    return change


def _new_case(project: Path) -> None:
    src = project / "cases" / "migration" / "jpa-entity"
    dest = project / "cases" / "migration" / "jpa-copy"
    shutil.copytree(src, dest)
    (dest / "case.yaml").write_text((dest / "case.yaml").read_text().replace("id: jpa-entity", "id: jpa-copy"))


ART = ".evalkit/artifacts/gold/migration/jpa-entity"
PROJECT_CHANGES: list[tuple[str, Callable[[Path], None], dict[str, str], bool]] = [
    ("edited case file", _append("cases/migration/jpa-entity/case.yaml", "\n# edited\n"), {}, True),
    ("deleted artifact", lambda p: (p / ART / "grades.json").unlink(), {}, True),
    ("edited artifact", _append(f"{ART}/output.json", "\n"), {}, True),
    ("retry marker", lambda p: (p / ART / "grades.json.retry").touch(), {}, True),
    ("template", _append("templates/site/assets/style.css", "\n/* edited */\n"), {}, True),
    ("config value", _append("evalkit.yaml", "judge:\n  samples: 2\n"), {}, False),
    ("release variable", lambda p: None, {"EVALKIT_RELEASE": "r2"}, False),
    ("new case folder", _new_case, {}, True),
]


@pytest.mark.parametrize("name,change,env,local", PROJECT_CHANGES, ids=[c[0] for c in PROJECT_CHANGES])
def test_a_limited_evalkit_run_runs_what_doit_runs(project: Path, tmp_path: Path, name: str,
                                                   change: Callable[[Path], None], env: dict[str, str],
                                                   local: bool) -> None:
    settle(project, env)
    change(project)
    snapshot = tmp_path / "snapshot"
    shutil.copytree(project, snapshot, symlinks=True)
    limited = evalkit(project, "run", env=env)
    ran, limited_end = executed(limited), run_end(limited)
    limited_site = site_files(project)
    with open(project / ".evalkit" / TASKS_MANIFEST, "rb") as fh:
        manifest = pickle.load(fh)
    if local:
        assert 0 <= manifest["loaded"] < len(manifest["tasks"]) / 2, f"{name}: doit was given {manifest['loaded']} tasks"
    if name != "retry marker":  # a task with `uptodate: [False]` is never recorded up to date
        assert (project / ".evalkit" / MANIFEST).exists(), f"{name}: the run saved the no-op manifest"
    aside = tmp_path / "limited"
    project.rename(aside)
    shutil.copytree(snapshot, project, symlinks=True)
    for m in (MANIFEST, TASKS_MANIFEST):
        (project / ".evalkit" / m).unlink(missing_ok=True)
    whole = evalkit(project, "run", env=env)
    full = executed(whole)
    assert ran == full, f"{name}: limited {sorted(ran)}, doit's full run {sorted(full)}"
    assert limited_end == run_end(whole), f"{name}: the run's end (status, pending retries) as a full run's"
    assert limited_site == site_files(project), name
    shutil.rmtree(project)
    aside.rename(project)
    settle(project, env)  # and the state a limited run left takes the fast path next


def test_a_task_naming_others_by_a_key_of_its_own_gives_doit_every_task(tmp_path: Path) -> None:
    """`setup`, `calc_dep`, `getargs` name tasks a limited run could leave out: such a graph is never limited."""
    def task_x() -> Iterator[dict[str, object]]:
        yield {"name": "a", "actions": [(stamp, [str(tmp_path / "a")])], "file_dep": [str(tmp_path / "src")],
               "targets": [str(tmp_path / "a")]}
        yield {"name": "b", "actions": [(stamp, [str(tmp_path / "b")])], "file_dep": [str(tmp_path / "src")],
               "targets": [str(tmp_path / "b")], "setup": ["x:a"]}

    (tmp_path / "src").write_text("s")
    namespace = {"DOIT_CONFIG": {"dep_file": str(tmp_path / "db.sqlite3"), "backend": "sqlite3", "verbosity": 0,
                                 "reporter": Recording}, "task_x": task_x}
    assert cli._doit_unless_noop(namespace, ["run"], ARGS, tmp_path / "work") == (0, None, frozenset())
    p = plan(namespace, str(tmp_path / "db.sqlite3"), ("strict", False))
    assert p.affected(tmp_path / "work", p.stats()) is None
    assert not p.limitable
