"""`evalkit init`: a runnable project from an empty folder, with a first release evaluated so that the
first `evalkit run` shows release against release."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ruamel.yaml import YAML

from evalkit.cli.init import demo_suites
from helpers import evalkit_here
from zygote import python_m_evalkit


def evalkit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EVALKIT_CONFIG", "EVALKIT_RELEASE", "EVALKIT_SELECT")}
    env.update(ANTHROPIC_API_KEY="", ANTHROPIC_API_KEYS="")
    return python_m_evalkit(list(args), cwd=cwd, env=env, timeout=600)


def test_init_then_run_shows_v2_against_v1(tmp_path: Path) -> None:
    made = evalkit(tmp_path, "init", "proj", "--kind", "migration", "--kind", "generation")
    assert made.returncode == 0, made.stdout + made.stderr
    root = tmp_path / "proj"
    assert sorted(p.name for p in (root / "cases").iterdir()) == ["generation", "migration"]
    assert (root / ".github" / "workflows" / "evalkit.yml").is_file()
    workflow = YAML(typ="safe").load((root / ".github" / "workflows" / "evalkit.yml").read_text())
    steps = [s.get("run") for s in workflow["jobs"]["evaluate"]["steps"]]
    assert "evalkit check" in steps and "evalkit run" in steps
    assert "${{ secrets.ANTHROPIC_API_KEY }}" in (root / ".github" / "workflows" / "evalkit.yml").read_text()
    config = (root / "evalkit.yaml").read_text()
    assert config.count("\n#") >= 10  # it explains itself
    assert YAML(typ="safe").load(config)["release"] == "v2"
    assert (root / "site" / "v1" / "report.json").is_file()  # the history is there before the first run

    assert evalkit_here(root, "check").returncode == 0
    ran = evalkit(root, "run", "-q")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads((root / "site" / "v2" / "report.json").read_text())
    assert report["diff"]["previous_release"] == "v1"
    improved = {(m["suite"], m["metric"]) for m in report["diff"]["systems"]["migrator"]["improved"]}
    assert ("migration", "assertion_score") in improved  # v2's rule-aware migrator does better than v1's
    assert report["diff"]["systems"]["codegen"]["improved"] and not report["diff"]["systems"]["codegen"]["regressed"]
    manifest = json.loads((root / "site" / "manifest.json").read_text())
    assert [r["release"] for r in manifest["releases"]][:2] in (["v2", "v1"], ["v1", "v2"])


def test_every_kind_gives_a_project_check_accepts(tmp_path: Path) -> None:
    made = evalkit(tmp_path, "init", "all", "--no-history")
    assert made.returncode == 0, made.stdout + made.stderr
    root = tmp_path / "all"
    assert sorted(p.name for p in (root / "cases").iterdir()) == demo_suites()
    assert (Path(__file__).resolve().parents[1] / "cases" / "migration" / "_recorded").is_dir()  # the repo's demo has it
    # the demo's recorded system (cases/migration/_recorded) is the repository's own; nothing in a new project uses it
    assert not list(root.rglob("_recorded")) and not list(root.rglob("*.grades.json"))
    checked = evalkit_here(root, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    names = {s["name"] for s in YAML(typ="safe").load((root / "evalkit.yaml").read_text())["systems"]}
    assert names == {"migrator", "fixer", "codegen", "hinter", "kai", "gold"}


def test_init_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    refused = evalkit(tmp_path, "init", "busy")
    assert refused.returncode == 2 and "not empty" in refused.stderr
    assert sorted(p.name for p in (tmp_path / "busy").iterdir()) == ["notes.txt"]
