"""A broken environment costs once: a patch case whose tests hang times out with the gold patch and
with no patch in validation; the case is broken once, the systems' execute stage records `broken`
from the validation without starting a container, the timed-out runs keep what they printed
before the kill, and a rerun (even with the validation gone) starts no container: timeouts are
content-addressed like any run."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from evalkit.sandbox import SandboxLimits, TestRunSpec, run_tests
from helpers import REPO, evalkit

HANG_TESTS = '''import sys
import time

from calc import add


def test_add():
    print("BEFORE-THE-HANG: importing the missing dependency", flush=True)
    sys.stdout.flush()
    time.sleep(600)
    assert add(2, 3) == 5
'''
FIX = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""
OTHER = FIX.replace("return a + b", "return b + a")


def sandbox_creations(since: float, image_id: str) -> int:
    """Containers evalkit's sandbox created from ``image_id`` since ``since`` (Docker's own event log;
    the image is this test's own, so sandboxes of anything else running on the engine do not count)."""
    proc = subprocess.run(["docker", "events", "--since", f"{since:.3f}", "--until", f"{time.time():.3f}",
                           "--filter", "type=container", "--filter", "event=create", "--filter", f"image={image_id}",
                           "--filter", "label=evalkit.sandbox=1", "--format", "{{.ID}}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return len(proc.stdout.split())


@pytest.fixture
def own_image(docker_engine: str, tmp_path: Path):
    """An image of this test's own (the sandbox image plus a label: a new id, built without network)."""
    tag = f"evalkit-test/timeout-once:{uuid.uuid4().hex[:12]}"
    ctx = tmp_path / "image"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(f"FROM {docker_engine}\nLABEL evalkit.test={tag.rsplit(':', 1)[1]}\n")
    subprocess.run(["docker", "build", "-q", "-t", tag, str(ctx)], check=True, capture_output=True, text=True, timeout=300)
    image_id = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", tag], check=True,
                              capture_output=True, text=True).stdout.strip()
    yield tag, image_id
    subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


def hanging_project(root: Path, image: str) -> Path:
    case = root / "cases" / "env" / "hangs"
    (case / "tree" / "tests").mkdir(parents=True)
    (case / "tree" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (case / "tree" / "tests" / "test_calc.py").write_text(HANG_TESTS)
    (case / "gold.patch").write_text(FIX)
    (root / "cases" / "env" / "suite.yaml").write_text("kind: patch\nlanguage: python\n")
    (case / "case.yaml").write_text(textwrap.dedent("""\
        id: hangs
        inputs:
          source_dir: tree
          test_command: python3 -m pytest -rA -s -p no:cacheprovider tests
          timeout_s: 4
          image: {image}
        reference:
          patch_file: gold.patch
          fail_to_pass: [tests/test_calc.py::test_add]
        """).format(image=image))
    preds = [{"instance_id": "hangs", "model_name_or_path": n, "model_patch": p} for n, p in (("bot", FIX), ("bot2", OTHER))]
    for name, pred in zip(("bot", "bot2"), preds):
        (root / f"{name}.jsonl").write_text(json.dumps(pred) + "\n")
    shutil.copytree(REPO / "templates", root / "templates")
    (root / "evalkit.yaml").write_text(textwrap.dedent("""\
        release: r1
        templates_dir: templates
        baseline: empty
        systems:
          - {name: empty, adapter: empty}
          - {name: gold, adapter: gold}
          - {name: bot, adapter: recorded, path: bot.jsonl}
          - {name: bot2, adapter: recorded, path: bot2.jsonl}
        sandbox: {backend: docker}
        """))
    return root


def test_hanging_environment_is_broken_once(tmp_path: Path, own_image: tuple[str, str]) -> None:
    tag, image_id = own_image
    project = hanging_project(tmp_path / "proj", tag)
    t0 = time.time() - 1
    first = evalkit(project, "run", timeout=600, check=False)
    # its one case is broken: nothing was evaluated, which the exit status says (2, docs/guide/cli.md)
    assert first.returncode == 2 and "every case is broken" in first.stderr, first.stderr[-2000:]
    work = project / ".evalkit"
    validation = json.loads((work / "validation" / "env" / "hangs.json").read_text())
    assert validation["status"] == "broken" and validation["environment_broken"] is True, validation
    assert "time out with the gold patch and with no patch" in validation["reason"]
    for system in ("gold", "empty", "bot", "bot2"):
        art = json.loads((work / "artifacts" / system / "env" / "hangs" / "execution.json").read_text())
        assert art["status"] == "broken" and art["runs"] == [], (system, art)
        assert "harness validation: broken environment" in art["reason"]
        score = json.loads((work / "artifacts" / system / "env" / "hangs" / "scores.json").read_text())
        assert score["status"] == "broken"
    # two containers in all: gold and no patch in validation; none for any system
    assert sandbox_creations(t0, image_id) == 2
    # SWE-bench's report.json says so too: an environment failure, not an unresolved patch (#30)
    out = tmp_path / "swebench-report.json"
    evalkit(project, "swebench-report", "--system", "bot", "--out", str(out))
    entry = json.loads(out.read_text())["hangs"]
    assert entry["infra_failure"] is True and entry["resolved"] is False, entry
    assert "time out with the gold patch and with no patch" in entry["infra_failure_reason"]
    # the two timed-out runs are stored like any run, each with what it printed before the kill
    stored = [json.loads(p.read_text()) for p in (work / "cache" / "sandbox").rglob("*.json")]
    assert sorted(r["status"] for r in stored) == ["timeout", "timeout"]
    for run in stored:
        assert "BEFORE-THE-HANG: importing the missing dependency" in run["log"], run["log"][-2000:]
        assert "collected 1 item" in run["log"]

    # a rerun pays nothing: even with the validation gone, its two runs come from the store
    shutil.rmtree(work / "validation")
    t1 = time.time() - 1
    assert evalkit(project, "run", timeout=600, check=False).returncode == 2
    again = json.loads((work / "validation" / "env" / "hangs.json").read_text())
    assert again["status"] == "broken" and again["environment_broken"] is True
    assert sandbox_creations(t1, image_id) == 0


def test_local_backend_keeps_the_output_of_a_timed_out_run(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True)
    (tree / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tree / "tests" / "test_calc.py").write_text(HANG_TESTS)
    spec = TestRunSpec(image="unused", tree=str(tree), test_command="python3 -m pytest -rA -s -p no:cacheprovider tests",
                       fail_to_pass=["tests/test_calc.py::test_add"], limits=SandboxLimits(timeout_s=15))
    # 15 s: pytest's start must reach the test's first line before the kill, on a loaded machine too (4 s did not)
    result = run_tests(spec, "local")
    assert result.status == "timeout", result.reason
    assert "BEFORE-THE-HANG: importing the missing dependency" in result.log
    assert "running: python3 -m pytest" in result.log  # the runner's own lines too
