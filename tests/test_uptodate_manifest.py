"""The no-op fast path (evalkit.uptodate_manifest) skips doit only when doit would have nothing to do.

Property: from a settled project (a full run, then a no-op that saved the manifest), each kind of change is
made and the project run; the run must run doit (on every task, or on the tasks the change reaches:
tests/test_uptodate_limited.py; doit's database is written: doit commits on every run, the fast path never opens it), run every task doit's own check says is out of date (`doit list
--status` on a copy of the database, asked before the run) and exactly the tasks the change calls for. With
no change, the run must take the fast path and run nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, Iterator

import pytest

from doit.reporter import ExecutedOnlyReporter

from evalkit import cli
from evalkit.uptodate_manifest import END, MANIFEST, plan
from helpers import REPO, evalkit, executed, make_project

CASES = ["migration/cdi-inject", "migration/jpa-entity"]
SYSTEMS = ["gold", "empty"]
GROUPS = {"generate", "validate", "health", "execute", "grade", "score", "audit", "render", "sandbox_image",
          "judge_batch", "images", "outcome"}
"""Task groups (doit lists a group as a task of its own)."""
PLAIN_DOIT = {"images", "outcome"}
"""Plain doit's own groups (dodo.py), not `evalkit run`'s: their tasks run on every `doit`."""
SYSTEMS_YAML = textwrap.dedent("""\
    systems:
      - name: gold
        adapter: gold
      - name: empty
        adapter: empty
    """)


def stages(names: list[str], systems: list[str] = SYSTEMS, cases: list[str] = CASES) -> set[str]:
    return {f"{st}:{sy}:{c}" for st in names for sy in systems for c in cases}


def case_tasks(case: str) -> set[str]:
    return stages(["generate", "grade", "score"], cases=[case]) | {f"validate:{case}", f"health:{case}"}


def db(project: Path) -> Path:
    return project / ".evalkit" / "doit.sqlite3"


def db_stat(project: Path) -> tuple[int, int]:
    st = os.stat(db(project))
    return st.st_mtime_ns, st.st_ino


def doit_out_of_date(project: Path, tmp: Path, env: dict[str, str]) -> set[str]:
    """The tasks doit's own check finds out of date (`doit list --all --status`, on a copy of the database)."""
    copy = tmp / "status.sqlite3"
    shutil.copy(db(project), copy)
    full_env = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), **env}
    proc = subprocess.run([sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), "list", "--all", "--status",
                           "--db-file", str(copy)], env=full_env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split()[:2] for line in proc.stdout.splitlines() if line.strip()]  # status, name, doc
    return {name for status, name in rows if status == "R" and name not in GROUPS and name.split(":")[0] not in PLAIN_DOIT}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_project(tmp_path_factory.mktemp("manifest") / "p", systems=SYSTEMS_YAML)
    (root / "evalkit.yaml").write_text((root / "evalkit.yaml").read_text().replace("baseline: naive", "baseline: gold"))
    first = executed(evalkit(root, "run"))
    assert stages(["generate", "grade", "score"]) <= first
    return root


def settle(project: Path, *args: str, env: dict[str, str] | None = None) -> None:
    """Run until a run takes the fast path: nothing executed and doit's database not even opened (a full run
    that finds nothing to do saves the manifest; the run after it must not start doit)."""
    for _ in range(3):
        before = db_stat(project)
        if executed(evalkit(project, "run", *args, env=env)) == set() and db_stat(project) == before:
            assert (project / ".evalkit" / MANIFEST).exists()
            return
    raise AssertionError("three runs and none took the fast path")


def test_nothing_changed_takes_the_fast_path_and_reports_as_usual(project: Path) -> None:
    settle(project)
    proc = evalkit(project, "run")
    assert executed(proc) == set()
    assert "migration" in proc.stdout, "the summary table is printed from report.json as on any run"


def _append(path: Path, text: str) -> Callable[[], None]:
    return lambda: path.write_text(path.read_text() + text)


def _touch_only(path: Path) -> Callable[[], None]:
    def touch() -> None:
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    return touch


def _unlink(path: Path) -> Callable[[], None]:
    return lambda: path.unlink()


def _new_case(project: Path) -> None:
    src = project / "cases" / "migration" / "jpa-entity"
    dest = project / "cases" / "migration" / "jpa-copy"
    shutil.copytree(src, dest)
    case = dest / "case.yaml"
    case.write_text(case.read_text().replace("id: jpa-entity", "id: jpa-copy"))


def _forget(project: Path, task: str) -> Callable[[], None]:
    def forget() -> None:
        env = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml")}
        subprocess.run([sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), "forget", task], env=env,
                       check=True, capture_output=True, timeout=300)
    return forget


ART = ".evalkit/artifacts/gold/migration/jpa-entity"
TAIL = {"summarize", "render:r1"}

# (id, change, extra run arguments, environment, the tasks the run must execute (None: those doit lists))
CHANGES: list[tuple[str, Callable[[Path], Callable[[], None]], list[str], dict[str, str], set[str] | None]] = [
    ("edited case file", lambda p: _append(p / "cases/migration/jpa-entity/case.yaml", "\n# edited\n"), [], {},
     case_tasks("migration/jpa-entity") | TAIL),
    ("deleted artifact", lambda p: _unlink(p / ART / "grades.json"), [], {}, None),
    ("edited artifact", lambda p: _append(p / ART / "output.json", "\n"), [], {}, None),
    ("artifact touched, content unchanged", lambda p: _touch_only(p / ART / "output.json"), [], {}, set()),
    ("config value", lambda p: _append(p / "evalkit.yaml", "judge:\n  samples: 2\n"), [], {},
     stages(["grade", "score"]) | TAIL),
    ("template", lambda p: _append(p / "templates/site/assets/style.css", "\n/* edited */\n"), [], {}, {"render:r1"}),
    ("retry marker", lambda p: (p / ART / "grades.json.retry").touch, [], {}, {"grade:gold:migration/jpa-entity"}),
    ("doit forget", lambda p: _forget(p, "score:empty:migration/cdi-inject"), [], {},
     {"score:empty:migration/cdi-inject"}),
    ("release variable", lambda p: lambda: None, [], {"EVALKIT_RELEASE": "r2"}, {"summarize", "render:r2"}),
    ("selection", lambda p: _append(p / "cases/migration/cdi-inject/case.yaml", "\n# edited\n"),
     ["--select", "migration/jpa-*"], {}, set()),
    ("other EVALKIT variable", lambda p: lambda: None, [], {"EVALKIT_SOMETHING": "1"}, set()),
    ("--strict", lambda p: lambda: None, ["--strict"], {}, set()),
    ("new case folder", lambda p: lambda: _new_case(p), [], {}, None),  # last: the others' sets name two cases
]


@pytest.mark.parametrize("name,change,args,env,expected", CHANGES, ids=[c[0] for c in CHANGES])
def test_every_kind_of_change_takes_the_full_path(project: Path, tmp_path: Path, name: str,
                                                  change: Callable[[Path], Callable[[], None]], args: list[str],
                                                  env: dict[str, str], expected: set[str] | None) -> None:
    settle(project)
    before = db_stat(project)
    change(project)()
    selected = {"EVALKIT_SELECT": ",".join(args[1::2])} if args[:1] == ["--select"] else {}
    out_of_date = doit_out_of_date(project, tmp_path, {**env, **selected})
    ran = executed(evalkit(project, "run", *args, env=env))
    assert db_stat(project) != before, f"{name}: doit must run"
    assert out_of_date <= ran, f"{name}: doit's own check found {out_of_date - ran} out of date"
    if expected is None:
        assert out_of_date, f"{name}: doit's own check must find a task out of date"
    else:
        assert ran == expected
    settle(project, *args, env=env)  # the changed project's manifest: the next run of it is fast again


def test_a_task_selection_runs_doit_and_drops_the_manifest(project: Path) -> None:
    settle(project)
    executed(evalkit(project, "run", "generate"))
    assert not (project / ".evalkit" / MANIFEST).exists()


def copy_file(src: str, dest: str, ok: bool) -> bool:
    """A doit action: copies ``src`` to ``dest``; fails (returns False) unless ``ok``."""
    Path(dest).write_text(Path(src).read_text())
    return ok


def _namespace(tmp: Path, ok: bool) -> dict[str, object]:
    src, dest = tmp / "src.txt", tmp / "dest.txt"

    def task_copy() -> Iterator[dict[str, object]]:
        yield {"basename": "copy", "name": None}
        yield {"name": "one", "actions": [(copy_file, [str(src), str(dest), ok])], "file_dep": [str(src)],
               "targets": [str(dest)]}
    return {"DOIT_CONFIG": {"dep_file": str(tmp / "db.sqlite3"), "backend": "sqlite3", "verbosity": 0,
                            "reporter": ExecutedOnlyReporter}, "task_copy": task_copy}


def test_only_a_successful_run_saves_the_manifest(tmp_path: Path) -> None:
    (tmp_path / "src.txt").write_text("one")
    args = argparse.Namespace(doit_args=[], strict=False)
    manifest = tmp_path / MANIFEST
    assert cli._doit_unless_noop(_namespace(tmp_path, ok=False), ["run"], args, tmp_path)[0] != 0
    assert not manifest.exists(), "a failed task: no manifest"
    parallel = ["run", "-n", "2", "-P", "thread"]  # as `evalkit run` on two cores
    assert cli._doit_unless_noop(_namespace(tmp_path, ok=True), parallel, args, tmp_path) == (0, None, frozenset())
    assert manifest.exists(), "a task ran, and doit's own check after the run finds it up to date"
    db_before = os.stat(tmp_path / "db.sqlite3").st_mtime_ns
    code, noop_paths, _unmarked = cli._doit_unless_noop(_namespace(tmp_path, ok=True), ["run"], args, tmp_path)
    assert code == 0 and noop_paths is not None and str(tmp_path / "dest.txt") in noop_paths, "a no-op: its paths"
    assert os.stat(tmp_path / "db.sqlite3").st_mtime_ns == db_before, "the fast path does not run doit"
    (tmp_path / "src.txt").write_text("two")
    assert cli._doit_unless_noop(_namespace(tmp_path, ok=False), ["run"], args, tmp_path)[0] != 0
    assert not manifest.exists(), "the run dropped it, and failed"
    assert (tmp_path / "dest.txt").read_text() == "two"


def test_a_plan_with_an_uptodate_doit_must_call_has_no_fast_path(tmp_path: Path) -> None:
    def task_x() -> Iterator[dict[str, object]]:
        yield {"name": "a", "actions": [(copy_file, ["a", "b", True])], "file_dep": [], "uptodate": [lambda: True]}

    def task_y() -> Iterator[dict[str, object]]:
        yield {"name": "a", "actions": [(copy_file, ["a", "b", True])], "file_dep": [], "uptodate": [False]}

    def task_z() -> Iterator[dict[str, object]]:
        yield {"name": "a", "actions": [(copy_file, ["a", "b", True])], "file_dep": [], "setup": ["other"]}

    for creator in (task_x, task_y, task_z):
        assert plan({"DOIT_CONFIG": {}, creator.__name__: creator}, str(tmp_path / "db"), None).digest is None
    def task_ok() -> Iterator[dict[str, object]]:
        yield {"name": "a", "actions": [(copy_file, ["a", "b", True])], "file_dep": [], "uptodate": [True]}
    assert plan({"DOIT_CONFIG": {}, "task_ok": task_ok}, str(tmp_path / "db"), None).digest is not None


def test_a_noop_says_again_how_the_run_that_left_the_manifest_ended(tmp_path: Path) -> None:
    """A no-op's summary table and exit status are those of the run that left the manifest (kept in `END`), byte for
    byte what computing them again from report.json, the retry markers and the artifacts gives; the kept end is
    used only for the manifest it was kept with and the same options."""
    import pickle

    crashes = '  - name: crashes\n    adapter: command\n    command: ["{python}", "-c", "raise SystemExit(1)"]\n'
    root = make_project(tmp_path / "p", systems=SYSTEMS_YAML + crashes)
    (root / "evalkit.yaml").write_text((root / "evalkit.yaml").read_text().replace("baseline: naive", "baseline: gold"))
    end = root / ".evalkit" / END

    def run(*args: str) -> tuple[int, str, str, set[str]]:
        proc = evalkit(root, "run", *args, check=False)
        return proc.returncode, proc.stdout, proc.stderr, executed(proc)

    for _ in range(3):  # until a run takes the fast path
        if run()[3] == set():
            break
    assert end.exists()
    kept = run()
    end.unlink()
    fresh = run()  # the same no-op, its end computed again (and kept again)
    assert fresh == kept and end.exists()
    status, out, err, ran = kept
    assert status == 3 and "failed on every case" in err and ran == set(), err  # `crashes` failed on every case
    assert "crashes" in out and "migration" in out  # the summary table

    def tamper() -> None:  # a kept end that says what no computation would
        saved = pickle.loads(end.read_bytes())
        saved["end"] = type(saved["end"])("kept table\n", {}, 42, ["kept line"])
        end.write_bytes(pickle.dumps(saved))

    tamper()
    assert run()[:3] == (42, "kept table\n", "evalkit: kept line\n"), "a no-op says the kept end"
    assert run("-q")[0] == 3, "another display mode: computed again"
    tamper()
    _append(root / "cases/migration/jpa-entity/case.yaml", "\n# edited\n")()
    status, out, err, ran = run()
    assert status == 3 and ran and "kept" not in out + err, "a change: the run ends as computed"
