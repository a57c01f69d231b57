"""`evalkit import swebench`: real SWE-bench Lite rows, bad input, and an end-to-end run on a local repo."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from evalkit.cases import discover
from helpers import REALDATA, evalkit_at, without_plugin_autoload
from evalkit.importers.swebench import command_for, load_rows, normalize_text, touched_test_files
from evalkit.yamlio import load_yaml, plain

REPO = Path(__file__).resolve().parents[2]
REAL = REALDATA / "swebench"
LITE_DEV = REAL / "offline_candidates_lite_dev.json"
needs_real = pytest.mark.realdata("swebench", "offline_candidates_lite_dev.json")


def evalkit(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("EVALKIT_RELEASE", None)
    return evalkit_at(list(args), cwd, full_env)


# ---- real SWE-bench Lite rows (no clone of their repositories exists here) ---------------------

@needs_real
def test_real_lite_rows_become_a_valid_patch_suite(tmp_path: Path) -> None:
    rows = json.loads(LITE_DEV.read_text())
    proc = evalkit("import", "swebench", str(LITE_DEV), "--repo", "marshmallow-code/marshmallow=https://example.invalid/m.git",
                   "--repo", "pydicom/pydicom=https://example.invalid/p.git", "--suite-dir", "cases/swe", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 7 case(s)" in proc.stdout
    suite = tmp_path / "cases" / "swe"
    spec = plain(load_yaml(suite / "suite.yaml"))
    assert spec["kind"] == "patch" and spec["language"] == "python"

    project = discover(tmp_path / "cases")
    assert project.problems == []
    cases = {c.id: c for c in project.cases}
    assert sorted(cases) == sorted(r["instance_id"] for r in rows)
    for row in rows:
        case = cases[row["instance_id"]]
        assert case.kind == "patch" and case.ok
        # FAIL_TO_PASS / PASS_TO_PASS arrive as JSON-encoded strings and become lists
        assert case.reference.fail_to_pass == json.loads(row["FAIL_TO_PASS"])
        assert case.reference.pass_to_pass == json.loads(row["PASS_TO_PASS"])
        assert case.inputs.base_commit == row["base_commit"]
        assert case.inputs.problem_statement == normalize_text(row["problem_statement"])
        assert case.read("reference.patch_file") == row["patch"]
        assert case.read("inputs.test_patch_file") == row["test_patch"]
        # the test files the test patch touches are the ones the row's metadata names
        assert touched_test_files(row["test_patch"]) == row["test_patch_files"]
        assert case.inputs.test_command == "python3 -m pytest -rA -p no:cacheprovider " + " ".join(row["test_patch_files"])
    assert cases["pydicom__pydicom-1139"].reference.fail_to_pass == [
        "pydicom/tests/test_valuerep.py::TestPersonName::test_next",
        "pydicom/tests/test_valuerep.py::TestPersonName::test_iterator",
        "pydicom/tests/test_valuerep.py::TestPersonName::test_contains"]
    assert cases["pydicom__pydicom-901"].reference.pass_to_pass == []
    # the repository is recorded by name (portable); the run maps it (evalkit run --repo, sandbox.repos)
    assert cases["marshmallow-code__marshmallow-1359"].inputs.repo == "marshmallow-code/marshmallow"


@needs_real
def test_unmapped_repos_are_skipped_by_name(tmp_path: Path) -> None:
    clone = tmp_path / "marshmallow"
    clone.mkdir()
    proc = evalkit("import", "swebench", str(LITE_DEV), "--repo", f"marshmallow-code/marshmallow={clone}",
                   "--suite-dir", str(tmp_path / "s"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 2 case(s)" in proc.stdout
    assert "skipped 5 instance(s) of pydicom/pydicom" in proc.stderr
    for iid in ("pydicom__pydicom-1694", "pydicom__pydicom-1413", "pydicom__pydicom-901", "pydicom__pydicom-1139",
                "pydicom__pydicom-1256"):
        assert iid in proc.stderr
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [
        "marshmallow-code__marshmallow-1343", "marshmallow-code__marshmallow-1359", "suite.yaml"]
    case = plain(load_yaml(tmp_path / "s" / "marshmallow-code__marshmallow-1359" / "case.yaml"))
    assert case["inputs"]["repo"] == "marshmallow-code/marshmallow"  # never a host path: the suite is portable


def test_lists_as_real_lists_and_options(tmp_path: Path) -> None:
    row = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "patch": "p", "version": "1.0",
           "test_patch": "diff --git a/t/test_a.py b/t/test_a.py\n--- a/t/test_a.py\n+++ b/t/test_a.py\n"
                         "diff --git a/t/data.json b/t/data.json\n--- a/t/data.json\n+++ b/t/data.json\n"
                         "diff --git a/t/test_old.py b/t/test_old.py\n--- a/t/test_old.py\n+++ /dev/null\n",
           "FAIL_TO_PASS": ["t/test_a.py::test_x"], "PASS_TO_PASS": []}
    src = tmp_path / "rows.jsonl"
    src.write_text(json.dumps(row) + "\n")
    (rows,) = load_rows(src)
    assert rows.fail_to_pass == ["t/test_a.py::test_x"] and rows.line == 1
    assert command_for(rows) == "python3 -m pytest -rA -p no:cacheprovider t/test_a.py"
    proc = evalkit("import", "swebench", str(src), "--repo", "o/r=git@example.invalid:o/r.git", "--suite-dir", "s",
                   "--image", "my/image:1", "--test-command", "pytest -x", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    project = discover(tmp_path)
    (case,) = project.cases
    assert case.ok, case.problems
    assert case.inputs.image == "my/image:1"
    assert case.inputs.test_command == "pytest -x t/test_a.py"
    assert "problem_statement" not in plain(load_yaml(tmp_path / "s" / "o__r-1" / "case.yaml"))["inputs"]


# ---- bad input: file (and line), exit 2, no traceback -----------------------------------------

GOOD = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "patch": "p", "test_patch": "t",
        "FAIL_TO_PASS": "[\"a::b\"]", "PASS_TO_PASS": "[]"}


def _bad(tmp_path: Path, name: str, text: str | None, *extra: str) -> subprocess.CompletedProcess[str]:
    src = tmp_path / name
    if text is not None:
        src.write_text(text)
    proc = evalkit("import", "swebench", str(src), "--repo", f"o/r={tmp_path}", "--suite-dir", str(tmp_path / "s"),
                   *extra, cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "s").exists(), "nothing is written from a bad file"
    return proc


def test_missing_file(tmp_path: Path) -> None:
    proc = _bad(tmp_path, "nope.jsonl", None)
    assert f"{tmp_path / 'nope.jsonl'}: file not found" in proc.stderr


def test_malformed_jsonl_names_the_line(tmp_path: Path) -> None:
    proc = _bad(tmp_path, "rows.jsonl", json.dumps(GOOD) + "\n\n{\"instance_id\": \"x\",\n")
    assert f"{tmp_path / 'rows.jsonl'}:3: malformed JSON" in proc.stderr


def test_malformed_json_list_names_the_line(tmp_path: Path) -> None:
    proc = _bad(tmp_path, "rows.json", "[\n" + json.dumps(GOOD) + ",\n  {oops}\n]\n")
    assert f"{tmp_path / 'rows.json'}:3: malformed JSON" in proc.stderr


def test_row_missing_a_field(tmp_path: Path) -> None:
    row = {k: v for k, v in GOOD.items() if k != "test_patch"}
    proc = _bad(tmp_path, "rows.jsonl", json.dumps(GOOD) + "\n" + json.dumps({**row, "instance_id": "o__r-2"}) + "\n")
    assert f"{tmp_path / 'rows.jsonl'}:2: row 2 (o__r-2): missing field(s) test_patch" in proc.stderr


@pytest.mark.parametrize("change, expected", [
    ({"FAIL_TO_PASS": "not json"}, "FAIL_TO_PASS must be a list of test ids"),
    ({"PASS_TO_PASS": [1, 2]}, "PASS_TO_PASS must be a list of test ids"),
    ({"FAIL_TO_PASS": "[]"}, "FAIL_TO_PASS is empty"),
    ({"instance_id": "../escape"}, "cannot be a case id"),
    ({"base_commit": ""}, "base_commit must be a non-empty string"),
])
def test_bad_row_values(tmp_path: Path, change: dict, expected: str) -> None:
    proc = _bad(tmp_path, "rows.json", json.dumps([{**GOOD, **change}], indent=1))
    assert f"{tmp_path / 'rows.json'}:2: row 1" in proc.stderr and expected in proc.stderr  # where the row starts


def test_duplicate_ids_and_bad_repo_option(tmp_path: Path) -> None:
    # an identical duplicate is a warning (tests/importers/test_swebench_rows5.py); a conflicting one names both lines
    proc = _bad(tmp_path, "rows.jsonl", json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "base_commit": "abd"}) + "\n")
    assert (f"rows.jsonl:2: instance_id 'o__r-1' at {tmp_path / 'rows.jsonl'}:2 conflicts with the row at "
            f"{tmp_path / 'rows.jsonl'}:1 (they differ in base_commit)") in proc.stderr
    (tmp_path / "ok.jsonl").write_text(json.dumps(GOOD) + "\n")
    proc = evalkit("import", "swebench", str(tmp_path / "ok.jsonl"), "--repo", "o/r", "--suite-dir", "s", cwd=tmp_path)
    assert proc.returncode == 2 and "--repo: 'o/r': expected OWNER/NAME=PATH_OR_URL" in proc.stderr
    proc = evalkit("import", "swebench", str(tmp_path / "ok.jsonl"), "--repo", "o/r=./missing", "--suite-dir", "s",
                   cwd=tmp_path)
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "Traceback" not in proc.stderr


# ---- predictions JSONL as a recorded system ---------------------------------------------------

def _case(case_id: str):
    from evalkit.cases import Case

    return Case(suite="swe", id=case_id, kind="patch", language="python", path="x", dir="x", files=[])


@pytest.mark.realdata("swebench", "sweagent_test_data", "all_preds.jsonl")
def test_real_sweagent_predictions_load_as_recorded(tmp_path: Path) -> None:
    from evalkit.config import RecordedSystem
    from evalkit.systems.base import RunContext
    from evalkit.systems.recorded import recorded

    preds = REAL / "sweagent_test_data" / "all_preds.jsonl"
    row = json.loads(preds.read_text().splitlines()[0])
    ctx = RunContext(root=tmp_path, work=tmp_path)
    system = RecordedSystem(name="swe-agent", adapter="recorded", path=str(preds))
    sample = recorded(system, _case("pydicom__pydicom-1458"), 0, ctx)
    assert sample.status == "ok" and sample.patch == row["model_patch"]
    assert "numpy_handler.py" in sample.patch
    missing = recorded(system, _case("pydicom__pydicom-1"), 0, ctx)
    # no prediction for a case: not attempted (coverage), not the system's failure
    assert missing.status == "not_attempted" and "no prediction for pydicom__pydicom-1 in all_preds.jsonl" in missing.reason
    picky = RecordedSystem(name="other", adapter="recorded", path=str(preds), model_name="someone-else")
    assert recorded(picky, _case("pydicom__pydicom-1458"), 0, ctx).status == "not_attempted"
    same = RecordedSystem(name="same", adapter="recorded", path=str(preds), model_name=row["model_name_or_path"])
    assert recorded(same, _case("pydicom__pydicom-1458"), 0, ctx).patch == row["model_patch"]


# ---- end to end: synthetic SWE-bench rows over a local git repository ------------------------

LIB = "def clamp(x, lo, hi):\n    return max(lo, x)\n\n\ndef double(x):\n    return 2 * x\n"
OLD_TESTS = "from mylib import clamp, double\n\n\ndef test_double():\n    assert double(3) == 6\n\n\ndef test_clamp_low():\n    assert clamp(-1, 0, 5) == 0\n"
FIX = ("diff --git a/mylib/__init__.py b/mylib/__init__.py\n--- a/mylib/__init__.py\n+++ b/mylib/__init__.py\n"
       "@@ -1,5 +1,5 @@\n def clamp(x, lo, hi):\n-    return max(lo, x)\n+    return min(hi, max(lo, x))\n \n \n def double(x):\n")
BREAKS = ("diff --git a/mylib/__init__.py b/mylib/__init__.py\n--- a/mylib/__init__.py\n+++ b/mylib/__init__.py\n"
          "@@ -1,5 +1,5 @@\n def clamp(x, lo, hi):\n-    return max(lo, x)\n+    return hi\n \n \n def double(x):\n")
TEST_PATCH = ("diff --git a/tests/test_lib.py b/tests/test_lib.py\n--- a/tests/test_lib.py\n+++ b/tests/test_lib.py\n"
              "@@ -7,3 +7,7 @@ def test_double():\n \n def test_clamp_low():\n     assert clamp(-1, 0, 5) == 0\n+\n+\n"
              "+def test_clamp_high():\n+    assert clamp(9, 0, 5) == 5\n")


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@invalid", "-c", "init.defaultBranch=main",
                           "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout.strip()


def local_repo(root: Path) -> tuple[Path, str]:
    """A git repo whose clamp() ignores its upper bound; a later commit (not the base) fixes it."""
    repo = root / "upstream"
    (repo / "mylib").mkdir(parents=True)
    (repo / "tests").mkdir()
    git(repo.parent, "init", "-q", str(repo))
    (repo / "mylib" / "__init__.py").write_text(LIB)
    (repo / "tests" / "test_lib.py").write_text(OLD_TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "buggy clamp")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "mylib" / "__init__.py").write_text(LIB.replace("max(lo, x)", "min(hi, max(lo, x))"))
    git(repo, "commit", "-q", "-am", "fix (HEAD differs from base_commit)")
    return repo, base


def test_import_then_run_gold_resolves_empty_does_not(tmp_path: Path) -> None:
    repo, base = local_repo(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    row = {"instance_id": "acme__mylib-1", "repo": "acme/mylib", "base_commit": base, "version": "0.1",
           "problem_statement": "clamp(9, 0, 5) returns 9.\r\nIt must respect the upper bound.\r\n",
           "patch": FIX, "test_patch": TEST_PATCH,
           "FAIL_TO_PASS": json.dumps(["tests/test_lib.py::test_clamp_high"]),
           "PASS_TO_PASS": json.dumps(["tests/test_lib.py::test_double", "tests/test_lib.py::test_clamp_low"])}
    (project / "instances.jsonl").write_text(json.dumps(row) + "\n")
    preds = [{"instance_id": "acme__mylib-1", "model_name_or_path": "bot", "model_patch": BREAKS}]
    (project / "preds.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
    proc = evalkit("import", "swebench", "instances.jsonl", "--repo", f"acme/mylib={repo}", "--suite-dir", "cases/swe",
                   cwd=project)
    assert proc.returncode == 0, proc.stderr
    shutil_templates(project)
    for case_yaml in (project / "cases" / "swe").glob("*/case.yaml"):  # the run's pytest without the host's
        without_plugin_autoload(case_yaml)  # installed plug-ins (helpers.py): 3 s of CPU less per run
    (project / "evalkit.yaml").write_text(textwrap.dedent("""\
        release: r1
        templates_dir: templates
        baseline: empty
        systems:
          - {name: empty, adapter: empty}
          - {name: gold, adapter: gold}
          - {name: bot, adapter: recorded, path: preds.jsonl}
        sandbox: {backend: local}
        """))
    env = {"EVALKIT_CONFIG": str(project / "evalkit.yaml")}
    proc = evalkit("run", "--repo", f"acme/mylib={repo}", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    work = project / ".evalkit"
    validation = json.loads((work / "validation" / "swe" / "acme__mylib-1.json").read_text())
    assert validation["status"] == "valid", validation

    def run_of(system: str) -> dict:
        art = json.loads((work / "artifacts" / system / "swe" / "acme__mylib-1" / "execution.json").read_text())
        assert art["status"] == "ok", art
        return art["runs"][0]

    gold, empty, bot = run_of("gold"), run_of("empty"), run_of("bot")
    assert gold["resolved"] is True and gold["fail_to_pass"] == {"tests/test_lib.py::test_clamp_high": "passed"}
    assert empty["resolved"] is False and empty["fail_to_pass"] == {"tests/test_lib.py::test_clamp_high": "failed"}
    assert bot["resolved"] is False and bot["patch_applied"] is True
    assert bot["pass_to_pass"]["tests/test_lib.py::test_clamp_low"] == "failed"

    # SWE-bench report.json of each system, from the artifacts
    out = {}
    for system in ("gold", "empty", "bot"):
        proc = evalkit("swebench-report", "--system", system, "--out", str(tmp_path / f"{system}.json"), cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        out[system] = json.loads((tmp_path / f"{system}.json").read_text())["acme__mylib-1"]
    assert out["gold"] == {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True,
                           "resolved": True, "tests_status": {
                               "FAIL_TO_PASS": {"success": ["tests/test_lib.py::test_clamp_high"], "failure": []},
                               "PASS_TO_PASS": {"success": ["tests/test_lib.py::test_clamp_low", "tests/test_lib.py::test_double"],
                                                "failure": []},
                               "FAIL_TO_FAIL": {"success": [], "failure": []},
                               "PASS_TO_FAIL": {"success": [], "failure": []}}, "infra_failure": False}
    assert out["empty"] == {"patch_is_None": True, "patch_exists": False, "patch_successfully_applied": False,
                            "resolved": False, "infra_failure": False}
    assert out["bot"]["resolved"] is False and out["bot"]["patch_successfully_applied"] is True
    assert out["bot"]["tests_status"]["PASS_TO_PASS"]["failure"] == ["tests/test_lib.py::test_clamp_low"]

    # re-grading the saved logs without a sandbox gives the same verdicts
    from evalkit.importers.swebench_report import regrade_from_log

    for run in (gold, empty, bot):
        again = regrade_from_log(run["log"], ["tests/test_lib.py::test_clamp_high"],
                                 ["tests/test_lib.py::test_double", "tests/test_lib.py::test_clamp_low"])
        assert (again.resolved, again.fail_to_pass, again.pass_to_pass) == (run["resolved"], run["fail_to_pass"], run["pass_to_pass"])

    proc = evalkit("swebench-report", "--system", "nobody", "--out", str(tmp_path / "x.json"), cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "no system 'nobody'" in proc.stderr and "Traceback" not in proc.stderr


def shutil_templates(project: Path) -> None:
    import shutil

    shutil.copytree(REPO / "templates", project / "templates")
