"""doit reruns exactly what a change touches (issue: the spine, item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import make_project, run

CASES = ["migration/cdi-inject", "migration/jpa-entity"]
SYSTEMS = ["naive", "rules", "gold"]


def tasks(stages: list[str], systems: list[str] = SYSTEMS, cases: list[str] = CASES) -> set[str]:
    return {f"{st}:{sy}:{c}" for st in stages for sy in systems for c in cases}


TAIL = {"summarize", "render:r1"}


def validated(cases: list[str] = CASES) -> set[str]:
    """The reference validation of each case (gold must pass its own case) and its health (ablations of the
    reference), redone when the case changes."""
    return {f"validate:{c}" for c in cases} | {f"health:{c}" for c in cases}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_project(tmp_path_factory.mktemp("proj") / "p")
    first = run(root)
    assert first == tasks(["generate", "grade", "score"]) | validated() | TAIL
    return root


def test_nothing_changed_nothing_runs(project: Path) -> None:
    assert run(project) == set()


def test_edit_one_case_reruns_that_case_for_every_system(project: Path) -> None:
    case = project / "cases/migration/jpa-entity/case.yaml"
    case.write_text(case.read_text().replace("tags: [", "tags: [edited, "))
    assert run(project) == tasks(["generate", "grade", "score"], cases=["migration/jpa-entity"]) | validated(["migration/jpa-entity"]) | TAIL
    assert run(project) == set()


def test_edit_a_case_file_reruns_that_case(project: Path) -> None:
    legacy = project / "cases/migration/cdi-inject/legacy/OrderService.java"
    legacy.write_text(legacy.read_text() + "\n// touched\n")
    assert run(project) == tasks(["generate", "grade", "score"], cases=["migration/cdi-inject"]) | validated(["migration/cdi-inject"]) | TAIL
    assert run(project) == set()


def test_change_one_system_reruns_that_system(project: Path) -> None:
    cfg = project / "evalkit.yaml"
    text = cfg.read_text()
    cfg.write_text(text.replace('"evalkit.demo_systems.rule_rewriter"]',
                                '"evalkit.demo_systems.rule_rewriter"]\n    timeout_s: 30'))
    assert run(project) == tasks(["generate", "grade", "score"], systems=["rules"]) | TAIL
    assert run(project) == set()


def test_change_grader_setting_reruns_grade_and_score(project: Path) -> None:
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text() + "judge:\n  samples: 2\n")
    assert run(project) == tasks(["grade", "score"]) | TAIL
    assert run(project) == set()


def test_edit_template_reruns_render_only(project: Path) -> None:
    css = project / "templates/site/assets/style.css"
    css.write_text(css.read_text() + "\n/* edited */\n")
    assert run(project) == {"render:r1"}
    page = project / "templates/site/release.html.j2"
    page.write_text(page.read_text() + "\n{# edited #}\n")
    assert run(project) == {"render:r1"}
    assert run(project) == set()


def test_subset_run_keeps_other_results(project: Path) -> None:
    for name in ("jpa-entity", "cdi-inject"):
        legacy = next((project / f"cases/migration/{name}/legacy").iterdir())
        legacy.write_text(legacy.read_text() + "\n// subset\n")
    ran = run(project, "--select", "migration/jpa-*")
    assert ran == tasks(["generate", "grade", "score"], cases=["migration/jpa-entity"]) | validated(["migration/jpa-entity"]) | TAIL
    # the other case was not touched by the subset run and is redone by the full run only
    assert run(project) == tasks(["generate", "grade", "score"], cases=["migration/cdi-inject"]) | validated(["migration/cdi-inject"]) | TAIL
    assert run(project) == set()


def test_second_release_leaves_first_readable(project: Path) -> None:
    ran = run(project, "--release", "r2")
    assert ran == {"summarize", "render:r2"}, "a new release label must not redo generate/grade/score"
    site = project / "site"
    assert (site / "r1" / "index.html").exists() and (site / "r2" / "index.html").exists()
    index = (site / "index.html").read_text()
    assert "r1/index.html" in index and "r2/index.html" in index
    assert index.index("r2/index.html") < index.index("r1/index.html"), "newest release first"


def test_an_artifact_marked_for_retry_is_redone_next_run(project: Path) -> None:
    # write_artifact leaves a `.retry` marker beside an artifact that recorded an infrastructure
    # error; the next run redoes that task (only: the same grades leave score up to date)
    run(project)  # settle whatever the tests before left
    grades = project / ".evalkit/artifacts/naive/migration/jpa-entity/grades.json"
    assert grades.exists()
    marker = grades.with_name("grades.json.retry")
    marker.touch()
    assert run(project) == {"grade:naive:migration/jpa-entity"}
    assert not marker.exists(), "a run that ends without an infrastructure error clears the marker"
    assert run(project) == set()
