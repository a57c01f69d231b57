"""`evalkit import swebench --tree INSTANCE_ID=DIR`: a plain folder (no git) as a row's tree at base_commit."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from evalkit.cases import discover
from evalkit.errors import InputError
from evalkit.importers.swebench import UNVERIFIED_TAG, cut_test_ids, load_rows, parse_tree_map
from helpers import evalkit_at, without_plugin_autoload

REPO = Path(__file__).resolve().parents[2]

LIB = "def clamp(x, lo, hi):\n    return max(lo, x)\n\n\ndef double(x):\n    return 2 * x\n"
OLD_TESTS = ("from mylib import clamp, double\n\n\ndef test_double():\n    assert double(3) == 6\n\n\n"
             "def test_clamp_low():\n    assert clamp(-1, 0, 5) == 0\n")
FIX = ("diff --git a/mylib/__init__.py b/mylib/__init__.py\n--- a/mylib/__init__.py\n+++ b/mylib/__init__.py\n"
       "@@ -1,5 +1,5 @@\n def clamp(x, lo, hi):\n-    return max(lo, x)\n+    return min(hi, max(lo, x))\n \n \n def double(x):\n")
TEST_PATCH = ("diff --git a/tests/test_lib.py b/tests/test_lib.py\n--- a/tests/test_lib.py\n+++ b/tests/test_lib.py\n"
              "@@ -7,3 +7,7 @@ def test_double():\n \n def test_clamp_low():\n     assert clamp(-1, 0, 5) == 0\n+\n+\n"
              "+def test_clamp_high():\n+    assert clamp(9, 0, 5) == 5\n")
BASE = "0123456789abcdef0123456789abcdef01234567"


def evalkit(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("EVALKIT_RELEASE", None)
    return evalkit_at(list(args), cwd, full_env)


def plain_folder(root: Path, lib: str = LIB) -> Path:
    """The source as an sdist would hold it: files only, no git history."""
    tree = root / "mylib-0.1"
    (tree / "mylib").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "mylib" / "__init__.py").write_text(lib)
    (tree / "tests" / "test_lib.py").write_text(OLD_TESTS)
    return tree


def row(**change: object) -> dict:
    base = {"instance_id": "acme__mylib-1", "repo": "acme/mylib", "base_commit": BASE, "version": "0.1",
            "problem_statement": "clamp(9, 0, 5) returns 9.\nIt must respect the upper bound.\n",
            "patch": FIX, "test_patch": TEST_PATCH,
            "FAIL_TO_PASS": ["tests/test_lib.py::test_clamp_high"],
            "PASS_TO_PASS": ["tests/test_lib.py::test_double", "tests/test_lib.py::test_clamp_low"]}
    return {**base, **change}


def write_rows(project: Path, *rows: dict) -> Path:
    project.mkdir(parents=True, exist_ok=True)
    path = project / "instances.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_tree_folder_becomes_the_case_tree_marked_unverified(tmp_path: Path) -> None:
    folder = plain_folder(tmp_path)
    (folder / ".git").mkdir()  # a stray .git is not copied: the sandbox makes its own repository
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    project = tmp_path / "proj"
    write_rows(project, row(), row(instance_id="acme__other-2", repo="acme/other"))
    proc = evalkit("import", "swebench", "instances.jsonl", "--tree", f"acme__mylib-1={folder}",
                   "--suite-dir", "cases/swe", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 1 case(s)" in proc.stdout
    assert "skipped 1 instance(s) of acme/other" in proc.stderr
    assert "1 case(s) use a --tree folder not verified to be their base_commit" in proc.stderr

    case_dir = project / "cases" / "swe" / "acme__mylib-1"
    assert (case_dir / "tree" / "mylib" / "__init__.py").read_text() == LIB
    assert not (case_dir / "tree" / ".git").exists()
    text = (case_dir / "case.yaml").read_text()
    assert "not verified to be that commit" in text.splitlines()[1]  # the header comment says so too

    project_cases = discover(project / "cases")
    assert project_cases.problems == []
    (case,) = project_cases.cases
    assert case.inputs.source_dir == "tree" and case.inputs.repo is None
    assert case.inputs.base_commit == BASE
    assert UNVERIFIED_TAG in case.tags
    assert "(tree: folder mylib-0.1, not verified to be base_commit 0123456789ab)" in case.description
    assert case.ref_path("inputs.source_dir") == (case_dir / "tree").resolve()


def test_tree_wins_over_a_repo_mapping_and_reimport_replaces_the_copy(tmp_path: Path) -> None:
    folder = plain_folder(tmp_path)
    project = tmp_path / "proj"
    write_rows(project, row())
    args = ("import", "swebench", "instances.jsonl", "--repo", "acme/mylib=https://example.invalid/m.git",
            "--tree", f"acme__mylib-1={folder}", "--suite-dir", "cases/swe")
    assert evalkit(*args, cwd=project).returncode == 0
    (folder / "mylib" / "extra.py").write_text("X = 1\n")
    (project / "cases" / "swe" / "acme__mylib-1" / "tree" / "stale.txt").write_text("old\n")
    assert evalkit(*args, cwd=project).returncode == 0
    tree = project / "cases" / "swe" / "acme__mylib-1" / "tree"
    assert (tree / "mylib" / "extra.py").exists() and not (tree / "stale.txt").exists()
    (case,) = discover(project / "cases").cases
    assert case.inputs.source_dir == "tree" and case.inputs.repo is None


def test_a_folder_the_patches_do_not_apply_to_is_refused(tmp_path: Path) -> None:
    other = plain_folder(tmp_path, lib=LIB.replace("max(lo, x)", "min(hi, max(lo, x))"))  # already fixed
    project = tmp_path / "proj"
    write_rows(project, row())
    proc = evalkit("import", "swebench", "instances.jsonl", "--tree", f"acme__mylib-1={other}",
                   "--suite-dir", "cases/swe", cwd=project)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--tree: acme__mylib-1: the gold patch does not apply to" in proc.stderr
    assert "mylib/__init__.py" in proc.stderr
    assert "the test patch does not apply" not in proc.stderr
    assert not (project / "cases").exists()  # nothing written


def test_bad_tree_options(tmp_path: Path) -> None:
    folder = plain_folder(tmp_path)
    project = tmp_path / "proj"
    write_rows(project, row())
    proc = evalkit("import", "swebench", "instances.jsonl", "--tree", f"nobody-1={folder}", "--suite-dir", "s", cwd=project)
    assert proc.returncode == 2 and "--tree: nobody-1: no row with that instance_id in instances.jsonl" in proc.stderr
    with pytest.raises(InputError) as exc:
        parse_tree_map(["no-equals", f"a={tmp_path / 'missing'}", f"b={folder}", f"b={folder}"])
    messages = [p.message for p in exc.value.problems]
    assert messages[0] == "'no-equals': expected INSTANCE_ID=DIR"
    assert "is not a folder" in messages[1]
    assert "a second folder for b" in messages[2]


def test_ids_cut_at_a_space_are_not_warned_about_at_import(tmp_path: Path) -> None:
    # the grader matches an id cut at a space to the test it names (gold resolves pydicom-1413); only a
    # validation whose gold fails on such an id that matched nothing says so
    folder = plain_folder(tmp_path)
    project = tmp_path / "proj"
    cut = "tests/test_lib.py::test_fail[custom-Custom"
    path = write_rows(project, row(PASS_TO_PASS=["tests/test_lib.py::test_double", cut, "tests/test_x.py::t[a b]"]))
    assert cut_test_ids(load_rows(path)[0]) == [cut]
    proc = evalkit("import", "swebench", "instances.jsonl", "--tree", f"acme__mylib-1={folder}",
                   "--suite-dir", "cases/swe", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "look cut" not in proc.stderr and "warning" not in proc.stderr


def test_tree_case_runs_gold_resolves_empty_does_not(tmp_path: Path) -> None:
    folder = plain_folder(tmp_path)
    project = tmp_path / "proj"
    write_rows(project, row())
    proc = evalkit("import", "swebench", "instances.jsonl", "--tree", f"acme__mylib-1={folder}",
                   "--suite-dir", "cases/swe", cwd=project)
    assert proc.returncode == 0, proc.stderr
    import shutil

    shutil.copytree(REPO / "templates", project / "templates")
    for case_yaml in (project / "cases" / "swe").glob("*/case.yaml"):  # the run's pytest without the host's
        without_plugin_autoload(case_yaml)  # installed plug-ins (helpers.py): 3 s of CPU less per run
    (project / "evalkit.yaml").write_text(textwrap.dedent("""\
        release: r1
        templates_dir: templates
        baseline: empty
        systems:
          - {name: empty, adapter: empty}
          - {name: gold, adapter: gold}
        sandbox: {backend: local}
        """))
    proc = evalkit("run", cwd=tmp_path, env={"EVALKIT_CONFIG": str(project / "evalkit.yaml")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    work = project / ".evalkit"
    assert json.loads((work / "validation" / "swe" / "acme__mylib-1.json").read_text())["status"] == "valid"

    def run_of(system: str) -> dict:
        art = json.loads((work / "artifacts" / system / "swe" / "acme__mylib-1" / "execution.json").read_text())
        assert art["status"] == "ok", art
        return art["runs"][0]

    gold, empty = run_of("gold"), run_of("empty")
    assert gold["resolved"] is True and gold["fail_to_pass"] == {"tests/test_lib.py::test_clamp_high": "passed"}
    assert empty["resolved"] is False and empty["fail_to_pass"] == {"tests/test_lib.py::test_clamp_high": "failed"}
    assert folder.joinpath("mylib", "__init__.py").read_text() == LIB  # the user's folder is never touched
