"""Issue 16 item 3: Kai's existing grades come in as a recorded judge.

`evalkit import kai-ci` (Kai CI's kai-ci_report.json and its .csv) and `evalkit import kai-eval`
(kai-eval's test cases and eval_results.json) on the real files in ../shared/realdata, then
`evalkit run` offline (no API key): the report's judge metrics follow the rubrics' fields, each
number recomputed here from the source files, and the grader is named as a recorded judge.
"""

from __future__ import annotations

import csv
import json
import re
import os
import statistics
import subprocess
from pathlib import Path

import pytest
from helpers import REALDATA, evalkit_at

REPO = Path(__file__).resolve().parents[2]
DATA = REALDATA
KAI_CI = DATA / "kai_judge" / "kai-ci_report.json"
KAI_CI_CSV = DATA / "kai_judge" / "kai-ci_kai_eval_report.csv"
KAI_EVAL = DATA / "kai_eval_pranavgaikwad"
needs_data = pytest.mark.realdata("kai_judge", "kai-ci_report.json")
FOUR = ("effectiveness", "specificity", "reasoning", "competency")


def evalkit(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_API_KEYS", "OPENAI_API_KEY", "OPENAI_API_KEYS",
                        "EVALKIT_CONFIG", "EVALKIT_RELEASE", "EVALKIT_SELECT")}
    env["PYTHONPATH"] = str(REPO)
    proc = evalkit_at(list(args), cwd, env, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"evalkit {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def systems_yaml(*suite_dirs: Path) -> str:
    body = "".join(p.joinpath("_systems.yaml").read_text().split("systems:\n", 1)[1] for p in suite_dirs)
    return "release: kai-history\ntitle: Kai history\nsystems:\n" + body


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kai-recorded")
    out = evalkit(root, "import", "kai-ci", str(KAI_CI), "--suite-dir", "cases/kai-ci")
    assert "wrote 15 case(s)" in out.stdout
    evalkit(root, "import", "kai-ci", str(KAI_CI_CSV), "--suite-dir", "cases/kai-ci-csv")
    evalkit(root, "import", "kai-eval", str(KAI_EVAL), "--suite-dir", "cases/kai-eval", "--grader", "gpt-4o")
    (root / "evalkit.yaml").write_text(systems_yaml(root / "cases" / "kai-ci", root / "cases" / "kai-ci-csv",
                                                    root / "cases" / "kai-eval"))
    run = evalkit(root, "run", "-q")
    assert run.returncode == 0
    return root


def report(root: Path) -> dict:
    return json.loads((root / "site" / "kai-history" / "report.json").read_text())


def case_scores(root: Path, system: str, suite: str, case: str) -> dict:
    return json.loads((root / ".evalkit" / "artifacts" / system / suite / case / "scores.json").read_text())["metrics"]


def case_ids(root: Path, suite: str) -> dict[str, str]:
    """Judged file -> case id, from the imported case files."""
    from evalkit.yamlio import load_yaml

    out = {}
    for p in (root / "cases" / suite).glob("*/case.yaml"):
        node = load_yaml(p, str(p))
        out[node["inputs"]["file_path"]] = node["id"]
    return out


@needs_data
def test_kai_ci_scores_are_the_reports_numbers_per_file_and_per_run(project: Path) -> None:
    runs = json.loads(KAI_CI.read_text())
    ids = case_ids(project, "kai-ci")
    assert len(ids) == len({r["file"] for run in runs for r in run["kaiEvalData"]}) == 15
    rep = report(project)
    suite = next(s for s in rep["suites"] if s["name"] == "kai-ci")
    for run in runs:
        system = "kai-ci-" + run["date"].replace(" ", "-").replace(":", "-")
        by_file: dict[str, list[dict]] = {}
        for row in run["kaiEvalData"]:
            by_file.setdefault(row["file"], []).append(row)
        for file, rows in by_file.items():
            got = case_scores(project, system, "kai-ci", ids[file])
            for f in FOUR:  # the mean of the file's verdicts in that run
                assert got[f"judge_{f}"] == pytest.approx(statistics.mean(r[f] for r in rows))
            # the rubric's overall score is Kai's own averageScore (the plain mean of the four), averaged
            assert got["judge_kai_ci_mean"] == pytest.approx(statistics.mean(r["averageScore"] for r in rows))
            assert got["judge_valid_code"] == float(sum(r["validCode"] for r in rows) * 2 > len(rows))
            assert set(got) <= {"answered", "wall_s", "cost_usd", "tokens", "judge_cost_usd", "judge_unstable",
                                "judge_effectiveness", "judge_specificity", "judge_reasoning", "judge_competency",
                                "judge_kai_ci_mean", "judge_valid_code", "judge_unnecessary_changes"}
        agg = suite["systems"][system]["judge_effectiveness"]
        assert agg["n"] == 15
        assert agg["value"] == pytest.approx(statistics.mean(statistics.mean(r["effectiveness"] for r in rows)
                                                             for rows in by_file.values()))
    row = next(s for s in rep["systems"] if s["name"].startswith("kai-ci-2024"))
    assert row["adapter"] == "recorded" and "recorded judge" in row["description"]
    assert row["status_counts"] == {"ok": 15} and row["judge_tokens"] == 0  # no model was called


@needs_data
def test_the_csv_imports_as_one_run_with_the_same_numbers(project: Path) -> None:
    with open(KAI_CI_CSV, newline="") as fh:
        rows = list(csv.DictReader(fh))
    ids = case_ids(project, "kai-ci-csv")
    system = "kai-ci-kai-ci_kai_eval_report"
    for file in {r["File"] for r in rows}:
        mine = [float(r["Effectiveness"]) for r in rows if r["File"] == file]
        assert case_scores(project, system, "kai-ci-csv", ids[file])["judge_effectiveness"] == pytest.approx(
            statistics.mean(mine))


@needs_data
def test_kai_eval_scores_outputs_and_grader(project: Path) -> None:
    results = json.loads((KAI_EVAL / "runner" / "tests" / "test-data" / "eval_results.json").read_text())["results"]
    rep = report(project)
    suite = next(s for s in rep["suites"] if s["name"] == "kai-eval")
    assert suite["n_cases"] == len(results) == 6
    assert {"judge_completeness", "judge_functional_parity", "judge_residual_effort",
            "judge_kai_eval_mean"} <= set(suite["metrics"])
    per_system: dict[str, list[dict]] = {}
    for r in results:
        for e in r["experiments"]:
            per_system.setdefault(f"{e['variant']}|{e['model']}", []).append(e)
    assert len(suite["systems"]) == len(per_system) == 4
    gpt4o_basic = per_system["basic|ChatOpenAI/gpt-4o"]
    agg = suite["systems"]["kai-eval-basic-gpt-4o"]
    assert agg["judge_completeness"]["value"] == pytest.approx(
        statistics.mean(e["metrics"]["completeness"]["score"] for e in gpt4o_basic))
    # kai-eval's final score: 0.5 completeness + 0.3 functionalParity + 0.2 residualEffort (the rubric's weights)
    assert agg["judge_kai_eval_mean"]["value"] == pytest.approx(statistics.mean(
        0.5 * e["metrics"]["completeness"]["score"] + 0.3 * e["metrics"]["functionalParity"]["score"]
        + 0.2 * e["metrics"]["residualEffort"]["score"] for e in gpt4o_basic))
    # the recorded output is the experiment's diff; the verdict names its grader and keeps the reasoning
    art = project / ".evalkit" / "artifacts" / "kai-eval-basic-gpt-4o" / "kai-eval" / "coolstore-jms-to-smallrye"
    diff = next(e["diff"] for r in results if r["testCase"]["application"]["name"] == "coolstore"
                and r["testCase"]["name"] == "jms-to-smallrye" for e in r["experiments"]
                if e["variant"] == "basic" and e["model"] == "ChatOpenAI/gpt-4o")
    assert json.loads((art / "output.json").read_text())["samples"][0]["patch"] == diff
    judge = json.loads((art / "grades.json").read_text())["judge"]
    assert judge["source"] == "recorded" and judge["model"] == "gpt-4o" and judge["rubric"] == "kai_eval"
    source_reasoning = next(e["metrics"]["completeness"]["reasoning"] for r in results
                            if r["testCase"]["application"]["name"] == "coolstore" and r["testCase"]["name"] == "jms-to-smallrye"
                            for e in r["experiments"] if e["variant"] == "basic" and e["model"] == "ChatOpenAI/gpt-4o")
    assert source_reasoning.strip()[:200] in judge["verdicts"][0]["detailed_notes"]
    page = (project / "site" / "kai-history" / "cases" / "kai-eval" / "coolstore-jms-to-smallrye.html").read_text()
    assert "recorded judge (imported verdicts, no call)" in page and "grader gpt-4o" in page


@needs_data
def test_an_edited_grades_file_regrades_only_that_system(project: Path) -> None:
    grades = project / "cases" / "kai-eval" / "_recorded" / "kai-eval-agent-gpt-4o.grades.json"
    data = json.loads(grades.read_text())
    key = "kai-eval/cmt-jsf-to-myfaces"
    data["cases"][key][0]["values"]["completeness"] = 0.1
    grades.write_text(json.dumps(data, indent=1))
    out = evalkit(project, "run")
    assert "grade:kai-eval-agent-gpt-4o:kai-eval/cmt-jsf-to-myfaces" in out.stdout
    assert "grade:kai-eval-basic-gpt-4o" not in out.stdout and "grade:kai-ci" not in out.stdout
    assert case_scores(project, "kai-eval-agent-gpt-4o", "kai-eval", "cmt-jsf-to-myfaces")["judge_completeness"] == 0.1


def test_a_bad_row_names_file_and_line(tmp_path: Path) -> None:
    report_file = tmp_path / "kai-ci_report.json"
    rows = [{"file": "a/A.java", "effectiveness": 8, "specificity": 8, "reasoning": 8, "competency": 8,
             "validCode": True, "unnecessaryChanges": False, "averageScore": 8.0},
            {"file": "a/B.java", "effectiveness": 11, "specificity": 8, "reasoning": 8, "competency": 8,
             "validCode": True, "averageScore": 8.0}]
    report_file.write_text(json.dumps([{"date": "2024-10-30 13:07:57", "kaiEvalData": rows}], indent=1))
    proc = evalkit(tmp_path, "import", "kai-ci", str(report_file), "--suite-dir", "cases/kai-ci", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    line = report_file.read_text().splitlines().index("   {", 5) + 1  # the second row's "{"
    assert f"kai-ci_report.json:{line}: run 0 (2024-10-30 13:07:57) kaiEvalData[1]: effectiveness must be an " \
           "integer from 1 to 10, got 11" in proc.stderr
    assert "unnecessaryChanges missing" in proc.stderr
    assert not (tmp_path / "cases").exists()  # nothing written
    bad_csv = tmp_path / "r.csv"
    bad_csv.write_text("File,Effectiveness,Specificity,Reasoning,Competency,Valid Code,Unnecessary Changes,Average Score\n"
                       "a/A.java,8,8,8,8,False,False,8.0\na/B.java,8,8,x,8,False,False,8.0\n")
    proc = evalkit(tmp_path, "import", "kai-ci", str(bad_csv), "--suite-dir", "cases/x", check=False)
    assert proc.returncode == 2 and "r.csv:3: row 2: reasoning must be an integer from 1 to 10, got 'x'" in proc.stderr


@needs_data
def test_kai_eval_with_an_application_tree_makes_agentic_cases_whose_diffs_apply(tmp_path: Path) -> None:
    # coolstore's tree as far as the real data holds it: the 22 legacy Java files of kai_migration_cases
    tree = tmp_path / "coolstore"
    for case in json.loads((DATA / "kai_migration_cases" / "cases.json").read_text()):
        if case["app"] == "coolstore":
            (tree / case["file_path"]).parent.mkdir(parents=True, exist_ok=True)
            (tree / case["file_path"]).write_text(case["legacy_code"])
    root = tmp_path / "p"
    root.mkdir()
    out = evalkit(root, "import", "kai-eval", str(KAI_EVAL), "--suite-dir", "cases/kai-eval", "--grader", "gpt-4o",
                  "--app", f"coolstore={tree}")
    assert "wrote 2 case(s)" in out.stdout
    assert "no application tree (--app) for cmt, petclinic, springframework-demo: 4 test case(s) left out" in out.stderr
    (root / "evalkit.yaml").write_text(systems_yaml(root / "cases" / "kai-eval").replace(
        "release: kai-history\n", "release: kai-history\nsandbox: {backend: local}\n"))
    evalkit(root, "run", "-q")
    rep = report(root)
    suite = next(s for s in rep["suites"] if s["name"] == "kai-eval")
    assert suite["kind"] == "agentic" and suite["n_cases"] == 2
    results = json.loads((KAI_EVAL / "runner" / "tests" / "test-data" / "eval_results.json").read_text())["results"]
    coolstore = [r for r in results if r["testCase"]["application"]["name"] == "coolstore"]
    agent = [e for r in coolstore for e in r["experiments"] if e["variant"] == "agent" and e["model"] == "ChatOpenAI/gpt-4o"]
    assert suite["systems"]["kai-eval-agent-gpt-4o"]["judge_completeness"]["value"] == pytest.approx(
        statistics.mean(e["metrics"]["completeness"]["score"] for e in agent))
    art = root / ".evalkit" / "artifacts"
    for case in ("coolstore-jms-to-smallrye", "coolstore-remote-ejb-to-rest"):
        basic = json.loads((art / "kai-eval-basic-gpt-4o" / "kai-eval" / case / "execution.json").read_text())["runs"][0]
        assert basic["status"] == "completed" and basic["changes"] == "git apply"  # Kai's real diff applies to the tree
        # the agent variant's diffs also change pom.xml, which the tree built from the data lacks
        failed = json.loads((art / "kai-eval-agent-gpt-4o" / "kai-eval" / case / "execution.json").read_text())["runs"][0]
        assert failed["status"] == "patch_failed" and "pom.xml" in failed["reason"]


def test_a_recorded_verdict_off_the_rubrics_scale_or_missing_is_a_judge_error_naming_the_file(tmp_path: Path) -> None:
    from evalkit.recorded_judge import RecordedGrades, RecordedVerdict, recorded_outcome

    ok = {"completeness": 0.5, "functionalParity": 1, "residualEffort": 0.25}
    grades = RecordedGrades(source="eval_results.json", grader="gpt-4o", rubric="kai_eval", cases={
        "s/a": [RecordedVerdict(values=ok, where="eval_results.json:10"),
                RecordedVerdict(values={**ok, "completeness": 1.0}, where="eval_results.json:20")],
        "s/b": [RecordedVerdict(values={**ok, "residualEffort": 3}, where="eval_results.json:30")]})
    path = tmp_path / "g.grades.json"
    path.write_text(grades.model_dump_json())
    a = recorded_outcome(path, "s/a", "g.grades.json")
    assert a.status == "judged" and a.source == "recorded" and a.model == "gpt-4o" and a.samples == 2
    assert a.scores == {"completeness": 0.75, "functionalParity": 1.0, "residualEffort": 0.25}
    assert a.unstable is True  # completeness spans 0.5: the two recorded verdicts disagree
    b = recorded_outcome(path, "s/b", "g.grades.json")
    assert b.status == "judge_error" and b.error is not None
    assert "g.grades.json" in b.error and "eval_results.json:30" in b.error and "residualEffort" in b.error
    c = recorded_outcome(path, "s/c", "g.grades.json")
    assert c.status == "judge_error" and c.error == "g.grades.json: no recorded verdict for s/c"
    path.write_text("{")
    d = recorded_outcome(path, "s/a", "g.grades.json")
    assert d.status == "judge_error" and (d.error or "").startswith("g.grades.json:1: malformed JSON")


@needs_data
def test_check_names_a_missing_or_broken_grades_file(project: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "p"
    shutil.copytree(project / "cases", copy / "cases")
    (copy / "evalkit.yaml").write_text((project / "evalkit.yaml").read_text())
    assert evalkit(copy, "check").returncode == 0
    grades = copy / "cases" / "kai-ci" / "_recorded" / "kai-ci-2024-10-30-13-07-57.grades.json"
    grades.write_text(grades.read_text()[:-20])
    proc = evalkit(copy, "check", check=False)
    assert proc.returncode == 2 and "system 'kai-ci-2024-10-30-13-07-57' grades: malformed JSON" in proc.stderr
    grades.unlink()
    proc = evalkit(copy, "check", check=False)
    line = next(n for n, t in enumerate((copy / "evalkit.yaml").read_text().splitlines(), 1)
                if "grades:" in t and "13-07-57" in t)
    assert f"evalkit.yaml:{line}: system 'kai-ci-2024-10-30-13-07-57': grades file" in proc.stderr


def test_no_page_prints_a_float_in_full(project: Path) -> None:
    """Every number a person reads has a few significant digits: kai-eval's per-sample scores printed as
    0.15000000000000008 before (Jinja's finalize now formats any float a template prints unfiltered).
    Machine-read values (data-value attributes, JSON) keep full precision: tags are left out of the scan."""
    long_float = re.compile(r"(?<![\w.])\d+\.\d{7,}(?![\w.])")
    pages = list((project / "site" / "kai-history").rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        text = re.sub(r"<script\b.*?</script>|<[^>]*>", " ", page.read_text(encoding="utf-8"), flags=re.S)
        found = long_float.findall(text)
        assert not found, f"{page.relative_to(project)}: {found[:5]}"


@needs_data
def test_a_kai_eval_diff_is_not_called_an_empty_output(project: Path) -> None:
    """#30: kai-eval's outputs are diffs; the case page showed a red "Degenerate (empty): the output file is
    empty or missing / complete ✗" next to a real 22 KB diff with a judge score of 0.525."""
    pages = sorted((project / "site" / "kai-history" / "cases" / "kai-eval").glob("*.html"))
    assert len(pages) == 6
    diffs = empties = 0
    for page in pages:
        html = page.read_text(encoding="utf-8")
        patches = [json.loads(p.read_text())["samples"][0]["patch"] for p in
                   (project / ".evalkit" / "artifacts").glob(f"*/kai-eval/{page.stem}/output.json")]
        assert len(patches) == 4
        empty = sum(not p.strip() for p in patches)  # an experiment that produced no diff is an empty answer
        assert html.count('class="note diff-only"') == 4 - empty, page.name
        assert html.count("Degenerate (empty)") == empty, page.name
        diffs, empties = diffs + 4 - empty, empties + empty
    assert diffs >= 20 and empties >= 1



def test_an_empty_file_answer_is_still_called_empty() -> None:
    """The diff exception does not switch the check off: a file answer with nothing in it, or no answer at all."""
    from evalkit.artifacts import SystemArtifacts
    from evalkit.kinds.migration.page import migration_detail
    from evalkit.report.models import CaseDetail

    case = CaseDetail(release="r", suite="s", kind="migration", language="java", case_id="c",
                      inputs={"file_path": "src/A.java", "legacy_file": "legacy/A.java",
                              "incidents": [{"rule_id": "r1", "message": "m"}]},
                      input_files={"inputs.legacy_file": "class A {}\n"})
    def answer(sample: dict) -> SystemArtifacts:
        return SystemArtifacts.model_validate({"output": {"system": "x", "suite": "s", "case_id": "c", "status": "ok",
                                                          "samples": [sample]}})

    for sample in ({"files": {"src/A.java": ""}}, {"files": {}, "patch": ""}):
        d = migration_detail(case, answer(sample))
        assert d is not None and not d["diff_only"] and d["degenerate"]["decided"] == "empty"
    d = migration_detail(case, answer({"files": {}, "patch": "--- a\n+++ b\n"}))
    assert d is not None and d["diff_only"] and d["diff_lines"] == 2 and d["degenerate"] is None


@needs_data
def test_the_imported_description_keeps_its_paragraphs(project: Path) -> None:
    from evalkit.yamlio import load_yaml

    case_yaml = next((project / "cases" / "kai-eval").glob("*/case.yaml"))
    description = load_yaml(case_yaml, str(case_yaml))["description"]
    blocks = [b for b in description.split("\n\n") if b.strip()]
    assert len(blocks) >= 2  # kai-eval's description has paragraphs (and the notes one more)
    page = (project / "site" / "kai-history" / "cases" / "kai-eval" / f"{case_yaml.parent.name}.html").read_text()
    lead = re.search(r'<div class="description">(.*?)</div>', page, re.S)
    assert lead is not None and lead.group(1).count('<p class="lead">') == len(blocks)


def _both_means(rows: list[dict]) -> tuple[float, float]:
    """(mean of per-file means, pooled mean) of Kai's averageScore over one run's rows."""
    by_file: dict[str, list[float]] = {}
    for r in rows:
        by_file.setdefault(r["file"], []).append(float(r["averageScore"]))
    return (statistics.mean(statistics.mean(v) for v in by_file.values()),
            statistics.mean(x for v in by_file.values() for x in v))


@needs_data
def test_kai_ci_row_reading_is_said_on_the_page_with_both_means(project: Path) -> None:
    """#29 Why 11: a file's 1-25 rows in a run are read as repeat verdicts and the suite mean is a mean of per-file
    means; the suite says so and each run's system gives both means (recomputed here from the report)."""
    rep = report(project)
    suite = next(s for s in rep["suites"] if s["name"] == "kai-ci")
    assert "read as repeat verdicts of one judgement (--rows repeats)" in suite["description"]
    assert "mean of per-file means" in suite["description"]
    runs = json.loads(KAI_CI.read_text())
    page = (project / "site" / "kai-history" / "suites" / "kai-ci.html").read_text()
    assert "--rows repeats" in page
    for run in runs:
        system = "kai-ci-" + run["date"].replace(" ", "-").replace(":", "-")
        per_file, pooled = _both_means(run["kaiEvalData"])
        assert per_file != pytest.approx(pooled, abs=0.005)  # the two readings differ: not a vacuous check
        row = next(s for s in rep["systems"] if s["name"] == system)
        assert f"mean of per-file means {per_file:.2f}, pooled over rows {pooled:.2f}" in row["description"]
        assert "120 rows on 15 files (1-25 per file)" in row["description"]
        agg = suite["systems"][system]["judge_kai_ci_mean"]
        assert agg["value"] == pytest.approx(per_file)


@needs_data
def test_kai_ci_rows_separate_makes_one_case_per_row_whose_mean_pools_them(tmp_path: Path) -> None:
    evalkit(tmp_path, "import", "kai-ci", str(KAI_CI), "--suite-dir", "cases/kai-ci", "--rows", "separate")
    suite_dir = tmp_path / "cases" / "kai-ci"
    assert "each row is its own case (--rows separate)" in (suite_dir / "suite.yaml").read_text()
    runs = json.loads(KAI_CI.read_text())
    assert len(list(suite_dir.glob("*/case.yaml"))) == max(len(r["kaiEvalData"]) for r in runs) == 120
    for grades in sorted((suite_dir / "_recorded").glob("*.grades.json")):
        cases = json.loads(grades.read_text())["cases"]
        assert len(cases) == 120 and all(len(v) == 1 for v in cases.values())
        run = next(r for r in runs if json.loads(grades.read_text())["run"] == r["date"])
        mean = statistics.mean(statistics.mean(float(v[0]["values"][f]) for f in FOUR) for v in cases.values())
        assert mean == pytest.approx(_both_means(run["kaiEvalData"])[1])
    bad = evalkit(tmp_path, "import", "kai-ci", str(KAI_CI), "--suite-dir", "cases/x", "--rows", "pooled", check=False)
    assert bad.returncode == 2 and "--rows" in bad.stderr
