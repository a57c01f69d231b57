"""YAML read with limits (issue 27, item 4): nested aliases ("billion laughs"), deep nesting and huge files
in a case file or evalkit.yaml end in that file's error at file:line, fast and small; `check` exits 2 and
`run` completes the other cases with a report."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evalkit.errors import InputError
from evalkit.yamlio import load_yaml
from helpers import REPO, evalkit, make_project


def laughs(levels: int = 12) -> str:
    """Ten levels of nine aliases each: a few hundred bytes naming 9**12 strings."""
    lines = ["lol0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"lol{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


BOMBS = {
    "billion_laughs": (laughs(), 6, "expands to more than 200,000 nodes"),
    "flow_100000_deep": ("id: x\nnested: " + "[" * 100_000 + "]" * 100_000 + "\n", 2, "nested more than 64 deep"),
    "block_600_deep": ("id: x\n" + "".join(" " * (2 * i) + f"k{i}:\n" for i in range(600)) + " " * 1200 + "v\n",
                       65, "nested more than 64 deep"),
    "mapping_of_aliases": ("base: &b {" + ", ".join(f"k{i}: v" for i in range(500)) + "}\n"
                           + "".join(f"copy{i}: *b\n" for i in range(500)), 200, "expands to more than"),  # 1,003 + 199 * 1,002
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_bomb_is_a_file_line_error_in_2s(tmp_path: Path, name: str) -> None:
    text, line, words = BOMBS[name]
    path = tmp_path / "case.yaml"
    path.write_text(text)
    start = time.process_time()  # CPU seconds: what a bomb costs, whatever else the machine runs (wall time
    with pytest.raises(InputError) as exc:  # was 12 s beside other test workers on 2 cores)
        load_yaml(path, "cases/x/case.yaml")
    took = time.process_time() - start
    assert took < 2.0, took
    (problem,) = exc.value.problems
    assert (problem.file, problem.line) == ("cases/x/case.yaml", line), problem
    assert words in problem.message, problem.message


def test_huge_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "case.yaml"
    with path.open("w") as fh:  # 100 MB of valid YAML
        row = "- " + "x" * 98 + "\n"
        for _ in range(1_000):
            fh.write(row * 1_000)
    start = time.perf_counter()
    with pytest.raises(InputError) as exc:
        load_yaml(path, "case.yaml")
    assert time.perf_counter() - start < 2.0
    assert str(exc.value.problems[0]) == ("case.yaml:1: file is 101,000,000 bytes, over the limit of 1,048,576 "
                                          "(EVALKIT_YAML_MAX_BYTES); expected a case or config file, not data")


def test_limits_are_configurable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "case.yaml"
    path.write_text("a:\n  b:\n    c: [1, 2]\n")
    assert load_yaml(path)["a"]["b"]["c"] == [1, 2]
    monkeypatch.setenv("EVALKIT_YAML_MAX_DEPTH", "2")
    with pytest.raises(InputError, match="nested more than 2 deep"):
        load_yaml(path)
    monkeypatch.setenv("EVALKIT_YAML_MAX_DEPTH", "")
    monkeypatch.setenv("EVALKIT_YAML_MAX_NODES", "5")
    with pytest.raises(InputError, match="more than 5 nodes"):
        load_yaml(path)
    monkeypatch.setenv("EVALKIT_YAML_MAX_NODES", "many")
    with pytest.raises(InputError, match="EVALKIT_YAML_MAX_NODES: expected a whole number, got 'many'"):
        load_yaml(path)


def test_every_shipped_case_and_config_is_within_the_defaults() -> None:
    files = [*(REPO / "cases").rglob("*.yaml"), *REPO.glob("*.yaml")]
    assert len(files) > 20
    for path in files:
        load_yaml(path)


def _check_rusage(project: Path) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """`evalkit check` in a child process: its result, CPU seconds (user + system: the wall time grows with
    whatever else runs on the machine) and peak RSS in MB."""
    code = textwrap.dedent(f"""\
        import json, resource, subprocess, sys
        p = subprocess.run([sys.executable, "-m", "evalkit", "check", "--config", {str(project / "evalkit.yaml")!r}],
                           capture_output=True, text=True)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        took = usage.ru_utime + usage.ru_stime
        rss = usage.ru_maxrss / 1024
        print(json.dumps({{"code": p.returncode, "stderr": p.stderr, "took": took, "rss": rss}}))
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    got = json.loads(out.stdout)
    proc = subprocess.CompletedProcess([], got["code"], "", got["stderr"])
    return proc, got["took"], got["rss"]


def test_check_and_run_with_bombs_in_case_files(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", cases=["jpa-entity", "cdi-inject", "ejb-stateless"])
    jpa = project / "cases/migration/jpa-entity/case.yaml"
    jpa.write_text(jpa.read_text() + laughs())
    cdi = project / "cases/migration/cdi-inject/case.yaml"
    cdi.write_text(cdi.read_text() + "deep: " + "[" * 100_000 + "]" * 100_000 + "\n")
    jpa_line = len(jpa.read_text().splitlines()) - 6
    cdi_line = len(cdi.read_text().splitlines())
    proc, took, rss = _check_rusage(project)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"cases/migration/jpa-entity/case.yaml:{jpa_line}: this file expands to more than 200,000" in proc.stderr
    assert f"cases/migration/cdi-inject/case.yaml:{cdi_line}: nested more than 64 deep" in proc.stderr
    assert rss < 200, rss
    assert took < 10, took  # CPU seconds of the whole check, interpreter start included (measured 1.0 s)

    run = evalkit(project, "run", check=False)
    assert "Traceback" not in run.stderr and "RecursionError" not in run.stderr
    report = json.loads((project / "site/r1/report.json").read_text())
    rows = {r["case_id"]: r for r in report["cases"]}
    assert "expands to more than" in rows["jpa-entity"]["problems"][0]
    assert "nested more than 64 deep" in rows["cdi-inject"]["problems"][0]
    assert rows["ejb-stateless"]["systems"]["rules"]["status"] == "ok"
    assert (project / "site/r1/cases/migration/ejb-stateless.html").exists()


def test_bomb_in_evalkit_yaml_is_exit_2(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text() + "x_" + laughs().replace("\nlol", "\nx_lol"))
    for command in ("check", "run"):
        proc = evalkit(project, command, check=False)
        assert proc.returncode == 2, (command, proc.stderr)
        assert "evalkit.yaml:" in proc.stderr and "expands to more than 200,000 nodes" in proc.stderr
        assert "Traceback" not in proc.stderr
