"""Names the report site uses itself (issue 27, item 6): a case id `X.compare` names the file an older evalkit wrote
case X's compare page to (a render removes it), release labels `assets`, `schemas`, `compare`, `index.html`, `manifest.json` would write into
the site's shared folders and files, a suite `S.cases-2` would be suite S's second page of cases. Each is
refused at file:line: `check` exits 2; a run leaves that case or suite out (a release label refuses it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import evalkit, evalkit_here, make_project

from evalkit.names import case_id_problem, release_problem, suite_name_problem


def test_name_rules() -> None:
    for label in ("assets", "schemas", "compare", "docs", "index.html", "manifest.json", "Assets", "COMPARE"):
        assert release_problem(label) is not None, label
    for label in ("r1", "v2.0", "assets-2", "compare.v1", "index"):
        assert release_problem(label) is None, label
    assert ("its page (jpa.compare.html) is where the compare page of case 'jpa' was written"
            in str(case_id_problem("jpa.compare")))
    assert case_id_problem("jpa.Compare") is not None
    for ok in ("compare", "jpa.compared", "jpa-compare", "a.b"):
        assert case_id_problem(ok) is None, ok
    assert suite_name_problem("migration.cases-2") is not None and suite_name_problem("migration.cases") is None
    assert release_problem("../x") is not None and case_id_problem("../x") is not None  # the name rule first


def test_case_id_ending_in_compare_is_refused_and_the_other_page_survives(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    src = project / "cases/migration/cdi-inject"
    clash = project / "cases/migration/clash"
    shutil.copytree(src, clash)
    case = clash / "case.yaml"
    text = case.read_text()
    assert text.startswith("id: cdi-inject\n")
    case.write_text(text.replace("id: cdi-inject\n", "id: jpa-entity.compare\n", 1))
    named = project / "cases/migration/jpa-entity.compare"  # no id: the folder name stands in for it
    shutil.copytree(src, named)
    (named / "case.yaml").write_text(text.replace("id: cdi-inject\n", "", 1))
    chk = evalkit_here(project, "check", check=False)
    assert chk.returncode == 2, chk.stderr
    assert ("cases/migration/clash/case.yaml:1: case id 'jpa-entity.compare' ends in '.compare': its page "
            "(jpa-entity.compare.html) is where the compare page of case 'jpa-entity' was written") in chk.stderr
    assert "cases/migration/jpa-entity.compare/case.yaml:1: case id 'jpa-entity.compare' ends in '.compare'" in chk.stderr
    run = evalkit(project, "run")
    assert "Traceback" not in run.stderr
    assert not (project / "site/r1/cases/migration/jpa-entity.compare.html").exists(), "the clashing case has no page"
    assert not (project / "site/r1/cases/migration/jpa-entity.compare.json").exists()
    detail = project / "site/r1/cases/migration/jpa-entity.json"
    assert detail.exists()


@pytest.mark.parametrize("label", ["assets", "schemas", "compare", "index.html", "manifest.json", "Schemas"])
def test_release_label_the_site_uses_is_refused(tmp_path: Path, label: str) -> None:
    project = make_project(tmp_path / "p")
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("release: r1", f"release: {label}"))
    chk = evalkit_here(project, "check", check=False)
    assert chk.returncode == 2, chk.stderr
    assert f"evalkit.yaml:1: release label {label!r} is a name the report site uses for its shared" in chk.stderr
    run = evalkit(project, "run", check=False)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert not (project / "site").exists()


def test_release_option_the_site_uses_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    proc = evalkit(project, "run", "--release", "compare", check=False)
    assert proc.returncode == 2, proc.stderr
    assert "EVALKIT_RELEASE (or --release): release label 'compare' is a name the report site uses" in proc.stderr
    assert not (project / "site").exists()


def test_suite_named_like_a_page_of_cases_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    shutil.copytree(project / "cases/migration", project / "cases/migration.cases-2")
    chk = evalkit_here(project, "check", check=False)
    assert chk.returncode == 2, chk.stderr
    assert "cases/migration.cases-2: suite folder name 'migration.cases-2' ends in '.cases-<k>'" in chk.stderr
