"""evalkit.api: load, run, results, evaluate (real Docker), register_metric."""

from __future__ import annotations

import difflib
import json
import subprocess
from pathlib import Path

import pytest

from evalkit import api
from evalkit.errors import InputError
from helpers import REALDATA, make_project, realdata

IMAGE = "evalkit/python-pytest:bookworm"


# --- load -------------------------------------------------------------------------------------

def test_load_a_project_folder(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    project = api.load(root)
    assert project.path == root / "evalkit.yaml"
    assert [s.name for s in project.systems] == ["naive", "rules", "gold"]
    assert sorted(c.key for c in project.cases) == ["migration/cdi-inject", "migration/jpa-entity"]
    assert project.suites["migration"].kind == "migration"
    assert project.case("migration/jpa-entity").id == "jpa-entity"
    assert project.release == "r1" and project.problems == []
    assert api.load(project.config).path == project.path  # a loaded Config loads again from its file


def test_load_a_broken_config_names_file_and_line(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    cfg = root / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("release: r1\n", "release: r1\nsandbox:\n  backnd: docker\n"))
    with pytest.raises(InputError) as exc:
        api.load(cfg)
    problems = exc.value.problems
    assert any(p.file == str(cfg) and p.line == 3 and "backnd" in p.message for p in problems), problems


def test_a_broken_case_is_listed_or_raised_when_strict(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    case = root / "cases" / "migration" / "jpa-entity" / "case.yaml"
    case.write_text(case.read_text() + "no_such_key: 1\n")
    lines = case.read_text().count("\n")
    project = api.load(root)
    assert [c.key for c in project.cases if c.ok] == ["migration/cdi-inject"]
    assert [(Path(p.file).name, p.line) for p in project.problems] == [("case.yaml", lines)]
    assert "no_such_key" in project.problems[0].message
    with pytest.raises(InputError) as exc:
        api.load(root, strict=True)
    assert exc.value.problems == project.problems


def test_missing_config_raises(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        api.load(tmp_path / "nowhere.yaml")
    assert "not found" in str(exc.value)


# --- run and results --------------------------------------------------------------------------

def test_run_results_and_an_added_metric(tmp_path: Path, added_metrics) -> None:
    root = make_project(tmp_path / "p")
    project = api.load(root)
    first = api.run(project)
    assert first.ok and first.exit_status == 0 and first.release == "r1"
    report_path = root / "site" / "r1" / "report.json"
    assert first.report_path == str(report_path)
    raw = json.loads(report_path.read_text())
    assert first.cases == len(raw["cases"]) == 2 and first.systems == 3
    assert sum(first.cells.values()) == 6

    res = api.results(project)
    assert isinstance(res, api.Results) and res.release == "r1"
    for row in raw["cases"]:
        for system, cell in row["systems"].items():
            for metric, value in cell["metrics"].items():
                assert res.value(system, metric, suite=row["suite"], case=row["case_id"]) == value
    for suite in raw["suites"]:
        for system, metrics in suite["systems"].items():
            for metric, agg in metrics.items():
                assert res.value(system, metric, suite=suite["name"]) == agg["value"]
    for system in raw["systems"]:
        for metric, agg in system["metrics"].items():
            assert res.value(system["name"], metric) == agg["value"]
    assert api.results(root / "site").release == "r1"  # a bare site: its newest release
    with pytest.raises(InputError):
        api.results(project, release="r9")

    # a team's metric: registered, scored in the next in-process run, described in metric_info
    def id_length(case, output, execution, grades) -> float:
        return len(case.id) / 100

    info = api.register_metric("team_id_length", description="Length of the case id / 100.", kinds=("migration",),
                               higher_is_better=None, scale="any", scorer=id_length)
    assert info.aggregate == "mean"
    with pytest.raises(ValueError):
        api.register_metric("resolved", description="clash")
    with pytest.raises(ValueError):
        api.register_metric("x_metric", description="bad kind", kinds=("migraton",))
    second = api.run(project)
    assert second.ok
    res = api.results(project)
    assert res.metric_info["team_id_length"].higher_is_better is None
    assert res.metric_info["team_id_length"].description == "Length of the case id / 100."
    for case in ("jpa-entity", "cdi-inject"):
        assert res.value("rules", "team_id_length", suite="migration", case=case) == len(case) / 100
    mean = res.value("rules", "team_id_length", suite="migration")
    assert mean == pytest.approx((len("jpa-entity") + len("cdi-inject")) / 200)
    with pytest.raises(ValueError):
        api.run(project, in_process=False)  # a subprocess would not know the added scorer


def test_run_a_selection(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    with pytest.raises(InputError) as exc:
        api.run(root, select="migration/no-such-*")
    assert "no-such" in str(exc.value)
    result = api.run(root, select=["migration/jpa-*"], release="sel", in_process=False, timeout=600)
    assert result.ok and result.release == "sel" and result.selected == ["migration/jpa-*"]
    res = api.results(root, release="sel")
    ran = {(r.suite, r.case_id): sorted(r.systems) for r in res.cases}
    assert ran == {("migration", "jpa-entity"): ["gold", "naive", "rules"], ("migration", "cdi-inject"): []}
    assert result.cases == 1 and result.cells == {"ok": 3} and not (root / "site" / "r1").exists()


def test_a_failed_run_is_never_a_silent_success(tmp_path: Path) -> None:
    systems = ("systems:\n  - name: broken\n    adapter: command\n"
               '    command: ["{python}", "-c", "import sys; sys.exit(7)"]\n')
    root = make_project(tmp_path / "p", cases=["jpa-entity"], systems=systems)
    cfg = root / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("baseline: naive\n", "baseline: broken\n"))
    with pytest.raises(api.RunFailed) as exc:
        api.run(root)
    assert exc.value.result.exit_status == 3 and exc.value.result.failed_systems == ["broken"]
    result = api.run(root, check=False)
    assert not result.ok and result.exit_status == 3 and result.cells == {"error": 1}


# --- evaluate: a synthetic SWE-bench instance in real Docker -------------------------------

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = "from calc import add, mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
TESTS_AFTER = TESTS + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"
F2P, P2P = "tests/test_calc.py::test_add", "tests/test_calc.py::test_mul"


def diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """A SWE-bench row (5.x fields) whose repository is a local git repo holding the buggy tree."""
    repo = tmp_path_factory.mktemp("calc-repo")
    git(repo, "init", "-q")
    (repo / "calc").mkdir()
    (repo / "calc" / "__init__.py").write_text(CALC)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "base")
    row = {"instance_id": "local__calc-1", "repo": "local/calc", "base_commit": git(repo, "rev-parse", "HEAD"),
           "patch": diff("calc/__init__.py", CALC, CALC.replace("a - b", "a + b")),
           "test_patch": diff("tests/test_calc.py", TESTS, TESTS_AFTER),
           "FAIL_TO_PASS": json.dumps([F2P]), "PASS_TO_PASS": json.dumps([P2P]),
           "problem_statement": "add() subtracts", "version": "0.1", "log_parser": "parse_log_pytest"}
    return row, repo


def test_evaluate_resolved_wrong_and_malformed(docker_engine, instance, tmp_path: Path) -> None:
    row, repo = instance
    work = tmp_path / "work"
    gold = api.evaluate(row["patch"], row, backend="docker", repo=repo, work_dir=work)
    assert gold.status == "completed", gold.reason
    assert gold.resolved and gold.applied and gold.evalkit_resolved and gold.harness_resolved
    assert gold.passed == [F2P, P2P] and gold.failed == []
    assert gold.tests_status["FAIL_TO_PASS"].success == [F2P] and gold.tests_status["PASS_TO_PASS"].success == [P2P]
    assert gold.report["resolved"] is True and gold.isolation == "docker"
    loc = gold.localization
    assert loc is not None and loc.gold_files == ["calc/__init__.py"] and loc.gold_functions == ["calc/__init__.py::add"]
    assert loc.metrics["file_hit@1"] == 1.0 and loc.metrics["function_recall@1"] == 1.0
    assert gold.codebleu is None and "CodeBLEU" in gold.codebleu_note
    assert not gold.from_cache and gold.test_time_s > 0

    wrong = api.evaluate(diff("calc/__init__.py", CALC, CALC.replace("a * b", "b * a")), row, backend="docker",
                         repo=repo, work_dir=work)
    assert wrong.status == "completed", wrong.reason
    assert wrong.applied and not wrong.resolved and wrong.evalkit_resolved is False
    assert wrong.passed == [P2P] and wrong.failed == [F2P]
    assert wrong.tests_status["FAIL_TO_PASS"].failure == [F2P]
    assert wrong.localization is not None
    assert wrong.localization.functions == ["calc/__init__.py::mul"]
    assert wrong.localization.metrics["file_hit@1"] == 1.0 and wrong.localization.metrics["function_hit@1"] == 0.0

    bad = api.evaluate("--- a/calc/__init__.py\n+++ b/calc/__init__.py\n@@ -1,2 +1,2 @@\n-def nothing():\n+def x():\n",
                       row, backend="docker", repo=repo, work_dir=work)
    assert bad.status == "patch_failed" and not bad.applied and not bad.resolved
    assert bad.failed == [F2P, P2P] and bad.passed == []

    again = api.evaluate(row["patch"], row, backend="docker", repo=repo, work_dir=work)
    assert again.from_cache and again.resolved and again.passed == gold.passed


def test_evaluate_refuses_a_malformed_row(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        api.evaluate("", {"instance_id": "x__y-1", "repo": "x/y"}, work_dir=tmp_path)
    assert "missing field(s)" in str(exc.value) and "base_commit" in str(exc.value)
    with pytest.raises(InputError):
        api.evaluate("", ["not", "a", "row"], work_dir=tmp_path)


def test_evaluate_an_unmapped_repository_says_why(instance, tmp_path: Path) -> None:
    row, _repo = instance
    res = api.evaluate(row["patch"], {**row, "repo": "nobody/unmapped"}, backend="local", work_dir=tmp_path)
    assert res.status == "infra_error" and not res.resolved and "not mapped" in res.error


REAL = REALDATA / "swebench" / "sweagent_test_data"


def test_evaluate_a_real_prediction_without_its_repository(tmp_path: Path) -> None:
    """SWE-agent's real prediction for pydicom-1458 against the real row: the repository is not on this
    machine, so the tests cannot run (said, not counted as a failure of the patch); the patch's files are
    still compared with the gold patch's."""
    realdata("swebench", "sweagent_test_data")
    rows = {r["instance_id"]: r for r in json.loads((REAL / "swe-bench-dev-easy.json").read_text())}
    pred = json.loads((REAL / "all_preds.jsonl").read_text().splitlines()[0])
    row = rows[pred["instance_id"]]
    res = api.evaluate(pred["model_patch"], row, backend="docker", work_dir=tmp_path)
    assert res.status == "infra_error" and "pydicom/pydicom" in res.error and "not mapped" in res.error
    assert not res.resolved and not res.applied and res.passed == [] and res.tests_status == {}
    loc = res.localization
    assert loc is not None and loc.gold_files == ["pydicom/pixel_data_handlers/numpy_handler.py"]
    assert loc.files == loc.gold_files and loc.metrics["file_hit@1"] == 1.0
    assert loc.gold_functions == [] and loc.metrics["function_hit@1"] is None  # no source tree: no functions
