"""A plain (non-editable) install runs the demo from a folder holding only evalkit.yaml and cases/.

The wheel is built from a copy of the checkout (offline: no build isolation, no index) and installed
into a fresh virtual environment that sees this environment's dependencies (the test's own venv or the
base interpreter's: wherever pytest runs) but not the checkout;
the demo's own systems (`{python} -m evalkit.demo_systems...`) then run from the installed copy too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: One case per offline suite kind the demo renders pages for (the full demo takes a minute or two).
SELECT = ["migration/cdi-inject", "generation/petstore-model", "rag/*"]


def _pip(*args: str, cwd: Path | None = None) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"pip {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of the checkout as it is (built from a copy: the build leaves build/ and *.egg-info)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "evalkit", src / "evalkit", symlinks=True, ignore=ignore)  # evalkit/templates stays a link
    shutil.copytree(REPO / "templates", src / "templates", ignore=ignore)
    shutil.copytree(REPO / "cases", src / "cases", ignore=ignore)  # evalkit/demo_cases links to it
    _pip("wheel", ".", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(tmp / "dist"), cwd=src)
    (built,) = (tmp / "dist").glob("evalkit-*.whl")
    return built


def test_wheel_holds_the_package_data_and_no_test_double(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, pattern in (("templates", "**/*"), ("evalkit/schemas", "*.json"), ("evalkit/rubrics", "*.yaml"),
                            ("evalkit/sandbox/base_image", "*"), ("evalkit/demo_systems", "*.py")):
        shipped = {f"evalkit/templates/{p.relative_to(REPO / 'templates').as_posix()}" if folder == "templates"
                   else p.relative_to(REPO).as_posix()
                   for p in (REPO / folder).glob(pattern) if p.is_file() and "__pycache__" not in p.parts}
        assert shipped, folder
        assert shipped <= names, f"missing from the wheel: {sorted(shipped - names)}"
    demo_cases = {f"evalkit/demo_cases/{p.relative_to(REPO / 'cases').as_posix()}" for p in (REPO / "cases").rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts}
    assert demo_cases and demo_cases <= names, f"missing from the wheel: {sorted(demo_cases - names)[:5]}"  # init
    assert "evalkit/templates/site/assets/style.css" in names
    assert "evalkit/templates/prompts/rubric_judge.md.j2" in names
    assert "evalkit/py.typed" in names  # PEP 561: type checkers read an installed evalkit's annotations
    assert not [n for n in names if "fake_server" in n or n.startswith("tests/")]


def _see_this_environment(purelib: Path) -> None:
    """Let the new venv import the dependencies of the environment running the tests, wherever they live.

    ``system_site_packages=True`` would show it the *base* interpreter's site-packages only: in the README's own
    setup (a fresh venv holding evalkit's dependencies) those lack doit, jinja2, ... The ``.pth`` line runs
    ``site.addsitedir`` on this environment's site folders, after the new venv's own, so their ``.pth`` files
    are processed too and the wheel installed in ``purelib`` comes first (the checkout's editable finder, if
    any, is appended to ``sys.meta_path`` after the path finder that finds the installed copy).
    """
    here = sysconfig.get_paths()
    dirs = list(dict.fromkeys(str(Path(here[k]).resolve()) for k in ("purelib", "platlib")))
    line = "import site; " + "; ".join(f"site.addsitedir({d!r})" for d in dirs)
    (purelib / "_evalkit_test_parent_env.pth").write_text(line + "\n", encoding="utf-8")


def test_installed_wheel_runs_the_demo_from_a_bare_folder(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    _see_this_environment(Path(purelib))
    _pip("install", "--no-deps", "--no-index", "--target", purelib, str(wheel))

    project = tmp_path / "demo"
    project.mkdir()
    shutil.copy(REPO / "evalkit.yaml", project / "evalkit.yaml")
    shutil.copytree(REPO / "cases", project / "cases")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EVALKIT_CONFIG", "EVALKIT_RELEASE")}

    where = subprocess.run([str(python), "-c", "import evalkit, evalkit.demo_systems.naive_rewriter as m;"
                            "print(evalkit.__file__); print(m.__file__)"],
                           cwd=project, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert all(Path(p).is_relative_to(purelib) for p in where), where  # the installed copy, not the checkout

    args = [a for s in SELECT for a in ("--select", s)]
    proc = subprocess.run([str(python), "-m", "evalkit", "run", "-q", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    assert sorted(p.name for p in project.iterdir()) == [".evalkit", "cases", "evalkit.yaml", "site"]

    release = project / "site" / "demo-2026.11"
    index = (release / "index.html").read_text(encoding="utf-8")
    assert "style.css" in index
    css = project / "site" / "assets" / "style.css"  # copied from the package's templates/site/assets
    assert css.read_bytes() == (REPO / "templates" / "site" / "assets" / "style.css").read_bytes()
    report = json.loads((release / "report.json").read_text(encoding="utf-8"))
    suites = {s["name"] for s in report["suites"]}
    assert {"migration", "generation", "rag"} <= suites
    ran = {(c["suite"], c["case_id"]) for c in report["cases"]}
    assert ("migration", "cdi-inject") in ran and ("generation", "petstore-model") in ran
    assert any(suite == "rag" for suite, _ in ran)
    case_pages = list((release / "cases").rglob("*.html"))
    assert len(case_pages) >= 3
    # every selected case was answered and scored by the installed demo systems (a module or prompt the
    # install lacks would leave errors here)
    statuses = {(c["case_id"], name): s["status"] for c in report["cases"] for name, s in c["systems"].items()
                if not name.startswith("canary-")}  # a canary that means nothing for a kind skips its cases
    assert set(statuses.values()) == {"ok"}, statuses
    assert {name for _, name in statuses} >= {"rule-rewriter", "naive-rewriter", "codegen-careful", "hint-bot"}
    # `evalkit init` from the installed copy: the demo cases ship as package data
    made = subprocess.run([str(python), "-m", "evalkit", "init", "started", "--kind", "patch", "--kind", "rag",
                           "--no-history"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    assert (tmp_path / "started" / "cases" / "patch" / "_src").is_dir()
    checked = subprocess.run([str(python), "-m", "evalkit", "check"], cwd=tmp_path / "started", env=env,
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
