"""`evalkit import swebench` on SWE-bench 5.x rows (JSONL and the dataset's parquet), duplicate rows
(identical: a warning; conflicting: an error naming both places), and portability: a suite imported
in one folder runs from another, its repository mapped at run time with `--repo owner/name=DIR`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from evalkit.casemodels import PatchInputs
from evalkit.cases import discover
from evalkit.importers.swebench import load_rows
from helpers import REALDATA, evalkit_at, realdata

REPO = Path(__file__).resolve().parents[2]
LITE_DEV = REALDATA / "swebench" / "offline_candidates_lite_dev.json"

LIB = "def clamp(x, lo, hi):\n    return max(lo, x)\n"
FIX = """diff --git a/mylib/__init__.py b/mylib/__init__.py
--- a/mylib/__init__.py
+++ b/mylib/__init__.py
@@ -1,2 +1,2 @@
 def clamp(x, lo, hi):
-    return max(lo, x)
+    return min(hi, max(lo, x))
"""
OLD_TESTS = "from mylib import clamp\n\n\ndef test_clamp_low():\n    assert clamp(-1, 0, 5) == 0\n"
TEST_PATCH = """diff --git a/tests/test_lib.py b/tests/test_lib.py
--- a/tests/test_lib.py
+++ b/tests/test_lib.py
@@ -3,3 +3,7 @@ from mylib import clamp
 
 def test_clamp_low():
     assert clamp(-1, 0, 5) == 0
+
+
+def test_clamp_high():
+    assert clamp(9, 0, 5) == 5
"""


def evalkit(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    for var in ("EVALKIT_RELEASE", "EVALKIT_REPOS", "EVALKIT_REPOS_DIR"):
        full.pop(var, None)
    full.update(env or {})
    return evalkit_at(list(args), cwd, full, timeout=600)


def row5(iid: str = "acme__mylib-1", **change) -> dict:
    """A SWE-bench 5.x row: the 4.x fields plus image, eval_script, log_parser and eval_type."""
    return {"instance_id": iid, "repo": "acme/mylib", "base_commit": "0" * 40, "version": "0.1",
            "problem_statement": "clamp ignores hi", "patch": FIX, "test_patch": TEST_PATCH,
            "FAIL_TO_PASS": json.dumps(["tests/test_lib.py::test_clamp_high"]),
            "PASS_TO_PASS": json.dumps(["tests/test_lib.py::test_clamp_low"]),
            "image": f"swebench/sweb.eval.x86_64.{iid.replace('__', '_1776_')}:latest",
            "eval_script": "#!/bin/bash\nset -uxo pipefail\ncd /testbed\npytest -rA tests/test_lib.py\n",
            "log_parser": "parse_log_pytest", "eval_type": "pytest", "created_at": "2024-01-01T00:00:00Z", **change}


def carried(project: Path, iid: str) -> PatchInputs:
    (case,) = [c for c in discover(project / "cases").cases if c.id == iid]
    assert case.ok, case.problems
    return case.inputs_as(PatchInputs)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "json"])
def test_v5_rows_carry_their_fields(tmp_path: Path, fmt: str) -> None:
    rows = [row5("acme__mylib-1"), row5("acme__mylib-2", eval_type="pytest-nodeid")]
    src = tmp_path / f"rows.{fmt}"
    if fmt == "jsonl":
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "json":
        src.write_text(json.dumps(rows, indent=2))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), src)
    loaded = load_rows(src)
    assert [r.instance_id for r in loaded] == ["acme__mylib-1", "acme__mylib-2"]
    assert loaded[1].eval_type == "pytest-nodeid" and loaded[0].log_parser == "parse_log_pytest"
    proc = evalkit("import", "swebench", str(src), "--repo", "acme/mylib=https://example.invalid/m.git",
                   "--suite-dir", "cases/swe", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 2 case(s)" in proc.stdout and "warning" not in proc.stderr
    inputs = carried(tmp_path, "acme__mylib-2")
    assert inputs.repo == "acme/mylib"  # by name, never the URL or a host path
    assert inputs.log_parser == "parse_log_pytest" and inputs.eval_type == "pytest-nodeid"
    assert inputs.eval_script_file is not None
    assert (tmp_path / "cases/swe/acme__mylib-2" / inputs.eval_script_file).read_text() == rows[1]["eval_script"]
    # with the official images the row's image and eval script make the run
    proc = evalkit("import", "swebench", str(src), "--tree-in-image", "--suite-dir", "cases/official", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (case,) = [c for c in discover(tmp_path / "cases").cases if c.suite == "official" and c.id == "acme__mylib-1"]
    assert case.inputs.image == rows[0]["image"] and case.inputs.tree_in_image == "/testbed"
    assert case.inputs.test_command == 'bash "$EVALKIT_EVAL_SCRIPT"'
    assert case.read("inputs.eval_script_file") == rows[0]["eval_script"]


def test_duplicates_identical_warn_conflicting_fail_naming_both_lines(tmp_path: Path) -> None:
    src = tmp_path / "rows.jsonl"
    a, b = row5("acme__mylib-1"), row5("acme__mylib-2")
    src.write_text("".join(json.dumps(r) + "\n" for r in (a, b, a)))
    proc = evalkit("import", "swebench", str(src), "--repo", "acme/mylib=https://example.invalid/m.git",
                   "--suite-dir", "s", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {src}:3: row acme__mylib-1 repeats {src}:1 identically; imported once" in proc.stderr
    assert "wrote 2 case(s)" in proc.stdout

    src.write_text("".join(json.dumps(r) + "\n" for r in (a, b, {**a, "base_commit": "1" * 40})))
    proc = evalkit("import", "swebench", str(src), "--repo", "acme/mylib=https://example.invalid/m.git",
                   "--suite-dir", "s2", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert (f"{src}:3: instance_id 'acme__mylib-1' at {src}:3 conflicts with the row at {src}:1 "
            "(they differ in base_commit)") in proc.stderr
    assert not (tmp_path / "s2").exists()  # nothing written

    # a JSON list names the line each row starts on
    listed = tmp_path / "rows.json"
    listed.write_text(json.dumps([a, b, {**a, "patch": FIX + "\n"}], indent=1))
    starts = [n for n, line in enumerate(listed.read_text().splitlines(), 1) if line == " {"]
    proc = evalkit("import", "swebench", str(listed), "--suite-dir", "s3", cwd=tmp_path)
    assert proc.returncode == 2
    assert f"at {listed}:{starts[2]} conflicts with the row at {listed}:{starts[0]} (they differ in patch)" in proc.stderr


def test_real_duplicate_row_is_a_warning(tmp_path: Path) -> None:
    realdata("swebench", "offline_candidates_lite_dev.json")
    rows = json.loads(LITE_DEV.read_text())
    src = tmp_path / "lite.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in [*rows, rows[2]]))
    proc = evalkit("import", "swebench", str(src), "--repo", "pydicom/pydicom=https://example.invalid/p.git",
                   "--suite-dir", "s", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"{src}:{len(rows) + 1}: row {rows[2]['instance_id']} repeats {src}:3 identically" in proc.stderr
    # the cut-id warning is gone: the grader matches ids cut at a space (gold resolves pydicom-1413)
    assert "look cut" not in proc.stderr


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_imported_suite_runs_from_another_folder(tmp_path: Path) -> None:
    # the repository, as cloned on the importing machine
    origin = tmp_path / "machine-a" / "clones" / "mylib"
    (origin / "mylib").mkdir(parents=True)
    (origin / "tests").mkdir()
    (origin / "mylib" / "__init__.py").write_text(LIB)
    (origin / "tests" / "test_lib.py").write_text(OLD_TESTS)
    git(origin, "init", "-q")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "base")
    base = git(origin, "rev-parse", "HEAD")
    a = tmp_path / "machine-a" / "proj"
    a.mkdir(parents=True)
    (a / "rows.jsonl").write_text(json.dumps(row5(base_commit=base)) + "\n")
    proc = evalkit("import", "swebench", "rows.jsonl", "--repo", f"acme/mylib={origin}", "--suite-dir", "cases/swe", cwd=a)
    assert proc.returncode == 0, proc.stderr
    text = "".join(p.read_text() for p in (a / "cases").rglob("*") if p.is_file())
    assert str(tmp_path) not in text  # no host path of machine A in the suite

    # machine B: the suite copied elsewhere, the repository cloned at another path
    b = tmp_path / "machine-b" / "eval"
    shutil.copytree(a / "cases", b / "cases")
    shutil.copytree(REPO / "templates", b / "templates")
    clone = tmp_path / "machine-b" / "src" / "acme__mylib"
    clone.parent.mkdir(parents=True)
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    shutil.rmtree(origin.parent)  # machine A's clone is gone
    (b / "evalkit.yaml").write_text(textwrap.dedent("""\
        release: r1
        templates_dir: templates
        baseline: empty
        systems:
          - {name: empty, adapter: empty}
          - {name: gold, adapter: gold}
        sandbox: {backend: local}
        """))
    env = {"EVALKIT_CONFIG": str(b / "evalkit.yaml")}
    # not mapped: an infrastructure error that says how to map it (and is retried next run)
    proc = evalkit("run", cwd=tmp_path, env=env)
    assert proc.returncode == 5, proc.stdout + proc.stderr  # was exit 0 with "–" and no word of why (issue 27)
    assert "infrastructure error" in proc.stderr and "not mapped" in proc.stderr
    validation = json.loads((b / ".evalkit" / "validation" / "swe" / "acme__mylib-1.json").read_text())
    assert validation["status"] == "infra_error", validation
    assert "repository acme/mylib is not mapped on this machine: give `--repo acme/mylib=DIR`" in validation["reason"]

    proc = evalkit("run", "--repo", f"acme/mylib={clone}", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    validation = json.loads((b / ".evalkit" / "validation" / "swe" / "acme__mylib-1.json").read_text())
    assert validation["status"] == "valid", validation
    runs = {s: json.loads((b / ".evalkit" / "artifacts" / s / "swe" / "acme__mylib-1" / "execution.json").read_text())
            for s in ("gold", "empty")}
    assert runs["gold"]["runs"][0]["resolved"] is True
    assert runs["empty"]["runs"][0]["resolved"] is False

    # a folder of clones (sandbox.repos_dir / EVALKIT_REPOS_DIR) finds `owner__name` too
    from evalkit.config import Config
    from evalkit.stages.execute import resolve_repo

    cfg = Config.model_validate({"release": "r1", "systems": [{"name": "gold", "adapter": "gold"}],
                                 "sandbox": {"repos_dir": str(clone.parent)}})
    assert resolve_repo(cfg, "acme/mylib") == str(clone)
    assert resolve_repo(cfg, "https://example.invalid/x.git") == "https://example.invalid/x.git"
