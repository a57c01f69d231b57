"""Coverage: a recorded system without an output for a case did not attempt it. Left out of its rates,
shown as attempted / cases in report.json and on the pages, paired with others only where it answered;
degenerate recorded answers (empty, the legacy file unchanged) are judged without a model."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from helpers import evalkit, make_project

CASES = ["jpa-entity", "cdi-inject", "ejb-stateless"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cov") / "p"
    root.mkdir(parents=True)
    systems = textwrap.dedent("""\
        systems:
          - name: naive
            adapter: command
            command: ["{python}", "-m", "evalkit.demo_systems.naive_rewriter"]
          - name: partial
            adapter: recorded
            path: recorded/partial
          - name: lazy
            adapter: recorded
            path: recorded/lazy
        """)
    make_project(root, cases=CASES, systems=systems)
    src = root / "cases" / "migration"
    # partial: a good answer for jpa-entity only, nothing for the two others
    expected = (src / "jpa-entity" / "expected" / "Order.java").read_text(encoding="utf-8")
    write(root / "recorded/partial/migration/jpa-entity.json",
          {"files": {"src/main/java/com/acme/orders/Order.java": expected}})
    # lazy: the legacy file back (CRLF) on jpa-entity, an empty answer on cdi-inject, no output on ejb-stateless
    legacy = (src / "jpa-entity" / "legacy" / "Order.java").read_text(encoding="utf-8")
    write(root / "recorded/lazy/migration/jpa-entity.json",
          {"files": {"src/main/java/com/acme/orders/Order.java": legacy.replace("\n", "\r\n")}})
    write(root / "recorded/lazy/migration/cdi-inject.json", {"files": {}})
    evalkit(root, "run", env={"ANTHROPIC_API_KEY": ""})
    return root


def write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def scores(root: Path, system: str, case: str) -> dict:
    return json.loads((root / f".evalkit/artifacts/{system}/migration/{case}/scores.json").read_text())


def report(root: Path) -> dict:
    return json.loads((root / "site/r1/report.json").read_text())


def test_a_missing_recorded_output_is_not_attempted_not_failed(project: Path) -> None:
    for case in ("cdi-inject", "ejb-stateless"):
        s = scores(project, "partial", case)
        assert s["status"] == "not_attempted" and s["excluded"] == "not_attempted", s
        assert "no recorded output" in s["reason"] and s["metrics"] == {}
    rep = report(project)
    systems = {s["name"]: s for s in rep["systems"]}
    partial = systems["partial"]
    assert partial["status_counts"] == {"not_attempted": 2, "ok": 1}
    assert partial["coverage"] == {"attempted": 1, "cases": 3}
    assert systems["naive"]["coverage"] == {"attempted": 3, "cases": 3}
    suite = rep["suites"][0]
    assert suite["coverage"]["partial"] == {"attempted": 1, "cases": 3}
    assert suite["coverage"]["lazy"] == {"attempted": 2, "cases": 3}
    # rates over the attempted case only: one of one answered, not one of three
    answered = suite["systems"]["partial"]["answered"]
    assert answered["value"] == 1.0 and answered["n"] == 1 and answered["excluded"] == {"not_attempted": 2}


def test_paired_comparisons_use_the_cases_both_attempted(project: Path) -> None:
    comps = [c for c in report(project)["suites"][0]["comparisons"] if c["metric"] == "answered"]
    pairs = {c["system"]: c["n_pairs"] for c in comps}
    assert pairs == {"partial": 1, "lazy": 2}


def test_degenerate_recorded_answers(project: Path) -> None:
    unchanged = scores(project, "lazy", "jpa-entity")
    assert unchanged["metrics"]["answered"] == 1.0 and unchanged["metrics"]["unchanged"] == 1.0
    assert unchanged["metrics"]["complete"] == 1.0
    empty = scores(project, "lazy", "cdi-inject")
    assert empty["status"] == "ok" and empty["metrics"]["answered"] == 0.0 and empty["metrics"]["complete"] == 0.0
    # every assertion of the empty answer fails, the negative ones (not_contains javax) included
    grades = json.loads((project / ".evalkit/artifacts/lazy/migration/cdi-inject/grades.json").read_text())
    assert grades["assertions"] and not any(a["passed"] for a in grades["assertions"])
    assert any(a["type"].startswith("not_") for a in grades["assertions"])
    # the judge decided both without a model (no key is set: a model could not have answered)
    for case, decided in (("jpa-entity", "unchanged"), ("cdi-inject", "empty")):
        g = json.loads((project / f".evalkit/artifacts/lazy/migration/{case}/grades.json").read_text())
        assert g["judge"]["status"] == "parser" and g["judge"]["decided"] == decided
        s = scores(project, "lazy", case)
        assert s["metrics"]["judge_mean"] == 0.0 and s["metrics"]["judge_compilable"] == 0.0
        assert s["judge_usage"]["cost_usd"] == 0
    good = scores(project, "partial", "jpa-entity")["metrics"]
    assert good["unchanged"] == 0.0 and good["complete"] == 1.0 and "judge_mean" not in good  # no key: not judged


def test_pages_show_coverage(project: Path) -> None:
    release = (project / "site/r1/index.html").read_text(encoding="utf-8")
    suite_page = (project / "site/r1/suites/migration.html").read_text(encoding="utf-8")
    for html in (release, suite_page):
        assert "Coverage</strong> (cases attempted / cases): lazy 2 / 3; partial 1 / 3." in html
    # the suite's leaderboard gives each system's coverage in its own row
    board = release.split('<table class="grid sortable lb">', 1)[1].split("</table>", 1)[0]
    rows = {r.split("</th>", 1)[0]: r for r in board.split("<tr")[1:]}
    assert any("partial" in head and "1 / 3" in row for head, row in rows.items()), board[:2000]
    assert any("lazy" in head and "2 / 3" in row for head, row in rows.items()), board[:2000]
    case_page = (project / "site/r1/cases/migration/ejb-stateless.html").read_text(encoding="utf-8")
    assert "○ not attempted" in case_page
