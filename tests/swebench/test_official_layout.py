"""SWE-bench's official environment-image layout, built here without a registry: the repository at
/testbed at its base commit, inside an image FROM evalkit's sandbox image. Cases imported with
`--tree-in-image` copy no tree in; the runner applies the patches at /testbed and the row's eval
script (5.x) or the harness-shaped one made for a 4.x row runs the tests. Gold resolves, no patch
does not, and a patch that plants a conftest.py is still refused as tampering."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import yaml
from zygote import python_m_evalkit

REPO = Path(__file__).resolve().parents[2]
BASE_IMAGE = os.environ.get("EVALKIT_SANDBOX_IMAGE", "evalkit/python-pytest:bookworm")
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
TAMPER = """diff --git a/tests/conftest.py b/tests/conftest.py
new file mode 100644
--- /dev/null
+++ b/tests/conftest.py
@@ -0,0 +1,2 @@
+def pytest_collection_modifyitems(items):
+    items.clear()
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def eval_script(base: str) -> str:
    """A 5.x row's eval script, in the shape the harness's rows carry."""
    return textwrap.dedent(f"""\
        #!/bin/bash
        set -uxo pipefail
        cd /testbed
        git checkout {base} tests/test_lib.py
        git apply -v - <<'EOF_114329324912'
        {{patch}}EOF_114329324912
        : '>>>>> Start Test Output'
        python3 -m pytest -rA -p no:cacheprovider tests/test_lib.py
        : '>>>>> End Test Output'
        git checkout {base} tests/test_lib.py
        """).replace("{patch}", TEST_PATCH)


def build_image(tmp: Path, tag: str) -> str:
    """An image FROM the sandbox image with a git repository at /testbed at its base commit."""
    ctx = tmp / f"ctx-{tag.replace('/', '_').replace(':', '_')}"
    testbed = ctx / "testbed"
    (testbed / "mylib").mkdir(parents=True)
    (testbed / "tests").mkdir()
    (testbed / "mylib" / "__init__.py").write_text(LIB)
    (testbed / "tests" / "test_lib.py").write_text(OLD_TESTS)
    git(testbed, "init", "-q")
    git(testbed, "add", "-A")
    git(testbed, "commit", "-q", "-m", "base")
    base = git(testbed, "rev-parse", "HEAD")
    (ctx / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nUSER root\nCOPY testbed /testbed\nWORKDIR /testbed\n")
    proc = subprocess.run(["docker", "build", "-q", "--pull=false", "-t", tag, str(ctx)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return base


def evalkit(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    full.pop("EVALKIT_RELEASE", None)
    return python_m_evalkit(list(args), cwd=cwd, env=full, timeout=900)


def test_official_layout_gold_resolves_empty_does_not(tmp_path: Path, docker_engine: str) -> None:
    # A 5.x row (its own image and eval script) and a 4.x row (SWE-bench's image name, under the
    # configured namespace; the eval script is made by the import).
    v5_image = "evalkit-test/official-layout-v5:latest"
    v4_image = "evalkit-ns/sweb.eval.x86_64.acme_1776_mylib-4:latest"
    base5 = build_image(tmp_path, v5_image)
    base4 = build_image(tmp_path, v4_image)
    try:
        project = tmp_path / "proj"
        project.mkdir()
        common = {"repo": "acme/mylib", "patch": FIX, "test_patch": TEST_PATCH, "version": "0.1",
                  "problem_statement": "clamp ignores its upper bound",
                  "FAIL_TO_PASS": json.dumps(["tests/test_lib.py::test_clamp_high"]),
                  "PASS_TO_PASS": json.dumps(["tests/test_lib.py::test_clamp_low"])}
        rows = [{**common, "instance_id": "acme__mylib-5", "base_commit": base5, "image": v5_image,
                 "eval_script": eval_script(base5), "eval_type": "pytest", "log_parser": "parse_log_pytest"},
                {**common, "instance_id": "acme__mylib-4", "base_commit": base4}]
        (project / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        preds = [{"instance_id": r["instance_id"], "model_name_or_path": "bot", "model_patch": FIX + TAMPER}
                 for r in rows]
        (project / "preds.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
        proc = evalkit("import", "swebench", "rows.jsonl", "--tree-in-image", "--suite-dir", "cases/swe", cwd=project)
        assert proc.returncode == 0, proc.stderr
        assert "wrote 2 case(s)" in proc.stdout
        case5 = yaml.safe_load((project / "cases/swe/acme__mylib-5/case.yaml").read_text())["inputs"]
        case4 = yaml.safe_load((project / "cases/swe/acme__mylib-4/case.yaml").read_text())["inputs"]
        assert case5["tree_in_image"] == "/testbed" and case5["image"] == v5_image
        assert case5["log_parser"] == "parse_log_pytest" and case5["eval_type"] == "pytest"
        assert (project / "cases/swe/acme__mylib-5/eval.sh").read_text() == eval_script(base5)
        assert case4["image"] == "sweb.eval.x86_64.acme_1776_mylib-4:latest"  # the namespace comes at run time
        made = (project / "cases/swe/acme__mylib-4/eval.sh").read_text()
        assert f"git checkout {base4} tests/test_lib.py" in made and ">>>>> Start Test Output" in made
        shutil.copytree(REPO / "templates", project / "templates")
        (project / "evalkit.yaml").write_text(textwrap.dedent("""\
            release: r1
            templates_dir: templates
            baseline: empty
            systems:
              - {name: empty, adapter: empty}
              - {name: gold, adapter: gold}
              - {name: bot, adapter: recorded, path: preds.jsonl}
            sandbox: {backend: docker, swebench_namespace: evalkit-ns}
            """))
        env = {"EVALKIT_CONFIG": str(project / "evalkit.yaml")}
        # no --repo: nothing is cloned or copied, the image holds the tree
        proc = evalkit("run", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        work = project / ".evalkit"
        for iid, image in (("acme__mylib-5", v5_image), ("acme__mylib-4", v4_image)):
            validation = json.loads((work / "validation" / "swe" / f"{iid}.json").read_text())
            assert validation["status"] == "valid", validation

            def run_of(system: str, iid: str = iid) -> dict:
                art = json.loads((work / "artifacts" / system / "swe" / iid / "execution.json").read_text())
                assert art["status"] == "ok", art
                return art["runs"][0]

            gold, empty, bot = run_of("gold"), run_of("empty"), run_of("bot")
            assert gold["resolved"] is True and gold["isolation"] == "docker", gold["reason"]
            assert gold["fail_to_pass"] == {"tests/test_lib.py::test_clamp_high": "passed"}
            assert gold["image_digest"] == subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", image],
                                                          capture_output=True, text=True).stdout.strip()
            assert "patch applied with git apply" in gold["log"] and ">>>>> Start Test Output" in gold["log"]
            assert empty["resolved"] is False and empty["fail_to_pass"] == {"tests/test_lib.py::test_clamp_high": "failed"}
            assert empty["pass_to_pass"] == {"tests/test_lib.py::test_clamp_low": "passed"}
            assert bot["status"] == "tampered_with_tests" and bot["resolved"] is False
    finally:
        for tag in (v5_image, v4_image):
            subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


def test_tree_in_image_needs_docker(tmp_path: Path) -> None:
    from evalkit.sandbox import TestRunSpec, run_tests

    spec = TestRunSpec(image="sweb.eval.x86_64.a_1776_b-1:latest", tree="(in the image)", tree_in_image="/testbed",
                       test_command="true", fail_to_pass=["t::x"])
    result = run_tests(spec, "local")
    assert result.status == "infra_error" and "needs Docker" in result.reason


def test_official_image_names() -> None:
    from evalkit.config import Config
    from evalkit.importers.swebench import official_image_name
    from evalkit.stages.execute import official_image

    assert official_image_name("django__django-11099") == "sweb.eval.x86_64.django_1776_django-11099:latest"
    try:  # the name the installed harness derives, when it is installed
        from swebench.task.checks import expected_image
    except ImportError:
        expected_image = None
    if expected_image is not None:
        assert f"swebench/{official_image_name('django__django-11099')}" == expected_image("django__django-11099")
    cfg = Config.model_validate({"release": "r1", "systems": [{"name": "gold", "adapter": "gold"}]})
    assert official_image(cfg, "sweb.eval.x86_64.a_1776_b-1:latest") == "swebench/sweb.eval.x86_64.a_1776_b-1:latest"
    assert official_image(cfg, "ghcr.io/me/env:1") == "ghcr.io/me/env:1"  # a row naming its registry keeps it
    cfg.sandbox.swebench_namespace = ""
    assert official_image(cfg, "sweb.eval.x86_64.a_1776_b-1:latest") == "sweb.eval.x86_64.a_1776_b-1:latest"
