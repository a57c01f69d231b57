"""The judge's reliability in a real run: people's labels beside demo migration cases, a loopback
Messages API whose verdicts follow a fixed rule (so every kappa is known beforehand from
scikit-learn), doit, report.json and the release page. Also: a label edit re-summarizes without a
judge call, bad labels are file:line problems (check exits 2), stale labels are left out, the
agreement with tests, and a leaderboard passing over an uncalibrated headline."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from fake_server import FakeAnthropic, Reply
from helpers import evalkit, executed, make_project

KEY = "sk-ant-test-calibration-0000"
CASES = ["ejb-stateless", "persistence-context", "jms-message-driven", "cdi-inject"]
SCALE = [1, 2, 3, 4, 5]
GENERATED = re.compile(r"<<<BEGIN DATA (\w+): generated file>>>\n(.*)\n<<<END DATA \1>>>", re.S)


def judge_rule(code: str) -> dict:
    """What the loopback judge answers for a generated file (a plain, deterministic reviewer)."""
    ejb = "jakarta.ejb" in code or "javax.ejb" in code
    return {"semantic_equivalence_score": 2 if ejb else 5,
            "rule_adherence_score": 1 if ejb or "@PersistenceContext" in code else 5,
            "faithfulness_score": 4,  # always 4: agrees with people no better than chance (kappa 0)
            "code_quality_score": 3 if ejb else 5,
            "is_compilable": not ejb}


def responder(body: dict) -> Reply:
    prompt = "".join(block["text"] for m in body["messages"] for block in
                     (m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}]))
    code = GENERATED.search(prompt).group(2)
    return Reply(text="Reviewed.\n```json\n" + json.dumps({**judge_rule(code), "detailed_notes": "ok"}) + "\n```")


# people's labels: (labeller, case, system) -> fields (a careful reading of the demo rewriters' outputs)
PERFECT = {"semantic_equivalence_score": 5, "rule_adherence_score": 5, "faithfulness_score": 5,
           "code_quality_score": 5, "is_compilable": True}
MDB = {"semantic_equivalence_score": 2, "rule_adherence_score": 1, "faithfulness_score": 4,
       "code_quality_score": 2, "is_compilable": False}
LABELS = {
    ("alice", "ejb-stateless", "naive"): {"semantic_equivalence_score": 3, "rule_adherence_score": 2,
                                          "faithfulness_score": 4, "code_quality_score": 3, "is_compilable": False},
    ("alice", "ejb-stateless", "rules"): PERFECT,
    ("alice", "ejb-stateless", "gold"): PERFECT,
    ("alice", "persistence-context", "naive"): {"semantic_equivalence_score": 4, "rule_adherence_score": 3,
                                                "faithfulness_score": 5, "code_quality_score": 4, "is_compilable": True},
    ("alice", "persistence-context", "rules"): PERFECT,
    ("alice", "persistence-context", "gold"): PERFECT,
    ("alice", "jms-message-driven", "naive"): MDB,
    ("alice", "jms-message-driven", "rules"): MDB,
    ("alice", "jms-message-driven", "gold"): {**PERFECT, "code_quality_score": 4},
    ("alice", "cdi-inject", "naive"): PERFECT,
    ("alice", "cdi-inject", "rules"): PERFECT,
    ("bob", "ejb-stateless", "naive"): {"semantic_equivalence_score": 3, "rule_adherence_score": 1,
                                        "faithfulness_score": 4, "code_quality_score": 2, "is_compilable": False},
    ("bob", "ejb-stateless", "rules"): PERFECT,
    ("bob", "persistence-context", "naive"): {"semantic_equivalence_score": 5, "rule_adherence_score": 2,
                                              "faithfulness_score": 5, "code_quality_score": 4, "is_compilable": True},
    ("bob", "jms-message-driven", "naive"): {**MDB, "semantic_equivalence_score": 1, "faithfulness_score": 3},
    ("bob", "jms-message-driven", "rules"): {**MDB, "semantic_equivalence_score": 1, "faithfulness_score": 3},
}


def write_labels(project: Path, labels: dict, clear: bool = True) -> None:
    """labels/<who>.yaml files; ``clear``: first remove the demo's own labels (of the demo's system names)."""
    if clear:
        for old in (project / "cases" / "migration").glob("*/labels/*.yaml"):
            old.unlink()
    by_file: dict[tuple[str, str], list[str]] = {}
    for (who, case, system), values in labels.items():
        lines = [f"{system}:"] + [f"  {k}: {json.dumps(v)}" for k, v in values.items()]
        by_file.setdefault((case, who), []).extend(lines)
    for (case, who), lines in by_file.items():
        folder = project / "cases" / "migration" / case / "labels"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{who}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def sk(a: list, b: list, weights: str | None, labels: list) -> float:
    from sklearn.metrics import cohen_kappa_score  # here, not at the top: every xdist worker collects this file

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(a, b, weights=weights, labels=labels))


def output_code(project: Path, system: str, case: str) -> str:
    out = json.loads((project / f".evalkit/artifacts/{system}/migration/{case}/output.json").read_text())
    (code,) = out["samples"][0]["files"].values()
    return code


@pytest.fixture
def server():
    with FakeAnthropic(responder=responder) as s:
        yield s


def test_kappas_against_people_match_sklearn_and_mark_uncalibrated(tmp_path: Path, server: FakeAnthropic) -> None:
    project = make_project(tmp_path / "p", cases=CASES,
                           extra=f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n")
    write_labels(project, LABELS)
    env = {"ANTHROPIC_API_KEY": KEY}
    evalkit(project, "run", "-q", env=env)
    calls = server.message_calls()
    assert calls > 0
    report = json.loads((project / "site/r1/report.json").read_text())
    cal = report["calibration"]
    fields = {f["field"]: f for f in cal["fields"]}
    assert cal["labellers"] == ["alice", "bob"] and cal["problems"] == [] and cal["stale"] == []
    # the expected kappas, from the judge's rule applied to the outputs the run produced
    judged = {(case, system): judge_rule(output_code(project, system, case)) for (_, case, system) in LABELS}
    for name, weights in [("semantic_equivalence_score", "quadratic"), ("rule_adherence_score", "quadratic"),
                          ("code_quality_score", "quadratic"), ("is_compilable", None)]:
        cats = SCALE if weights else [False, True]
        judge = [judged[(case, system)][name] for (_, case, system) in LABELS]
        people = [values[name] for values in LABELS.values()]
        got = fields[name]["vs_people"]
        assert got["n"] == len(LABELS) == 16 and got["n_items"] == 11
        assert got["kappa"] == pytest.approx(sk(judge, people, weights, cats), abs=1e-9), name
        if got["low"] is None:  # every resample the same kappa (perfect agreement): no zero-width interval
            assert got["kappa"] == 1.0 and got["high"] is None and "no interval" in got["method"], got
        else:
            assert got["low"] <= got["kappa"] <= got["high"] and got["low"] < got["high"]
        # alice against bob on the five outputs both labelled
        shared = [(c, s) for (w, c, s) in LABELS if w == "bob"]
        a = [LABELS[("alice", c, s)][name] for c, s in shared]
        b = [LABELS[("bob", c, s)][name] for c, s in shared]
        pair = fields[name]["between_people"]
        if len(set(a) | set(b)) == 1:
            assert pair[0]["agreement"]["kappa"] is None
        else:
            assert pair[0]["first"] == "alice" and pair[0]["agreement"]["n"] == 5
            assert pair[0]["agreement"]["kappa"] == pytest.approx(sk(a, b, weights, cats), abs=1e-9), name
    # people-corrected means (PPI): every output's judge metric (scores.json), corrected by the mean of its labels
    for name, metric in [("semantic_equivalence_score", "judge_semantic_equivalence"), ("is_compilable", "judge_compilable")]:
        rows = []
        for f in sorted((project / ".evalkit/artifacts").glob("*/migration/*/scores.json")):
            system, case = f.parts[-4], f.parts[-2]
            value = json.loads(f.read_text())["metrics"].get(metric)
            mine = [float(v[name]) for (_, c, s_), v in LABELS.items() if (c, s_) == (case, system) and name in v]
            if value is not None:
                rows.append((float(value), float(np.mean(mine)) if mine else None))
        f_all = np.array([r[0] for r in rows])
        f_lab = np.array([r[0] for r in rows if r[1] is not None])
        d = np.array([r[1] - r[0] for r in rows if r[1] is not None])
        big_n, n = len(f_all), len(d)
        theta = f_all.mean() + d.mean()
        half = 1.959963984540054 * np.sqrt(f_all.var(ddof=1) / big_n + d.var(ddof=1) / n
                                           + 2 * np.cov(f_lab, d)[0, 1] / big_n)
        lo, hi = (1, 5) if name.endswith("score") else (0, 1)
        ppi = fields[name]["ppi"]
        assert (ppi["n_outputs"], ppi["n_labelled"]) == (big_n, n) == (12, 11), ppi
        assert ppi["judge_mean"] == pytest.approx(f_all.mean()) and ppi["value"] == pytest.approx(theta)
        assert ppi["low"] == pytest.approx(max(lo, theta - half)) and ppi["high"] == pytest.approx(min(hi, theta + half))
        assert set(fields[name]["ppi_by_system"]) == {"gold", "naive", "rules"}
    sem_ppi = fields["semantic_equivalence_score"]["ppi"]
    assert sem_ppi["approximate"] is False and sem_ppi["value"] != pytest.approx(sem_ppi["judge_mean"])
    # the always-4 faithfulness agrees with people no better than chance: uncalibrated, and so is the mean it weighs in
    faith = fields["faithfulness_score"]
    assert faith["vs_people"]["kappa"] == pytest.approx(0.0, abs=1e-12) and faith["status"] == "uncalibrated"
    assert fields["is_compilable"]["status"] == "calibrated"
    assert set(cal["uncalibrated_metrics"]) == {"judge_faithfulness", "judge_mean"}
    assert report["metric_info"]["judge_faithfulness"]["uncalibrated"].startswith("kappa 0.00 vs people (n=16)")
    assert report["metric_info"]["judge_semantic_equivalence"]["uncalibrated"] is None
    page = (project / "site/r1/index.html").read_text()
    line = page[page.index('id="calibration-judge_semantic_equivalence"'):]
    line = line[:line.index("</li>")]
    assert f"{fields['semantic_equivalence_score']['vs_people']['kappa']:.2f}" in line and "n = 16" in line
    assert (f'Corrected by people (PPI): <strong>{sem_ppi["value"]:.2f}</strong> <span class="ci">'
            f'[{sem_ppi["low"]:.2f}, {sem_ppi["high"]:.2f}]</span>') in line
    assert f'judge mean {sem_ppi["judge_mean"]:.2f}' in line and "n = 11 labelled of N = 12 outputs" in line
    assert page.count('data-ppi="judge_semantic_equivalence"') == 1 and page.count('"Corrected by people" is') == 1
    assert 'data-status="uncalibrated"' in page[page.index('id="calibration-judge_faithfulness"'):][:200]
    suite_page = (project / "site/r1/suites/migration.html").read_text()
    assert re.search(r"Judge faithfulness</abbr> <span class=\"badge s-infra_error uncal\"", suite_page)
    assert not re.search(r"Judge semantic equivalence</abbr> <span class=\"badge s-infra_error uncal\"", suite_page)

    # a label edit: summarize and render again, no grade task, no judge call; the figure follows the labels
    (project / "cases/migration/cdi-inject/labels/alice.yaml").write_text(
        "naive:\n  semantic_equivalence_score: 1\nrules:\n  semantic_equivalence_score: 5\n", encoding="utf-8")
    done = executed(evalkit(project, "run", env=env))
    assert "summarize" in done and not any(t.startswith(("grade", "generate", "score")) for t in done)
    assert server.message_calls() == calls
    edited = {**LABELS, ("alice", "cdi-inject", "naive"): {"semantic_equivalence_score": 1},
              ("alice", "cdi-inject", "rules"): {"semantic_equivalence_score": 5}}
    after = {f["field"]: f for f in json.loads((project / "site/r1/report.json").read_text())["calibration"]["fields"]}
    judge = [judged[(case, system)]["semantic_equivalence_score"] for (_, case, system) in edited]
    people = [values["semantic_equivalence_score"] for values in edited.values()]
    got = after["semantic_equivalence_score"]["vs_people"]
    assert got["kappa"] == pytest.approx(sk(judge, people, "quadratic", SCALE), abs=1e-9)
    assert got["kappa"] < fields["semantic_equivalence_score"]["vs_people"]["kappa"]
    assert after["is_compilable"]["vs_people"]["n"] == 14  # cdi-inject's two labels no longer give that field


def test_offline_run_says_no_judged_outputs_and_check_names_bad_labels(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", cases=["ejb-stateless", "cdi-inject"])
    write_labels(project, {k: v for k, v in LABELS.items() if k[1] in ("ejb-stateless", "cdi-inject")}, clear=False)
    # bound to an output that is not the one the run makes: stale, left out
    (project / "cases/migration/cdi-inject/labels/carol.yaml").write_text(
        "rules:\n  output_sha256: 0123456789ab\n  is_compilable: true\n", encoding="utf-8")
    evalkit(project, "run", "-q", env={"ANTHROPIC_API_KEY": ""})
    cal = json.loads((project / "site/r1/report.json").read_text())["calibration"]
    sem = next(f for f in cal["fields"] if f["field"] == "semantic_equivalence_score")
    assert sem["status"] == "unmeasured" and sem["judged"] == 0 and sem["unjudged"] == sem["labels"] == 7
    assert sem["vs_people"]["n"] == 0 and sem["vs_people"]["kappa"] is None
    assert cal["stale"] == ["cases/migration/cdi-inject/labels/carol.yaml:1 (rules)"]
    assert cal["uncalibrated_metrics"] == {}
    assert cal["outside_run"] == 9  # the demo's own labels name the demo's systems (rewriters and recorded-assistant)
    page = (project / "site/r1/index.html").read_text()
    assert "n = 0</strong>, no judged outputs" in page and "left out as stale" in page
    # bad labels: file:line and what was expected, exit 2
    (project / "cases/migration/ejb-stateless/labels/dave.yaml").write_text(
        "rules:\n  semantic_equivalence_score: 9\n  is_compilable: maybe\n  tone: 3\n", encoding="utf-8")
    proc = evalkit(project, "check", check=False)
    assert proc.returncode == 2
    out = proc.stdout + proc.stderr
    assert "cases/migration/ejb-stateless/labels/dave.yaml:2: rules.semantic_equivalence_score" in out
    assert "an integer from 1 to 5, got 9" in out
    assert "dave.yaml:3: rules.is_compilable" in out and "dave.yaml:4: rules.tone: unknown key" in out


def test_agreement_with_tests_two_by_two() -> None:
    from types import SimpleNamespace

    from evalkit.graders.rubric_config import shipped
    from evalkit.report.calibration import _vs_tests
    from evalkit.stats import rate
    from evalkit.agreement import agreement

    rubric = shipped("codejudge")
    settings = SimpleNamespace(high_from_top=2)
    call = lambda model, fn, *a, **k: fn(*a, **k)  # noqa: E731
    sem, comp = rubric.field("semantic_equivalence_score"), rubric.field("is_compilable")
    rows = [  # (tests pass, semantic score, compilable)
        (True, 5, True), (True, 4, True), (True, 2, False), (False, 5, True), (False, 4, True),
        (False, 1, False), (False, 3, True), (True, 5, True), (False, 2, False), (True, 3, False)]
    tests = [(f"o{i}", passed, [{"semantic_equivalence_score": s, "is_compilable": c}], "resolved")
             for i, (passed, s, c) in enumerate(rows)]
    got = _vs_tests(call, sem, tests, settings, 0, 500)
    assert (got.both_pass, got.judge_pass_tests_fail, got.judge_fail_tests_pass, got.both_fail) == (3, 2, 2, 3)
    assert got.judge_pass == "4 or more" and got.test_metric == "resolved"
    judge_pass = [s >= 4 for _, s, _ in rows]
    passed = [p for p, _, _ in rows]
    assert got.agreement.kappa == pytest.approx(sk(judge_pass, passed, None, [False, True]), abs=1e-9)
    assert got.failing_rated_pass == rate(2, 5)
    assert got.agreement == agreement("semantic_equivalence_score", "boolean", [t[0] for t in tests], judge_pass,
                                      passed, [False, True], n_resamples=500, seed=0)
    c = _vs_tests(call, comp, tests, settings, 0, 500)
    assert (c.both_pass, c.judge_pass_tests_fail, c.judge_fail_tests_pass, c.both_fail) == (3, 3, 2, 2)
    assert _vs_tests(call, sem, [], settings, 0, 500) is None


def test_leaderboard_passes_over_an_uncalibrated_headline() -> None:
    from evalkit.metrics.registry import METRICS
    from evalkit.report.leaderboard import suite_leaderboard
    from evalkit.report.models import Aggregate, SuiteSummary

    def agg(m: str, v: float) -> Aggregate:
        return Aggregate(metric=m, n=3, value=v, method="bca")

    suite = SuiteSummary(name="migration", kind="migration", language="java", description="", n_cases=3,
                         metrics=["judge_mean", "codebleu"], comparisons=[], broken=[],
                         systems={"a": {"judge_mean": agg("judge_mean", 4.0), "codebleu": agg("codebleu", 0.1)},
                                  "b": {"judge_mean": agg("judge_mean", 3.0), "codebleu": agg("codebleu", 0.5)}})
    info = {m: METRICS[m] for m in ("judge_mean", "codebleu")}
    assert suite_leaderboard(suite, [], info).metric == "judge_mean"
    marked = {**info, "judge_mean": info["judge_mean"].model_copy(update={"uncalibrated": "kappa 0.20 vs people"})}
    board = suite_leaderboard(suite, [], marked)
    assert board.metric == "codebleu" and [e.system for e in board.entries] == ["b", "a"]
    assert board.passed_over == {"judge_mean": "kappa 0.20 vs people"}
