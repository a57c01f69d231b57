"""Bad input: a plain message naming file:line, exit 2 from `evalkit check`; a run records the
broken case as an error and goes on with the others."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from helpers import evalkit, evalkit_here, make_project, run


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "p")


def check(project: Path) -> tuple[int, str]:
    proc = evalkit_here(project, "check", check=False)
    assert "Traceback" not in proc.stderr
    return proc.returncode, proc.stderr


def case_yaml(project: Path, name: str = "jpa-entity") -> Path:
    return project / "cases" / "migration" / name / "case.yaml"


def test_clean_project_checks_ok(project: Path) -> None:
    proc = evalkit_here(project, "check")
    assert "ok (1 suites, 2 cases, 3 systems)" in proc.stdout


def test_malformed_yaml_names_file_and_line(project: Path) -> None:
    path = case_yaml(project)
    lines = path.read_text().splitlines()
    lines.insert(3, "  broken: [unclosed")
    path.write_text("\n".join(lines) + "\n")
    code, err = check(project)
    assert code == 2
    assert "cases/migration/jpa-entity/case.yaml:" in err and "malformed YAML" in err


def test_unknown_suite_kind(project: Path) -> None:
    suite = project / "cases/migration/suite.yaml"
    suite.write_text(suite.read_text().replace("kind: migration", "kind: migraton"))
    code, err = check(project)
    assert code == 2
    line = next(i + 1 for i, l in enumerate(suite.read_text().splitlines()) if l.startswith("kind:"))
    assert f"cases/migration/suite.yaml:{line}: kind:" in err
    assert "unknown suite kind 'migraton'; expected one of agentic, e2e, generation, migration, patch, rag" in err


def test_unknown_adapter(project: Path) -> None:
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("adapter: gold", "adapter: golden"))
    code, err = check(project)
    assert code == 2
    line = next(i + 1 for i, l in enumerate(cfg.read_text().splitlines()) if "golden" in l)
    assert f"evalkit.yaml:{line}:" in err and "golden" in err


def test_every_problem_reported_at_once(project: Path) -> None:
    a, b = case_yaml(project, "jpa-entity"), case_yaml(project, "cdi-inject")
    a.write_text(a.read_text().replace("id: jpa-entity\n", ""))
    b.write_text(b.read_text().replace("legacy_file: legacy/OrderService.java", "legacy_file: legacy/Nope.java"))
    code, err = check(project)
    assert code == 2
    assert "jpa-entity/case.yaml:1: id: required key is missing" in err
    assert "cdi-inject/case.yaml:6: inputs.legacy_file: file 'legacy/Nope.java' does not exist" in err
    assert "2 problem(s)" in err


def test_duplicate_case_id(project: Path) -> None:
    b = case_yaml(project, "cdi-inject")
    b.write_text(b.read_text().replace("id: cdi-inject", "id: jpa-entity"))
    code, err = check(project)
    assert code == 2 and "duplicate case id 'jpa-entity'" in err


@pytest.mark.parametrize("ref", ["../../../../etc/passwd", "/etc/passwd", "link/secret"])
def test_reference_outside_suite(project: Path, ref: str, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("x")
    os.symlink(tmp_path, project / "cases/migration/jpa-entity/link")
    a = case_yaml(project)
    a.write_text(a.read_text().replace("expected_file: expected/Order.java", f"expected_file: {ref}"))
    code, err = check(project)
    assert code == 2
    assert "reference.expected_file:" in err
    assert ("outside the suite folder" in err) or ("absolute path" in err)


def test_missing_command(project: Path) -> None:
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace('["{python}", "-m", "evalkit.demo_systems.naive_rewriter"]',
                                           '["no-such-program-xyz"]'))
    code, err = check(project)
    assert code == 2 and "command 'no-such-program-xyz' not found" in err


def test_broken_case_recorded_and_others_go_on(project: Path) -> None:
    a = case_yaml(project)
    a.write_text(a.read_text() + "unexpected_key: 1\n")
    run(project)
    report = json.loads((project / "site/r1/report.json").read_text())
    rows = {r["case_id"]: r for r in report["cases"]}
    assert rows["jpa-entity"]["problems"] and "unexpected_key: unknown key" in rows["jpa-entity"]["problems"][0]
    assert rows["jpa-entity"]["systems"]["rules"]["excluded"] == "broken"
    assert rows["cdi-inject"]["systems"]["rules"]["status"] == "ok"
    suite = report["suites"][0]
    assert any(b.startswith("jpa-entity:") for b in suite["broken"])
    assert suite["systems"]["rules"]["answered"]["excluded"] == {"broken": 1}


BAD_SYSTEMS = {
    "exits-nonzero": ("import sys; sys.stderr.write('boom\\n'); sys.exit(3)", "exited with status 3: boom"),
    "not-json": ("print('hello, not json')", "output is not JSON"),
    "huge": ("import sys\nfor _ in range(200): sys.stdout.write('x' * 1_000_000)", "printed more than"),
    "not-utf8": ("import sys; sys.stdout.buffer.write(b'{\"text\": \"\\xff\\xfe\"}')", "not UTF-8"),
    "hangs": ("import time; time.sleep(60)", "no answer within 2 s"),
}


def test_bad_systems_recorded_per_case(tmp_path: Path) -> None:
    systems = "systems:\n  - name: good\n    adapter: gold\n"
    for name, (code, _) in BAD_SYSTEMS.items():
        script = tmp_path / f"{name}.py"
        script.write_text(code + "\n")
        # only `hangs` is about the time limit: the others get room to start and fail on a loaded machine
        timeout = 2 if name == "hangs" else 60
        systems += (f"  - name: {name}\n    adapter: command\n    command: [\"{{python}}\", \"{script}\"]\n"
                    f"    timeout_s: {timeout}\n    max_output_bytes: 100000000\n")
    project = make_project(tmp_path / "p", cases=["jpa-entity"], systems=systems)
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("baseline: naive", "baseline: good"))
    proc = evalkit(project, "run", "--jobs", "2", check=False)
    assert proc.returncode == 3  # each bad system failed on its every case (issue 16: exit 3, and why)
    assert f"{len(BAD_SYSTEMS)} system(s) failed on every case" in proc.stderr and "'good'" not in proc.stderr
    report = json.loads((project / "site/r1/report.json").read_text())
    cells = report["cases"][0]["systems"]
    assert cells["good"]["status"] == "ok"
    for name, (_, reason) in BAD_SYSTEMS.items():
        assert cells[name]["status"] in ("error", "timeout"), name
        assert reason in cells[name]["reason"], (name, cells[name]["reason"])
    assert cells["hangs"]["status"] == "timeout"


@pytest.mark.parametrize("command", ["check", "run", "estimate", "schema"])
def test_an_unknown_option_is_said_with_the_commands_own_usage(project: Path, command: str) -> None:
    """Exit 2 with the command's usage: the top parser's lists only the commands the call loaded (`evalkit run`
    loads none of the others' modules), which told a user of `evalkit check --bogus` that evalkit had five."""
    proc = evalkit(project, command, "--bogus", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"usage: evalkit {command} ")
    assert f"evalkit {command}: error: unrecognized arguments: --bogus" in proc.stderr


def test_the_import_commands_summary_names_every_source() -> None:
    """`evalkit -h` says what `evalkit import` reads: every source its own help lists (it said "(swebench)" of five)."""
    top = evalkit(Path.cwd(), "-h").stdout
    sources = evalkit(Path.cwd(), "import", "-h").stdout
    listed = sources[sources.index("positional arguments:"):sources.index("options:")]
    names = re.findall(r"(?m)^    (\S+)", listed)
    summary = " ".join(top[top.index("    import "):top.index("    init ")].split())
    assert len(names) == 5 and all(name in summary for name in names), (names, summary)
