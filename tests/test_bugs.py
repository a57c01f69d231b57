"""An unexpected exception in a stage is an evalkit bug: status ``bug``, a short traceback, exit 4,
shown apart on the release page; not redone on a plain rerun, redone when evalkit's code changes or
with ``--retry-bugs``. Only infrastructure failures keep ``.retry`` markers.

The exception is injected into the grade stage of a real ``evalkit run`` by a ``sitecustomize``
module on the subprocess's PYTHONPATH (only when EVALKIT_TEST_INJECT_BUG is set). The runs use a
copy of the evalkit package, so that the test can change evalkit's code (and nothing else does).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from helpers import REPO, evalkit, executed, make_project

INJECT = '''
import os

if os.environ.get("EVALKIT_TEST_INJECT_BUG"):
    import evalkit.stages.grade as grade_module

    def grade(cfg, system, case, output, execution=None):
        if system.name == "naive":
            return {}["injected-missing-key"]  # a KeyError deep inside the stage
        return real(cfg, system, case, output, execution)

    real, grade_module.grade = grade_module.grade, grade
'''


def _code(tmp_path: Path) -> Path:
    """A copy of the evalkit package (and the pyproject.toml naming its own plug-ins), made once per test."""
    code = tmp_path / "code"
    if not code.exists():
        shutil.copytree(REPO / "evalkit", code / "evalkit", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(REPO / "pyproject.toml", code / "pyproject.toml")
    return code


def _env(tmp_path: Path, inject: bool) -> dict[str, str]:
    site = tmp_path / "inject"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(INJECT, encoding="utf-8")
    env = {"PYTHONPATH": f"{site}{os.pathsep}{_code(tmp_path)}"}
    if inject:
        env["EVALKIT_TEST_INJECT_BUG"] = "1"
    return env


def _grades(project: Path) -> dict[str, str]:
    root = project / ".evalkit" / "artifacts"
    return {p.parent.parent.parent.name + "/" + p.parent.name: json.loads(p.read_text(encoding="utf-8"))["status"]
            for p in sorted(root.glob("*/migration/*/grades.json"))}


def test_a_stage_exception_is_a_bug_not_retried_until_code_changes_or_asked(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj", cases=["jpa-entity", "cdi-inject"])
    first = evalkit(project, "run", env=_env(tmp_path, inject=True), check=False)
    assert first.returncode == 4, first.stderr
    assert _grades(project) == {"gold/cdi-inject": "ok", "gold/jpa-entity": "ok", "naive/cdi-inject": "bug",
                                "naive/jpa-entity": "bug", "rules/cdi-inject": "ok", "rules/jpa-entity": "ok"}
    grades = project / ".evalkit" / "artifacts" / "naive" / "migration" / "jpa-entity" / "grades.json"
    assert "KeyError" in json.loads(grades.read_text(encoding="utf-8"))["reason"]
    assert not Path(f"{grades}.retry").exists(), "a bug is not an infrastructure error"
    scores = json.loads((grades.parent / "scores.json").read_text(encoding="utf-8"))
    assert (scores["status"], scores["excluded"]) == ("bug", "bug")
    # a short traceback, not eighty lines of doit and evalkit
    block = first.stderr.split("BUG in grade of naive on migration/jpa-entity", 1)[1].split("evalkit: ", 1)[0]
    assert "injected-missing-key" in block and "Traceback (innermost" in block
    assert len(block.strip().splitlines()) <= 16  # 4 frames of up to 3 lines, the exception, the heading
    assert "evalkit bug in 2 stage(s) of system 'naive'" in first.stderr

    page = (project / "site" / "r1" / "index.html").read_text(encoding="utf-8")
    assert 'id="bugs-card"' in page and 'id="bugs"' in page
    assert "<strong>naive</strong>: 2 runs; first migration/" in page and "KeyError" in page
    report = json.loads((project / "site" / "r1" / "report.json").read_text(encoding="utf-8"))
    naive = next(s for s in report["systems"] if s["name"] == "naive")
    assert naive["status_counts"].get("bug") == 2

    # a plain rerun on the same code does not redo them (nor pay for them), and still says so (exit 4)
    again = evalkit(project, "run", env=_env(tmp_path, inject=False), check=False)
    assert again.returncode == 4, (executed(again), again.stderr)
    assert not {t for t in executed(again) if t.startswith("grade:")}
    assert _grades(project)["naive/jpa-entity"] == "bug"

    # other code (the record names the code that raised): redone
    record = project / ".evalkit" / "bugs" / "naive" / "migration" / "jpa-entity" / "grade.json"
    assert record.exists()
    with open(_code(tmp_path) / "evalkit" / "stages" / "grade.py", "a", encoding="utf-8") as fh:
        fh.write("\n# fixed\n")  # evalkit's code changed: both bugs are redone (and the grader works again)
    changed = evalkit(project, "run", env=_env(tmp_path, inject=False), check=False)
    assert {t for t in executed(changed) if t.startswith("grade:")} == {"grade:naive:migration/jpa-entity",
                                                                         "grade:naive:migration/cdi-inject"}
    assert set(_grades(project).values()) == {"ok"} and not record.exists()
    assert changed.returncode == 0, changed.stderr
    assert 'id="bugs"' not in (project / "site" / "r1" / "index.html").read_text(encoding="utf-8")


def test_retry_bugs_redoes_them_on_the_same_code(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj", cases=["jpa-entity"])
    assert evalkit(project, "run", env=_env(tmp_path, inject=True), check=False).returncode == 4
    plain = evalkit(project, "run", env=_env(tmp_path, inject=True), check=False)
    assert not {t for t in executed(plain) if t.startswith("grade:")}  # not retried on every run
    fixed = evalkit(project, "run", "--retry-bugs", env=_env(tmp_path, inject=False), check=False)
    assert fixed.returncode == 0, fixed.stderr
    assert {t for t in executed(fixed) if t.startswith("grade:")} == {"grade:naive:migration/jpa-entity"}
    assert set(_grades(project).values()) == {"ok"}


def test_a_system_taken_out_of_the_run_takes_its_bugs_with_it(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj", cases=["jpa-entity"])
    assert evalkit(project, "run", env=_env(tmp_path, inject=True), check=False).returncode == 4
    config = project / "evalkit.yaml"
    text = config.read_text(encoding="utf-8").replace("baseline: naive", "baseline: rules")
    start = text.index("  - name: naive")
    config.write_text(text[:start] + text[text.index("  - name: rules"):], encoding="utf-8")
    later = evalkit(project, "run", env=_env(tmp_path, inject=True), check=False)
    assert later.returncode == 0, later.stderr
    assert "evalkit bug" not in later.stderr
