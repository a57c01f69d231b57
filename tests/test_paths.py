"""Every path evalkit writes comes from validated names, and every write stays in the project.

Traversal payloads in each name source (case id, case file name, suite folder, system name,
matrix names, release label in the config, EVALKIT_RELEASE, --release), symlinked folders that
point outside, duplicate ids, missing suite.yaml, an empty cases folder and a selection that
matches nothing: nothing appears outside the project, no traceback, file:line messages.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import evalkit, evalkit_here, make_project, plain_doit

PAYLOAD = "../../../../../../../../../../x/PWNED"


def snapshot(root: Path) -> set[str]:
    """Every path below ``root`` (symlinks not followed)."""
    out = set()
    for folder, dirs, files in os.walk(root):
        out.update(os.path.join(folder, n) for n in dirs + files)
    return out


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the project that nothing may write into."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "keep.txt").write_text("untouched\n")
    return d


@pytest.fixture
def project(tmp_path: Path, outside: Path) -> Path:
    return make_project(tmp_path / "p")


def assert_nothing_outside(tmp_path: Path, before: set[str], parent_before: set[str]) -> None:
    """Only the project folder changed: tmp_path's other contents and its parent's listing are as they were."""
    after = {p for p in snapshot(tmp_path) if not p.startswith(str(tmp_path / "p") + os.sep)}
    assert after == before
    assert set(os.listdir(tmp_path.parent)) == parent_before
    assert not list(tmp_path.parent.glob("*PWNED*")) and not list(tmp_path.glob("**/*PWNED*"))


def outside_state(tmp_path: Path) -> tuple[set[str], set[str]]:
    return ({p for p in snapshot(tmp_path) if not p.startswith(str(tmp_path / "p") + os.sep)},
            set(os.listdir(tmp_path.parent)))


def report(project: Path, release: str = "r1") -> dict:
    return json.loads((project / "site" / release / "report.json").read_text())


def cfg_line(project: Path, needle: str) -> int:
    return next(i + 1 for i, l in enumerate((project / "evalkit.yaml").read_text().splitlines()) if needle in l)


# ---- names that would lead outside: each source -------------------------------------------------

@pytest.mark.parametrize("payload", [PAYLOAD, "../../../../../PWNED-near"], ids=["deep", "beside-project"])
def test_case_id_traversal_is_left_out_and_the_rest_runs(project: Path, tmp_path: Path, payload: str) -> None:
    """The beside-project payload would land in tmp_path (artifacts and pages alike) without the name rule."""
    case = project / "cases/migration/jpa-entity/case.yaml"
    case.write_text(case.read_text().replace("id: jpa-entity", f"id: {payload}"))
    line = next(i + 1 for i, l in enumerate(case.read_text().splitlines()) if l.startswith("id:"))
    before = outside_state(tmp_path)

    chk = evalkit_here(project, "check", check=False)
    assert chk.returncode == 2 and "Traceback" not in chk.stderr
    assert f"cases/migration/jpa-entity/case.yaml:{line}: case id {payload!r} is not a valid name" in chk.stderr

    proc = evalkit(project, "run")
    assert "Traceback" not in proc.stderr
    assert f"cases/migration/jpa-entity/case.yaml:{line}: case id" in proc.stderr  # listed on the console
    assert_nothing_outside(tmp_path, *before)
    art = project / ".evalkit/artifacts"
    assert sorted(p.name for p in (art / "naive/migration").iterdir()) == ["cdi-inject"]
    assert (art / "rules/migration/cdi-inject/scores.json").exists()
    rep = report(project)
    assert [r["case_id"] for r in rep["cases"]] == ["cdi-inject"]
    listed = [n for n in rep["notes"] if "jpa-entity/case.yaml" in n]
    assert listed and "left out" in listed[0]
    assert any("jpa-entity/case.yaml" in b for b in rep["suites"][0]["broken"])
    page = (project / "site/r1/index.html").read_text()
    assert "Left out of this run: cases/migration/jpa-entity/case.yaml" in page
    assert not list((project / "site/r1/cases/migration").glob("*PWNED*"))
    assert not Path("/x/PWNED").exists()


def test_case_file_name_without_valid_id_is_left_out(project: Path, tmp_path: Path) -> None:
    bad = project / "cases/migration/bad name;x"
    (project / "cases/migration/cdi-inject").rename(bad)
    case = bad / "case.yaml"
    case.write_text("\n".join(l for l in case.read_text().splitlines() if not l.startswith("id:")) + "\n")
    before = outside_state(tmp_path)
    chk = evalkit_here(project, "check", check=False)
    assert chk.returncode == 2 and "Traceback" not in chk.stderr
    assert "cases/migration/bad name;x/case.yaml: case file name 'bad name;x' is not a valid name" in chk.stderr
    proc = evalkit(project, "run")
    assert "Traceback" not in proc.stderr
    assert_nothing_outside(tmp_path, *before)
    assert [r["case_id"] for r in report(project)["cases"]] == ["jpa-entity"]
    assert any("bad name;x" in n for n in report(project)["notes"])


def test_bad_suite_folder_name_is_left_out(project: Path, tmp_path: Path) -> None:
    src = project / "cases/migration"
    dest = project / "cases/mig ration"
    dest.mkdir()
    (dest / "suite.yaml").write_text((src / "suite.yaml").read_text())
    (dest / "one.yaml").write_text((src / "jpa-entity/case.yaml").read_text().replace("legacy/", "../migration/jpa-entity/legacy/")
                                   .replace("expected/", "../migration/jpa-entity/expected/"))
    before = outside_state(tmp_path)
    chk = evalkit_here(project, "check", check=False)
    assert chk.returncode == 2
    assert "cases/mig ration: suite folder name 'mig ration' is not a valid name" in chk.stderr
    proc = evalkit(project, "run")
    assert "Traceback" not in proc.stderr and "suite folder name 'mig ration'" in proc.stderr
    assert_nothing_outside(tmp_path, *before)
    assert not (project / ".evalkit/artifacts/naive/mig ration").exists()
    assert {r["suite"] for r in report(project)["cases"]} == {"migration"}
    assert any("mig ration" in n for n in report(project)["notes"])


MATRIX = """\
  - name: kai
    adapter: command
    command: ["{{python}}", "-m", "evalkit.demo_systems.naive_rewriter"]
    matrix: {matrix}{names}
"""


@pytest.mark.parametrize("edit, needle, expected", [
    (lambda t: t.replace("release: r1", f"release: \"{PAYLOAD}\""), PAYLOAD, "release label"),
    (lambda t: t.replace("name: naive", f"name: \"{PAYLOAD}\"").replace("baseline: naive", f"baseline: \"{PAYLOAD}\""),
     "baseline:", f"baseline {PAYLOAD!r} is a system left out"),
], ids=["release", "baseline-system"])
def test_config_names_refuse_the_run(project: Path, tmp_path: Path, edit, needle: str, expected: str) -> None:
    """A bad release label (it names the report's folder), or the baseline system left out: nothing runs."""
    cfg = project / "evalkit.yaml"
    cfg.write_text(edit(cfg.read_text()))
    line = cfg_line(project, needle)
    before = outside_state(tmp_path)
    chk = evalkit_here(project, "check", check=False)
    assert chk.returncode == 2 and "Traceback" not in chk.stderr
    assert f"evalkit.yaml:{line}: {expected}" in chk.stderr
    for args in (("run",), ("estimate",)):
        proc = evalkit(project, *args, check=False)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert f"evalkit.yaml:{line}: {expected}" in proc.stderr
    proc = plain_doit(project)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and f"evalkit.yaml:{line}: {expected}" in proc.stderr
    assert not (project / ".evalkit").exists() and not (project / "site").exists()  # nothing written
    assert_nothing_outside(tmp_path, *before)


@pytest.mark.parametrize("edit, needle, expected", [
    (lambda t: t.replace("name: rules", f"name: \"{PAYLOAD}\""), PAYLOAD, f"system name {PAYLOAD!r} is not a valid name"),
    (lambda t: t.replace("  - name: gold\n    adapter: gold\n", MATRIX.format(
        matrix="{agents: [false, true]}", names=f'\n    names: [kai-off, "{PAYLOAD}"]')), PAYLOAD,
     f"systems[2].names[1]: system name {PAYLOAD!r} is not a valid name"),
    (lambda t: t.replace("  - name: gold\n    adapter: gold\n", MATRIX.format(
        matrix='{mode: [a, "../../../PWNED"]}', names="")), "matrix:",
     "system 'kai': matrix expanded system name 'kai-mode-../../../PWNED' is not a valid name"),
], ids=["system", "matrix-names", "matrix-values"])
def test_bad_system_name_is_left_out_and_the_rest_runs(project: Path, tmp_path: Path, edit, needle: str,
                                                      expected: str) -> None:
    cfg = project / "evalkit.yaml"
    cfg.write_text(edit(cfg.read_text()))
    line = cfg_line(project, needle)
    msg = f"evalkit.yaml:{line}: {expected}"
    before = outside_state(tmp_path)
    chk = evalkit_here(project, "check", check=False)
    assert chk.returncode == 2 and "Traceback" not in chk.stderr and msg in chk.stderr
    proc = evalkit(project, "run")
    assert "Traceback" not in proc.stderr and msg in proc.stderr and "left out of the run" in proc.stderr
    assert_nothing_outside(tmp_path, *before)
    assert (project / ".evalkit/artifacts/naive/migration/jpa-entity/scores.json").exists()
    left = {p.name for p in (project / ".evalkit/artifacts").iterdir()}
    assert "naive" in left and not any("PWNED" in n or "left-out" in n or n.startswith("kai") for n in left)
    rep = report(project)
    assert any(msg in n and n.startswith("Left out of this run") for n in rep["notes"])
    assert not any("kai" in s["name"] or "PWNED" in s["name"] for s in rep["systems"])
    assert "left out of the run" in (project / "site/r1/index.html").read_text()


@pytest.mark.parametrize("how", ["env", "flag"])
def test_release_label_from_env_or_flag_refuses_the_run(project: Path, tmp_path: Path, how: str) -> None:
    before = outside_state(tmp_path)
    if how == "env":
        proc = evalkit(project, "run", env={"EVALKIT_RELEASE": PAYLOAD}, check=False)
    else:
        proc = evalkit(project, "run", "--release", PAYLOAD, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"EVALKIT_RELEASE (or --release): release label {PAYLOAD!r} is not a valid name" in proc.stderr
    if how == "env":
        doit = plain_doit(project, {"EVALKIT_RELEASE": PAYLOAD})
        assert doit.returncode == 2 and "EVALKIT_RELEASE (or --release)" in doit.stderr
        assert "Traceback" not in doit.stderr
    assert not (project / ".evalkit").exists() and not (project / "site").exists()
    assert_nothing_outside(tmp_path, *before)


# ---- symlinks that lead outside ------------------------------------------------------------------

def test_symlinked_suite_folder_is_read_never_written(project: Path, tmp_path: Path, outside: Path) -> None:
    ext = outside / "ext-suite"
    ext.mkdir()
    src = project / "cases/migration"
    (ext / "suite.yaml").write_text((src / "suite.yaml").read_text())
    import shutil

    shutil.copytree(src / "cdi-inject", ext / "cdi-inject")
    (project / "cases/ext").symlink_to(ext, target_is_directory=True)
    before = outside_state(tmp_path)
    evalkit_here(project, "check")
    proc = evalkit(project, "run")
    assert "Traceback" not in proc.stderr
    assert_nothing_outside(tmp_path, *before)
    assert (project / ".evalkit/artifacts/naive/ext/cdi-inject/scores.json").exists()
    assert {r["suite"] for r in report(project)["cases"]} == {"ext", "migration"}


def test_symlink_planted_in_work_folder_is_refused(project: Path, tmp_path: Path, outside: Path) -> None:
    evalkit(project, "run")
    target = project / ".evalkit/artifacts/rules"
    import shutil

    shutil.rmtree(target)
    target.symlink_to(outside, target_is_directory=True)
    case = project / "cases/migration/cdi-inject/case.yaml"
    case.write_text(case.read_text() + "\n# edited\n")  # rerun its tasks
    before = outside_state(tmp_path)
    proc = evalkit(project, "run", check=False)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "evalkit bug: refused to write" in proc.stderr and str(outside) in proc.stderr
    assert_nothing_outside(tmp_path, *before)


def test_write_guard_resolves_dotdot_and_symlinks(tmp_path: Path, outside: Path) -> None:
    from evalkit import fsutil

    work = tmp_path / "p" / ".evalkit"
    work.mkdir(parents=True)
    (work / "link").symlink_to(outside, target_is_directory=True)
    fsutil.confine_writes(work)
    fsutil.atomic_write_text(work / "a" / "ok.json", "{}")
    assert (work / "a" / "ok.json").read_text() == "{}"
    for bad in (work / ".." / "escaped.json", work / "a" / ".." / ".." / "x.json", work / "link" / "x.json",
                work / "link" / "sub" / "x.json", Path(outside / "x.json")):
        with pytest.raises(fsutil.WriteOutsideRoots, match="evalkit bug: refused to write"):
            fsutil.atomic_write_text(bad, "x")
        with pytest.raises(fsutil.WriteOutsideRoots):
            fsutil.ensure_dir(bad.parent / "d")
    with pytest.raises(fsutil.WriteOutsideRoots):
        fsutil.touch(work / "link" / "m.retry")
    (work / "out.json").symlink_to(outside / "keep.txt")
    fsutil.atomic_write_text(work / "out.json", "replaced")  # the link itself is replaced, never written through
    assert (outside / "keep.txt").read_text() == "untouched\n"
    assert sorted(os.listdir(outside)) == ["keep.txt"]
    assert not (tmp_path / "p" / "escaped.json").exists()


# ---- nothing silent --------------------------------------------------------------------------------

def test_duplicate_case_id_is_left_out_and_the_run_completes(project: Path) -> None:
    dup = project / "cases/migration/jpa-copy"
    import shutil

    shutil.copytree(project / "cases/migration/jpa-entity", dup)
    line = next(i + 1 for i, l in enumerate((dup / "case.yaml").read_text().splitlines()) if l.startswith("id:"))
    chk = evalkit_here(project, "check", check=False)
    assert chk.returncode == 2
    msg = (f"cases/migration/jpa-entity/case.yaml:{line}: duplicate case id 'jpa-entity' in suite 'migration': "
           "cases/migration/jpa-copy/case.yaml has it too")
    assert msg in chk.stderr
    proc = evalkit(project, "run")  # exit 0: not doit's "duplicated definition"
    assert "Traceback" not in proc.stderr and "duplicated" not in proc.stdout + proc.stderr
    assert msg in proc.stderr
    for system in ("naive", "rules", "gold"):
        for case in ("jpa-entity", "cdi-inject"):
            assert (project / f".evalkit/artifacts/{system}/migration/{case}/scores.json").exists()
    rep = report(project)
    assert sorted(r["case_id"] for r in rep["cases"]) == ["cdi-inject", "jpa-entity"]
    assert any(msg in n for n in rep["notes"]) and any(msg in b for b in rep["suites"][0]["broken"])
    assert "jpa-copy/case.yaml has it too" in (project / "site/r1/index.html").read_text()


def test_suite_without_suite_yaml_is_listed(project: Path) -> None:
    stray = project / "cases/stray"
    stray.mkdir()
    (stray / "c1.yaml").write_text("id: c1\n")
    chk = evalkit_here(project, "check", check=False)
    assert chk.returncode == 2 and "cases/stray/suite.yaml: missing suite.yaml" in chk.stderr
    proc = evalkit(project, "run")
    assert "cases/stray/suite.yaml: missing suite.yaml" in proc.stderr
    rep = report(project)
    assert any("cases/stray/suite.yaml: missing suite.yaml" in n for n in rep["notes"])
    assert "cases/stray/suite.yaml: missing suite.yaml" in (project / "site/r1/index.html").read_text()
    assert {r["suite"] for r in rep["cases"]} == {"migration"}


@pytest.mark.parametrize("setup, expected", [
    ("empty", "no suite to run in the cases folder (no folders"),
    ("mistyped", "cases folder not found"),
    ("only-stray", "no suite to run in the cases folder (1 folder(s), each left out"),
])
def test_no_suite_refuses_the_run(project: Path, setup: str, expected: str) -> None:
    import shutil

    shutil.rmtree(project / "cases/migration")
    if setup == "mistyped":
        cfg = project / "evalkit.yaml"
        cfg.write_text(cfg.read_text() + "cases_dir: cses\n")
    if setup == "only-stray":
        (project / "cases/stray").mkdir()
    chk = evalkit_here(project, "check", check=False)
    assert chk.returncode == 2 and expected in chk.stderr
    for proc in (evalkit(project, "run", check=False), plain_doit(project)):
        assert proc.returncode == 2, proc.stderr
        assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert not (project / ".evalkit").exists() and not (project / "site").exists()


def test_selection_matching_nothing_is_an_error(project: Path) -> None:
    proc = evalkit(project, "run", "--select", "migraton/*", "--select", "nope", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "'migraton/*', 'nope' matches no case" in proc.stderr and "migration/" in proc.stderr
    assert not (project / "site").exists()
    proc = evalkit(project, "run", "--select", "migration/cdi*", "--select", "nope")
    assert "--select 'nope' matches no case" in proc.stderr
    assert (project / ".evalkit/artifacts/naive/migration/cdi-inject/scores.json").exists()
    assert not (project / ".evalkit/artifacts/naive/migration/jpa-entity").exists()


@pytest.mark.parametrize("extra", [
    "cases_dir: cases-typo\n",
    "suites: [migration, migraton]\n",
], ids=["cases-dir", "config-suites"])
def test_run_refuses_what_check_rejects_at_project_level_with_the_same_messages(project: Path, extra: str) -> None:
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text() + extra)
    chk = evalkit_here(project, "check", check=False)
    assert chk.returncode == 2
    messages = [l for l in chk.stderr.splitlines() if not l.startswith("evalkit check:")]
    assert messages
    for proc in (evalkit(project, "run", check=False), plain_doit(project)):
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert [l.removeprefix("evalkit: ") for l in proc.stderr.splitlines()] == messages
    assert not (project / ".evalkit").exists() and not (project / "site").exists()


def test_system_naming_an_unknown_suite_refuses_the_run(project: Path) -> None:
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("  - name: gold\n    adapter: gold\n",
                                           "  - name: gold\n    adapter: gold\n    suites: [migration, migraton]\n"))
    line = cfg_line(project, "migraton")
    chk = evalkit_here(project, "check", check=False)
    msg = f"evalkit.yaml:{line}: system 'gold': unknown suite 'migraton'"
    assert chk.returncode == 2 and msg in chk.stderr
    proc = evalkit(project, "run", check=False)
    assert proc.returncode == 2 and msg in proc.stderr and "Traceback" not in proc.stderr
    check_line = next(l for l in chk.stderr.splitlines() if msg in l)
    assert f"evalkit: {check_line}" in proc.stderr.splitlines()
    assert not (project / "site").exists()
