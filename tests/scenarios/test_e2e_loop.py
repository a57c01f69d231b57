"""The e2e iteration loop end to end (doit, real sandbox): iterations, pass rate, interventions."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from helpers import REPO, evalkit

HERE = Path(__file__).resolve().parent
CALC = textwrap.dedent("""\
    def add(a, b):
        return 0  # BUG


    def sub(a, b):
        return 0  # BUG


    def mul(a, b):
        return 0  # BUG


    def neg(a):
        return -a
    """)
TESTS = textwrap.dedent("""\
    from calc import add, mul, neg, sub


    def test_add():
        assert add(2, 3) == 5


    def test_sub():
        assert sub(2, 3) == -1


    def test_mul():
        assert mul(2, 3) == 6


    def test_neg():
        assert neg(2) == -2
    """)
TEST_IDS = ["tests/test_calc.py::test_add", "tests/test_calc.py::test_sub", "tests/test_calc.py::test_mul",
            "tests/test_calc.py::test_neg"]


def project(root: Path, backend: str) -> Path:
    suite = root / "cases" / "apps"
    suite.mkdir(parents=True)
    (suite / "suite.yaml").write_text("kind: e2e\nlanguage: python\n")
    for case_id, max_iterations in (("three-bugs", 5), ("short-loop", 2)):
        src = suite / case_id / "source"
        (src / "tests").mkdir(parents=True)
        (src / "calc.py").write_text(CALC)
        (src / "tests" / "test_calc.py").write_text(TESTS)
        (suite / case_id / "case.yaml").write_text(
            f"id: {case_id}\ninputs:\n  source_dir: source\n  max_iterations: {max_iterations}\n"
            "  test_command: python3 -m pytest -rA -p no:cacheprovider tests\nreference:\n  tests:\n"
            + "".join(f"    - {t}\n" for t in TEST_IDS))
    (root / "evalkit.yaml").write_text(textwrap.dedent(f"""\
        release: r1
        templates_dir: {REPO / 'templates'}
        sandbox: {{backend: {backend}}}
        systems:
          - name: one-fix
            adapter: command
            command: ["{sys.executable}", "{HERE / 'one_fix_system.py'}"]
        """))
    return root


def scores(root: Path, case_id: str) -> dict:
    return json.loads((root / ".evalkit/artifacts/one-fix/apps" / case_id / "scores.json").read_text())


def test_iteration_count_equals_the_number_of_failing_tests(tmp_path, docker_engine):
    root = project(tmp_path / "p", "docker")
    evalkit(root, "run")
    run = json.loads((root / ".evalkit/artifacts/one-fix/apps/three-bugs/execution.json").read_text())["runs"][0]
    assert [r["passed"] for r in run["iterations"]] == [2, 3, 4]   # neg passes from the start
    assert [r["failing"] for r in run["iterations"]][0] == TEST_IDS[1:3]
    assert run["stable_at"] == 3 and run["isolation"] == "docker"
    m = scores(root, "three-bugs")["metrics"]
    assert m["e2e_iterations"] == 3.0 and m["e2e_resolved"] == 1.0 and m["e2e_pass_rate"] == 1.0
    assert m["e2e_interventions"] == 0.0
    assert m["e2e_time_s"] >= sum(r["system_wall_s"] + r["test_s"] for r in run["iterations"]) - 0.01

    short = scores(root, "short-loop")["metrics"]   # two iterations are not enough for three bugs
    assert short["e2e_resolved"] == 0.0 and short["e2e_iterations"] is None
    assert short["e2e_pass_rate"] == 0.75 and short["e2e_interventions"] is None  # counted over resolved runs (#25)

    report = json.loads((root / "site/r1/report.json").read_text())
    agg = report["suites"][0]["systems"]["one-fix"]
    assert agg["e2e_iterations"]["n"] == 1 and agg["e2e_iterations"]["not_applicable"] == 1
    assert agg["e2e_resolved"]["value"] == 0.5 and agg["e2e_resolved"]["method"] == "wilson"

    # every system call and test run is cached: deleting the artifacts and doit's db reruns nothing paid
    import shutil

    shutil.rmtree(root / ".evalkit/artifacts")
    (root / ".evalkit/doit.sqlite3").unlink()
    evalkit(root, "run")
    again = json.loads((root / ".evalkit/artifacts/one-fix/apps/three-bugs/execution.json").read_text())["runs"][0]
    assert again["iterations"] == run["iterations"]
