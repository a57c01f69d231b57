"""Issue 16 item 7: relative paths in a system's `command` resolve against the config's folder
whatever the current folder, and `evalkit run` exits 3 (saying which system and how many cases)
when every case of some system failed; a normal run still exits 0."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from helpers import evalkit, evalkit_here, make_project

from evalkit.systems.command import resolve_command

GENERATOR = textwrap.dedent("""\
    import json, os, sys
    case = json.load(sys.stdin)
    src = open(os.path.join("inputs", case["files"]["inputs.legacy_file"].split("inputs/", 1)[1])).read()
    print(json.dumps({"files": {case["inputs"]["file_path"]: src.replace("javax.", "jakarta.")}}))
    """)


def test_resolve_command_makes_existing_relative_arguments_absolute(tmp_path: Path) -> None:
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "g.py").write_text("")
    (tmp_path / "run.sh").write_text("")
    argv = resolve_command(["python3", "gen/g.py", "--out", "missing/x", "-v", "gen"], tmp_path)
    assert argv == ["python3", str(tmp_path / "gen/g.py"), "--out", "missing/x", "-v", str(tmp_path / "gen")]
    assert resolve_command(["./run.sh", "plain"], tmp_path) == [str(tmp_path / "run.sh"), "plain"]
    assert resolve_command(["python3", "/abs/g.py"], tmp_path) == ["python3", "/abs/g.py"]


def _project(tmp_path: Path, command: str) -> Path:
    root = make_project(tmp_path / "p", cases=["jpa-entity", "cdi-inject"], systems=textwrap.dedent(f"""\
        systems:
          - name: mine
            adapter: command
            command: {command}
          - name: gold
            adapter: gold
        """))
    cfg = root / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("baseline: naive\n", "baseline: mine\n"))
    (root / "gen").mkdir()
    (root / "gen" / "my_generator.py").write_text(GENERATOR)
    return root


def _statuses(root: Path, system: str) -> list[str]:
    return sorted(json.loads(p.read_text())["status"]
                  for p in (root / ".evalkit" / "artifacts" / system).rglob("output.json"))


def test_relative_script_runs_from_another_folder_and_the_run_exits_0(tmp_path: Path) -> None:
    root = _project(tmp_path, '["{python}", "gen/my_generator.py"]')
    proc = evalkit(root, "run", "-q")  # cwd is the project's parent: gen/ is not there
    assert proc.returncode == 0
    assert _statuses(root, "mine") == ["ok", "ok"]
    out = json.loads(next((root / ".evalkit" / "artifacts" / "mine").rglob("output.json")).read_text())
    assert "jakarta." in next(iter(out["samples"][0]["files"].values()))


def test_every_case_of_a_system_failing_exits_3_and_says_why(tmp_path: Path) -> None:
    root = _project(tmp_path, '["{python}", "gen/not_there.py"]')
    proc = evalkit(root, "run", "-q", check=False)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert _statuses(root, "mine") == ["error", "error"]
    assert "every case of system 'mine' failed (2 of 2: error 2)" in proc.stderr
    assert "can't open file" in proc.stderr  # the first case's reason is shown
    assert "'gold'" not in proc.stderr
    assert (root / "site" / "r1" / "index.html").exists()  # the report is still written


def test_check_names_a_missing_script_at_its_config_line(tmp_path: Path) -> None:
    root = _project(tmp_path, '["{python}", "gen/not_there.py"]')
    proc = evalkit_here(root, "check", check=False)
    assert proc.returncode == 2
    line = next(n for n, text in enumerate((root / "evalkit.yaml").read_text().splitlines(), 1) if "not_there" in text)
    assert f"evalkit.yaml:{line}: system 'mine': script 'gen/not_there.py' not found (relative paths resolve against " \
           f"the config's folder {root})" in proc.stderr
    root2 = _project(tmp_path / "ok", '["{python}", "gen/my_generator.py"]')
    assert "script" not in evalkit_here(root2, "check", check=False).stderr
