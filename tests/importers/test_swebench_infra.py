"""#30: `evalkit swebench-report` records a broken environment as ``infra_failure: true`` (with the reason),
not as an ordinary unresolved result: here tests that fail at import with the gold patch and with no patch
(a dependency the environment lacks); tests/sandbox/test_timeout_once.py checks the tests that time out
twice. A patch that breaks the imports itself, in a sound environment, stays an ordinary failure."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

from evalkit.importers.swebench_report import environment_signature, infra_entry
from evalkit.sandbox.parsing import collection_failure
from helpers import REPO, evalkit

IMPORTS_MISSING = "import networkdata  # downloaded at import time upstream: absent from the environment\n" \
                  "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
SOUND = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
FIX = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""
BREAKS_IMPORTS = FIX.replace("+    return a + b", "+    return a + b\n+import not_a_module").replace("+1,2 @@", "+1,3 @@")


def project(root: Path) -> Path:
    for case, tests in (("env-broken", IMPORTS_MISSING), ("sound", SOUND)):
        d = root / "cases" / "env" / case
        (d / "tree" / "tests").mkdir(parents=True)
        (d / "tree" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        (d / "tree" / "tests" / "test_calc.py").write_text(tests)
        (d / "gold.patch").write_text(FIX)
        (d / "case.yaml").write_text(textwrap.dedent(f"""\
            id: {case}
            inputs:
              source_dir: tree
              test_command: PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python3 -m pytest -rA -p no:cacheprovider tests
              timeout_s: 60
            reference:
              patch_file: gold.patch
              fail_to_pass: [tests/test_calc.py::test_add]
            """))
    (root / "cases" / "env" / "suite.yaml").write_text("kind: patch\nlanguage: python\n")
    preds = [{"instance_id": c, "model_name_or_path": "bot", "model_patch": BREAKS_IMPORTS} for c in ("env-broken", "sound")]
    (root / "bot.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
    shutil.copytree(REPO / "templates", root / "templates")
    (root / "evalkit.yaml").write_text(textwrap.dedent("""\
        release: r1
        templates_dir: templates
        baseline: empty
        systems:
          - {name: empty, adapter: empty}
          - {name: bot, adapter: recorded, path: bot.jsonl}
        sandbox: {backend: local}
        """))
    return root


def test_tests_failing_at_import_twice_are_an_infra_failure(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    evalkit(root, "run", "-q", timeout=600, check=False)
    validation = json.loads((root / ".evalkit" / "validation" / "env" / "env-broken.json").read_text())
    assert validation["environment_broken"] is True, validation
    assert "fail at import or collection" in validation["reason"] and "networkdata" in validation["reason"]
    sound = json.loads((root / ".evalkit" / "validation" / "env" / "sound.json").read_text())
    assert sound["status"] == "valid", sound
    out = tmp_path / "report.json"
    evalkit(root, "swebench-report", "--system", "bot", "--out", str(out))
    report = json.loads(out.read_text())
    broken = report["env-broken"]
    assert broken["infra_failure"] is True and broken["resolved"] is False and "tests_status" not in broken
    assert "fail at import or collection" in broken["infra_failure_reason"]
    # the same patch breaking the imports of a sound environment is the patch's failure, not the environment's
    assert report["sound"]["infra_failure"] is False and report["sound"]["resolved"] is False
    assert report["sound"]["patch_successfully_applied"] is True


def test_collection_failure_reads_pytest_logs() -> None:
    log = ("==================================== ERRORS ====================================\n"
           "_____________________ ERROR collecting tests/test_calc.py ______________________\n"
           "ImportError while importing test module '/work/tests/test_calc.py'.\n"
           "E   ModuleNotFoundError: No module named 'networkdata'\n"
           "=========================== short test summary info ============================\n"
           "ERROR tests/test_calc.py\n!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n")
    run = {"fail_to_pass": {"tests/test_calc.py::test_add": "error"}, "pass_to_pass": {}, "log": log}
    assert collection_failure(run) == "ModuleNotFoundError: No module named 'networkdata'"
    assert collection_failure({**run, "log": log.replace("E   ModuleNotFoundError", "x")}).startswith("ImportError while")
    assert collection_failure({**run, "fail_to_pass": {"tests/test_calc.py::test_add": "failed"}}) is None
    assert collection_failure({**run, "log": "1 failed in 0.1s"}) is None  # errored, but not at collection


def test_swebench_environment_signatures_and_the_entry() -> None:
    """SWE-bench's own classification (swebench.harness.infra_failure) of a log: environment tier only."""
    assert environment_signature("Cannot connect to the Docker daemon at unix:///var/run/docker.sock") == "container_unavailable"
    assert environment_signature("collected 0 items\nno tests ran") is None  # ambiguous: a patch can do that
    entry = {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True, "resolved": False,
             "infra_failure": False, "tests_status": {"FAIL_TO_PASS": {"success": [], "failure": ["t"]}}}
    assert infra_entry(entry, "why") == {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True,
                                         "resolved": False, "infra_failure": True, "infra_failure_reason": "why"}
