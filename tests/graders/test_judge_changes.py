"""Judging patch suites (suite.yaml `judge:`) and the judge's agreement with the tests.

End to end: a copy of the demo patch suite (local backend: the suite is trusted), a loopback Messages
API whose verdicts follow a fixed rule on the file it reads, doit, report.json. The expected 2x2 tables
and kappas are computed here from the outputs the run produced (their patches applied with `git apply`
to a copy of the tree), the rule, and the tests' verdicts (scores.json `resolved`), with scikit-learn as
the kappa oracle. Also: no call when the suite does not say `judge:`, a rerun pays nothing, the file cap,
and `judge:` refused on a migration suite at its line.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest

from evalkit.casemodels import PatchInputs

from evalkit.kinds.e2e.models import E2EInputs

from fake_server import FakeAnthropic, Reply
from helpers import evalkit, evalkit_here, patch_project, without_plugin_autoload

KEY = "sk-ant-test-judge-changes-0000"
CASES = ["round-half-up", "slug-lowercase", "truncate-limit", "parse-thousands", "remove-below-zero"]
GENERATED = re.compile(r"<<<BEGIN DATA (\w+): generated file>>>\n(.*)\n<<<END DATA \1>>>", re.S)
NOTES = ("diff --git a/invlib/NOTES.txt b/invlib/NOTES.txt\nnew file mode 100644\n--- /dev/null\n"
         "+++ b/invlib/NOTES.txt\n@@ -0,0 +1,2 @@\n+round_cents rounds half up now.\n+See money.py.\n")


def judge_rule(code: str) -> dict:
    """The loopback judge's verdict on one changed file (plain and deterministic, right and wrong in turn)."""
    fake = "PASSED" in code  # parse-thousands' patch-bot answer prints PASSED lines instead of fixing anything
    return {"semantic_equivalence_score": 2 if fake else 3 + len(code) % 3, "rule_adherence_score": 4,
            "faithfulness_score": 4, "code_quality_score": 3 if fake else 5,
            "is_compilable": fake or len(code.splitlines()) % 2 == 0}


def responder(body: dict) -> Reply:
    prompt = "".join(block["text"] for m in body["messages"] for block in
                     (m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}]))
    code = GENERATED.search(prompt).group(2)
    return Reply(text="Reviewed.\n```json\n" + json.dumps({**judge_rule(code), "detailed_notes": "ok"}) + "\n```")


@pytest.fixture
def server():
    with FakeAnthropic(responder=responder) as s:
        yield s


def judged_project(root: Path, server: FakeAnthropic, judge: str | None) -> Path:
    """The demo patch suite's CASES (gold's round-half-up answer also adds a notes file: two files to judge)."""
    project = patch_project(root, backend="local", cases=CASES)
    suite = project / "cases" / "patch" / "suite.yaml"
    text = re.sub(r"(?m)^judge:.*\n", "", suite.read_text(encoding="utf-8"))  # the demo's own setting, if any
    suite.write_text(text + (f"judge: {judge}\n" if judge is not None else ""), encoding="utf-8")
    without_plugin_autoload(suite)  # the point is the judge, not the host pytest's plug-ins (helpers)
    gold = project / "cases" / "patch" / "round-half-up" / "gold.patch"
    gold.write_text(gold.read_text(encoding="utf-8") + NOTES, encoding="utf-8")
    with (project / "evalkit.yaml").open("a", encoding="utf-8") as fh:
        fh.write(f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n")
    return project


def after_files(project: Path, system: str, case: str) -> dict[str, str]:
    """The files the output changed, after it: its patch applied to a copy of the tree by git apply."""
    sample = json.loads((project / f".evalkit/artifacts/{system}/patch/{case}/output.json").read_text())["samples"][0]
    tree = Path(tempfile.mkdtemp(dir=project.parent)) / "tree"
    shutil.copytree(project / "cases" / "patch" / "_src" / "invlib", tree)
    before = {p.relative_to(tree).as_posix(): p.read_text() for p in tree.rglob("*") if p.is_file()}
    if sample.get("patch"):
        if subprocess.run(["git", "apply", "-"], cwd=tree, input=sample["patch"], text=True,
                          capture_output=True).returncode:
            return {}  # does not apply: nothing changed
    after = {p.relative_to(tree).as_posix(): p.read_text() for p in tree.rglob("*") if p.is_file()}
    return {rel: text for rel, text in after.items() if before.get(rel) != text}


def sk(a: list, b: list) -> float:
    from sklearn.metrics import cohen_kappa_score  # here, not at the top: every xdist worker collects this file

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(a, b, labels=[False, True]))


def table(judge_pass: list[bool], tests_pass: list[bool]) -> dict[str, int]:
    pairs = list(zip(judge_pass, tests_pass))
    return {"both_pass": pairs.count((True, True)), "judge_pass_tests_fail": pairs.count((True, False)),
            "judge_fail_tests_pass": pairs.count((False, True)), "both_fail": pairs.count((False, False))}


def test_patch_suite_judged_against_tests_matches_sklearn(tmp_path: Path, server: FakeAnthropic) -> None:
    project = judged_project(tmp_path / "p", server, "{max_files: 2}")
    env = {"ANTHROPIC_API_KEY": KEY}
    evalkit(project, "run", "generate", env=env)
    estimated = json.loads(evalkit_here(project, "estimate", env=env).stdout.strip().splitlines()[-1])
    assert server.message_calls() == 0  # estimating pays nothing
    evalkit(project, "run", "-q", env=env, timeout=900)  # a hang's net: 300 s was hit beside three workers
    calls = server.message_calls()
    report = json.loads((project / "site/r1/report.json").read_text())

    asked: set[tuple[str, str, str]] = set()
    semantic, compilable, tests_pass, decided, files_of = [], [], [], set(), {}
    for system in ("patch-bot", "gold", "empty"):
        for case in CASES:
            art = project / f".evalkit/artifacts/{system}/patch/{case}"
            judge = json.loads((art / "grades.json").read_text())["judge"]
            metrics = json.loads((art / "scores.json").read_text())["metrics"]
            changed = files_of[system, case] = after_files(project, system, case)
            if not changed:  # no answer, or a patch that does not apply: decided without a model, no call
                assert judge["status"] == "parser" and judge["decided"] == "unchanged", (system, case, judge)
                assert metrics["judge_semantic_equivalence"] == 0.0
                decided.add((system, case))
                continue
            assert judge["status"] == "judged", (system, case, judge)
            assert sorted(f["path"] for f in judge["files"]) == sorted(changed)
            asked |= {(case, path, text) for path, text in changed.items()}  # the same file twice: one call
            rules = [judge_rule(text) for text in changed.values()]
            mean = sum(r["semantic_equivalence_score"] for r in rules) / len(rules)
            assert judge["scores"]["semantic_equivalence_score"] == pytest.approx(mean)
            assert metrics["judge_semantic_equivalence"] == pytest.approx(mean)
            semantic.append(math.floor(mean + 0.5) >= 4)  # the judge's value: the mean rounded half up
            compilable.append(all(r["is_compilable"] for r in rules))
            assert judge["is_compilable"] is compilable[-1]
            tests_pass.append(metrics["resolved"] == 1.0)
    assert len(files_of["gold", "round-half-up"]) == 2  # two files judged and combined
    assert {s for s, _ in decided} >= {"empty"} and calls == len(asked)
    assert any(tests_pass) and not all(tests_pass)

    fields = {f["field"]: f for f in report["calibration"]["fields"]}
    print("judge vs tests (semantic >= 4, compilable):", {n: {k: fields[n]["vs_tests"][k] for k in (
        "both_pass", "judge_pass_tests_fail", "judge_fail_tests_pass", "both_fail")} | {
        "kappa": fields[n]["vs_tests"]["agreement"]["kappa"]} for n in ("semantic_equivalence_score", "is_compilable")},
        "calls", calls, "decided", sorted(decided))
    for name, judged in (("semantic_equivalence_score", semantic), ("is_compilable", compilable)):
        got = fields[name]["vs_tests"]
        assert got is not None and fields[name]["suites"] == ["patch"]
        assert got["test_metric"] == "resolved"
        assert {k: got[k] for k in table(judged, tests_pass)} == table(judged, tests_pass)
        assert got["agreement"]["n"] == len(tests_pass)
        want = sk(judged, tests_pass)
        if math.isnan(want):
            assert got["agreement"]["kappa"] is None
        else:
            assert got["agreement"]["kappa"] == pytest.approx(want, abs=1e-9)
        t = table(judged, tests_pass)
        failing = t["judge_pass_tests_fail"] + t["both_fail"]
        assert got["failing_rated_pass"]["k"] == t["judge_pass_tests_fail"] and got["failing_rated_pass"]["n"] == failing
        assert fields[name]["tested_decided"] == len(decided)
    assert fields["semantic_equivalence_score"]["vs_tests"]["judge_pass"] == "4 or more"
    page = (project / "site/r1/index.html").read_text()
    assert "κ vs tests <strong>" in page

    # the estimate after generate counted every call (a patch answer's changed files are known then)
    assert estimated["by_asker"].get("changes judge") == calls, estimated
    # a rerun asks nothing, and the estimate says so
    evalkit(project, "run", "-q", env=env)
    assert server.message_calls() == calls
    assert json.loads(evalkit_here(project, "estimate", env=env).stdout.strip().splitlines()[-1])["uncached_calls"] == 0


def test_no_call_without_judge_option(tmp_path: Path, server: FakeAnthropic) -> None:
    project = judged_project(tmp_path / "p", server, None)
    shutil.rmtree(project / "cases" / "patch" / "slug-lowercase")  # fewer test runs: the point is the judge
    for case in CASES[2:]:
        shutil.rmtree(project / "cases" / "patch" / case)
    evalkit(project, "run", "-q", env={"ANTHROPIC_API_KEY": KEY})
    assert server.message_calls() == 0
    grades = json.loads((project / ".evalkit/artifacts/gold/patch/round-half-up/grades.json").read_text())
    assert grades["judge"] is None
    metrics = json.loads((project / ".evalkit/artifacts/gold/patch/round-half-up/scores.json").read_text())["metrics"]
    assert metrics["resolved"] == 1.0 and not [m for m in metrics if m.startswith("judge_") and m != "judge_cost_usd"]


def test_changed_files_capped_largest_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    import evalkit.stages.execute as execute
    from evalkit.graders.judge_changes import changed_files, judge_changes, ranked
    from evalkit.graders.rubric_config import load_rubric
    from evalkit.llm.settings import JudgeSettings

    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "a.py").write_text("x = 1\n")
    (tree / "pkg" / "b.py").write_text("y = 1\nz = 2\n")
    (tree / "pkg" / "gone.py").write_text("w = 0\n")
    patch = ("--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
             "--- a/pkg/b.py\n+++ b/pkg/b.py\n@@ -1,2 +1,2 @@\n-y = 1\n-z = 2\n+y = 3\n+z = 4\n"
             "diff --git a/pkg/gone.py b/pkg/gone.py\ndeleted file mode 100644\n--- a/pkg/gone.py\n+++ /dev/null\n"
             "@@ -1 +0,0 @@\n-w = 0\n"
             "--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1,2 @@\n+def f():\n+    return 1\n")
    changes = ranked(changed_files(tree, patch, {}))
    assert [(c.path, c.change, c.changed_lines) for c in changes] == [
        ("pkg/b.py", "modified", 4), ("pkg/a.py", "modified", 2), ("pkg/new.py", "added", 2),
        ("pkg/gone.py", "deleted", 1)]
    assert (tree / "pkg" / "a.py").read_text() == "x = 1\n"  # the case's tree is never touched

    cfg = SimpleNamespace(judge=JudgeSettings())
    case = SimpleNamespace(kind="patch", key="s/c", judged_files=2, description="d",
                           inputs=PatchInputs(problem_statement="fix it"))
    sample = SimpleNamespace(patch=patch, files={"pkg/ignored.py": "x = 0\n"})  # a patch case: its patch only
    monkeypatch.setattr(execute, "source_tree", lambda cfg, case: tree)
    out = judge_changes(cfg, case, sample, None, None, load_rubric(None))
    assert out.status == "not_configured"  # no key: no call
    assert [(f.path, f.judged) for f in out.files] == [("pkg/b.py", True), ("pkg/a.py", True),
                                                      ("pkg/new.py", False), ("pkg/gone.py", False)]


def test_judge_option_refused_on_a_migration_suite(tmp_path: Path) -> None:
    from evalkit.cases import discover

    suite = tmp_path / "cases" / "mig"
    suite.mkdir(parents=True)
    (suite / "suite.yaml").write_text("kind: migration\nlanguage: java\njudge: true\n")
    project = discover(tmp_path / "cases")
    problems = [str(p) for p in project.problems]
    assert any("suite.yaml:3" in p and "judge: is an option of e2e and patch suites" in p for p in problems), problems


def test_e2e_output_judged_on_its_final_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An e2e output's changed files are those of the final iteration's tree (execution's final_patch), not the
    first answer's; without an execution record nothing changed (decided, no call)."""
    from types import SimpleNamespace

    import evalkit.stages.execute as execute
    from evalkit.graders.judge_changes import judge_changes
    from evalkit.graders.rubric_config import load_rubric
    from evalkit.llm.settings import JudgeSettings
    from evalkit.sandbox.worktree import diff_trees

    tree, final = tmp_path / "tree", tmp_path / "final"
    for root, text in ((tree, "import javax.ejb.Stateless;\nclass A {}\n"), (final, "class A {}\n")):
        (root / "src").mkdir(parents=True)
        (root / "src" / "A.java").write_text(text)
    (final / "src" / "B.java").write_text("class B {}\n")
    cfg = SimpleNamespace(judge=JudgeSettings())
    case = SimpleNamespace(kind="e2e", key="e/c", judged_files=3, description="migrate",
                           inputs=E2EInputs.model_validate({"source_dir": "app", "instructions": "to Quarkus", "incidents": [
                               {"rule_id": "ejb-1", "file": "src/A.java", "line": 1, "message": "EJB"}]}))
    first = SimpleNamespace(patch=None, files={"src/C.java": "class C {}\n"})  # the first iteration's answer
    monkeypatch.setattr(execute, "source_tree", lambda cfg, case: tree)
    execution = SimpleNamespace(runs=[{"final_patch": diff_trees(tree, final)}])
    out = judge_changes(cfg, case, first, execution, None, load_rubric(None))
    assert out.status == "not_configured"
    assert [(f.path, f.change) for f in out.files] == [("src/A.java", "modified"), ("src/B.java", "added")]
    from evalkit.graders.judge_changes import FileChange, judge_item

    item = judge_item(case, FileChange(path="src/A.java", before="x", after="y"))
    assert [i.rule_id for i in item.incidents] == ["task", "ejb-1"] and item.language == "java"
    assert item.incidents[0].message == "to Quarkus" and item.legacy_code == "x" and item.generated_code == "y"
    none = judge_changes(cfg, case, first, None, None, load_rubric(None))
    assert none.status == "parser" and none.decided == "unchanged" and none.scores["semantic_equivalence_score"] == 0


def test_a_judged_patch_suite_names_its_rubric(tmp_path: Path) -> None:
    """`rubric:` on a patch suite is its judge's rubric with `judge:`, a problem at its line without."""
    from evalkit.cases import discover

    for judge, ok in (("judge: {max_files: 1}\n", True), ("", False)):
        root = tmp_path / ("judged" if ok else "plain")
        patch_project(root, backend="local", cases=["round-half-up"], systems=("gold",))
        suite = root / "cases" / "patch" / "suite.yaml"
        text = re.sub(r"(?m)^judge:.*\n", "", suite.read_text(encoding="utf-8"))
        suite.write_text(text + "rubric: kai_ci\n" + judge, encoding="utf-8")
        line = len(text.splitlines()) + 1
        project = discover(root / "cases")
        problems = [str(p) for p in project.problems]
        if ok:
            assert problems == [] and project.cases[0].judged_files == 1
            assert project.cases[0].rubric and project.cases[0].rubric.endswith("kai_ci")
        else:
            assert any(f"suite.yaml:{line}: rubric: only migration suites have a judge rubric, and patch or e2e "
                       "suites with `judge:`" in p for p in problems), problems


def test_estimate_is_an_upper_bound_for_an_e2e_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """#29: a judged e2e suite's estimate before the run counted the first answer's changed files (8 estimated,
    11 sent). The final tree may change up to max_files files: the plan counts that many, one system's apart from
    another's, and the judge then asks no more than that."""
    from types import SimpleNamespace

    import evalkit.graders.judge_changes as jc
    import evalkit.stages.execute as execute
    from evalkit.graders.migration_judge import decided_outcome
    from evalkit.graders.rubric_config import load_rubric
    from evalkit.llm.settings import JudgeSettings
    from evalkit.sandbox.worktree import diff_trees

    tree, final = tmp_path / "tree", tmp_path / "final"
    for root, text in ((tree, "import javax.ejb.Stateless;\nclass A {}\n"), (final, "class A { int a; }\n")):
        (root / "src").mkdir(parents=True)
        (root / "src" / "A.java").write_text(text)
    (final / "src" / "B.java").write_text("class B {}\n")
    (final / "src" / "C.java").write_text("class C { int c; }\n")
    settings = JudgeSettings(samples=2)
    cfg = SimpleNamespace(judge=settings)
    case = SimpleNamespace(kind="e2e", key="e/c", judged_files=3, description="migrate",
                           inputs=E2EInputs.model_validate({"source_dir": "app", "instructions": "to Quarkus",
                                                            "incidents": []}))
    monkeypatch.setattr(execute, "source_tree", lambda cfg, case: tree)
    from evalkit.fsutil import digest

    monkeypatch.setattr(jc, "rubric_for", lambda cfg, case: load_rubric(None))
    first = SimpleNamespace(patch=None, files={"src/A.java": "class A {}\n"})  # the first answer: one file
    planned = jc.planned_requests(cfg, case, first, True, "kai-full")
    other = jc.planned_requests(cfg, case, first, True, "kai-baseline")
    assert all(not exact for _, exact in planned)
    assert len(planned) == 3 * 2  # max_files items, each asked the judge's samples times
    keys, other_keys = ({digest(r.key_inputs()) for r, _ in p} for p in (planned, other))
    assert len(keys & other_keys) == 2  # only the first answer's own file is shared: the stand-ins are each system's
    # the real grading of the final tree (three changed files): it asks no more than planned
    asked: list[str] = []

    def fake_judge(item: Any, client: Any, settings: Any, rubric: Any) -> Any:
        asked.extend([item.generated_code] * settings.samples)
        return decided_outcome(rubric, decided="unchanged", error="counted")

    monkeypatch.setattr(jc, "judge_migration", fake_judge)
    execution = SimpleNamespace(runs=[{"final_patch": diff_trees(tree, final)}])
    jc.judge_changes(cfg, case, first, execution, object(), load_rubric(None))
    assert len(asked) == 6 and len(asked) <= len(planned)


@pytest.mark.parametrize("verdicts", [[], [{"semantic_equivalence_score": 4, "is_compilable": 1, "detailed_notes": "x"}]])
def test_a_judge_outcome_keeps_its_shape_through_grades_json(verdicts: list[dict[str, object]]) -> None:
    """grades.json's judge is read by shape (a changes outcome lists its files) and written by its own model: a
    changes outcome with verdicts was once written as a one-file outcome, losing its files (a plain union's
    serializer fell back to its first member)."""
    from evalkit.artifacts import GradesArtifact
    from evalkit.outcomes import ChangesJudgeOutcome, FileVerdict, JudgeOutcome

    files = [FileVerdict(path="src/A.java", change="modified", changed_lines=3, judged=True, scores={"s": 4.0})]
    for judge in (ChangesJudgeOutcome(status="judged", verdicts=verdicts, files=files, max_files=2),
                  ChangesJudgeOutcome(status="judged", verdicts=verdicts),
                  JudgeOutcome(status="judged", verdicts=verdicts)):
        grades = GradesArtifact(system="s", suite="patch", case_id="c", judge=judge)
        for data in (grades.model_dump_json(), json.dumps(grades.model_dump(mode="json"))):
            back = GradesArtifact.model_validate_json(data)
            assert type(back.judge) is type(judge) and back.judge == judge, data
        assert ("files" in grades.model_dump(mode="json")["judge"]) == isinstance(judge, ChangesJudgeOutcome)


def test_a_judge_outcome_read_through_its_artifact_is_written_in_a_fresh_process() -> None:
    """In a new process the outcome models are built on first use (evalkit.models._Deferred): an outcome that only
    its artifact's validator made (a case JSON read back) is still written by its own model."""
    code = (
        "import json\n"
        "from evalkit.artifacts import GradesArtifact\n"
        "data = {'system': 's', 'suite': 'patch', 'case_id': 'c', 'judge': {'status': 'judged', 'max_files': 2,\n"
        "        'files': [{'path': 'A.java', 'change': 'added', 'changed_lines': 1, 'judged': True}],\n"
        "        'verdicts': [{'semantic_equivalence_score': 4, 'detailed_notes': 'x'}]}}\n"
        "g = GradesArtifact.model_validate_json(json.dumps(data))\n"
        "print(json.dumps([g.model_dump(mode='json')['judge']['files'][0]['path'],\n"
        "                  json.loads(g.model_dump_json())['judge']['max_files'], type(g.judge).__name__]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["A.java", 2, "ChangesJudgeOutcome"]
