"""Build small evalkit projects in a temp folder and run them the way a user does."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

from zygote import python_m_evalkit

from evalkit import procs as _procs

REPO = Path(__file__).resolve().parents[1]
REALDATA = Path(os.environ.get("EVALKIT_REALDATA") or REPO.parent / "shared" / "realdata")
"""The real public data (SWE-bench rows, Kai's cases and grades, LLMService datasets, CodeBLEU values):
``../shared/realdata`` beside the repository, as CI has it, or $EVALKIT_REALDATA."""


def in_ci() -> bool:
    """Whether the tests run in CI (``CI=true``, as GitHub Actions and most CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def realdata(*parts: str) -> Path:
    """``REALDATA/<parts>``, for a test that reads the real data: the one way tests reach it.

    When it is absent the test fails in CI (CI has the data: a skip there would hide a test that never
    runs) and skips elsewhere (a machine without ../shared). Tests call it, or carry the marker
    ``@pytest.mark.realdata(*parts)`` (tests/conftest.py calls it before the test)."""
    import pytest

    path = REALDATA.joinpath(*parts)
    if not path.exists():
        if in_ci():
            pytest.fail(f"the real data {path} is absent, and CI=true: CI must have ../shared/realdata")
        pytest.skip(f"the real data {path} is absent (../shared/realdata beside the repository, or $EVALKIT_REALDATA)")
    return path


def make_project(root: Path, cases: list[str] | None = None, systems: str | None = None, extra: str = "") -> Path:
    """A project with a copy of some demo migration cases and the two demo rewriters (+ gold)."""
    root.mkdir(parents=True, exist_ok=True)
    src = REPO / "cases" / "migration"
    dest = root / "cases" / "migration"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "suite.yaml", dest / "suite.yaml")
    for name in cases or ["jpa-entity", "cdi-inject"]:
        shutil.copytree(src / name, dest / name)
    shutil.copytree(REPO / "templates", root / "templates")
    systems = systems or textwrap.dedent("""\
        systems:
          - name: naive
            adapter: command
            command: ["{python}", "-m", "evalkit.demo_systems.naive_rewriter"]
          - name: rules
            adapter: command
            command: ["{python}", "-m", "evalkit.demo_systems.rule_rewriter"]
          - name: gold
            adapter: gold
        """)
    (root / "evalkit.yaml").write_text(
        "release: r1\nbaseline: naive\ntemplates_dir: templates\n" + systems + extra, encoding="utf-8")
    return root


PATCH_SYSTEMS = {
    "patch-bot": '{name: patch-bot, adapter: command, command: ["{python}", "-m", "evalkit.demo_systems.patch_bot"]}',
    "gold": "{name: gold, adapter: gold}",
    "empty": "{name: empty, adapter: empty}",
}


def plain_doit(project: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`doit -f <repo>/dodo.py` with the project's config: the same graph without evalkit's CLI."""
    full = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), "-d", str(project)],
                          cwd=str(project), env=full, capture_output=True, text=True, timeout=300)


def patch_project(root: Path, backend: str = "docker", cases: list[str] | None = None,
                  systems: tuple[str, ...] = ("patch-bot", "gold", "empty")) -> Path:
    """A project holding a copy of the repo's patch suite (its suite.yaml and shared `_src/`, every
    case or only ``cases``), the templates and the demo patch systems named in ``systems``."""
    src, dest = REPO / "cases" / "patch", root / "cases" / "patch"
    if cases is None:
        shutil.copytree(src, dest)
    else:
        dest.mkdir(parents=True)
        shutil.copy(src / "suite.yaml", dest / "suite.yaml")
        for name in ["_src", *cases]:
            shutil.copytree(src / name, dest / name)
    shutil.copytree(REPO / "templates", root / "templates")
    listed = "".join(f"  - {PATCH_SYSTEMS[s]}\n" for s in systems)
    (root / "evalkit.yaml").write_text(f"release: r1\ntemplates_dir: templates\nsystems:\n{listed}"
                                       f"sandbox:\n  backend: {backend}\n", encoding="utf-8")
    return root


def without_plugin_autoload(suite_yaml: Path) -> None:
    """The pytest `test_command` of a suite.yaml (or case.yaml) run with PYTEST_DISABLE_PLUGIN_AUTOLOAD=1, for a test
    whose point is not the case's pytest run. The local backend runs the host's python3, whose pytest loads every installed
    plug-in at start (langsmith's, from ragas, and hypothesis' cost 2.5 s of CPU of a 2.7 s run of the demo
    patch suite's 9 tests; 0.2 s without them). evalkit's own sentinel plug-in is passed with -p and still loads;
    the Docker image's pytest has no such plug-ins."""
    text = suite_yaml.read_text(encoding="utf-8")
    changed = re.sub(r"(?m)^(\s*test_command:\s*)(python3 -m pytest\b)", r"\1PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 \2", text)
    assert changed != text, f"no `test_command: python3 -m pytest` in {suite_yaml}"
    suite_yaml.write_text(changed, encoding="utf-8")


def evalkit(project: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    """`python -m evalkit ARGS` with the project's config, from an unrelated working directory."""
    full_env = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), **(env or {})}
    full_env.pop("EVALKIT_RELEASE", None) if "EVALKIT_RELEASE" not in (env or {}) else None
    proc = python_m_evalkit(list(args), cwd=project.parent, env=full_env, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"evalkit {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


TASK_LINE = re.compile(r"^\.  (\S+)$", re.MULTILINE)


def executed(proc: subprocess.CompletedProcess[str]) -> set[str]:
    """Task names doit executed (its executed-only reporter prints `.  name`)."""
    return set(TASK_LINE.findall(proc.stdout))


def run(project: Path, *args: str, env: dict[str, str] | None = None) -> set[str]:
    return executed(evalkit(project, "run", *args, env=env))


def plugin_dist(folder: Path, name: str, entry_points: dict[str, dict[str, str]], modules: dict[str, str]) -> Path:
    """An installed-looking outside distribution in ``folder`` (put it on PYTHONPATH / sys.path).

    ``entry_points``: group -> {name: "module:attr"}; ``modules``: module file name -> source.
    importlib.metadata finds it by its ``<name>-0.1.dist-info`` folder, as it would a pip-installed one.
    """
    folder.mkdir(parents=True, exist_ok=True)
    info = folder / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for group, eps in entry_points.items()))
    for file, source in modules.items():
        (folder / file).write_text(source)
    return folder


def bench_site() -> Any:
    """benchmarks/site.py as a module: its ``synthesize(site, n_cases, n_systems, release, seed, previous,
    payload)`` writes a release's report.json and per-case JSON from the report models (no evaluation run)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_site", REPO / "benchmarks" / "site.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def synthetic_site(root: Path, n_systems: int = 3, n_cases: int = 12, next_cases: int | None = None,
                   payload: str | None = None) -> Path:
    """A rendered two-release site in ``root`` from synthetic report data: r1 (``n_cases``, seed 1), then r2
    (``next_cases`` or ``n_cases``, seed 2, diffed against r1; ``payload`` put in its outputs), both rendered."""
    from evalkit.report.render import render_site

    bench = bench_site()
    old = bench.synthesize(root, n_cases=n_cases, n_systems=n_systems, release="r1", seed=1)
    render_site(root, "r1")
    bench.synthesize(root, n_cases=next_cases or n_cases, n_systems=n_systems, release="r2", seed=2, previous=old,
                     payload=payload)
    render_site(root, "r2")
    return root


LONG_FLOAT = re.compile(r"(?<![\w.])\d+\.\d{7,}(?![\w.])")
"""A number printed with its whole float tail (0.15000000000000008): never in the text a person reads."""


def long_floats(site: Path) -> dict[str, list[str]]:
    """Page (relative to ``site``) -> long float tails in its text, over every .html under ``site``. Tags,
    scripts and styles are left out: data-value attributes and embedded JSON keep full precision on purpose."""
    out: dict[str, list[str]] = {}
    for page in sorted(site.rglob("*.html")):
        text = re.sub(r"<script\b.*?</script>|<style\b.*?</style>|<[^>]*>", " ", page.read_text(encoding="utf-8"),
                      flags=re.S)
        found = LONG_FLOAT.findall(text)
        if found:
            out[str(page.relative_to(site))] = found[:5]
    return out


_REFUSING: list[socket.socket] = []


def refused_port() -> int:
    """A loopback port where connections are refused at once and no server can start: a socket bound to it
    that never listens, kept open while the test process lives. (Binding port 0 and closing the socket left a
    free port that another xdist worker's server could be given before the test connected.)"""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _REFUSING.append(s)
    return s.getsockname()[1]


def evalkit_here(project: Path, *args: str, env: dict[str, str] | None = None,
                 check: bool = True) -> subprocess.CompletedProcess[str]:
    """`evalkit()` (the project's config, run from beside the project), but in this process: see `in_process`.
    For commands whose process is not what the test is about (`check`, an importer, `estimate`: a project with a rag
    suite imports ragas, 4 s of CPU per process, once per test worker here); `run` keeps its subprocess."""
    full_env = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), **(env or {})}
    full_env.pop("EVALKIT_RELEASE", None) if "EVALKIT_RELEASE" not in (env or {}) else None
    proc = in_process(list(args), cwd=project.parent, env=full_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"evalkit {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def in_process(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """What `subprocess.run([python, -m, evalkit, *args], cwd=cwd, env=env, capture_output=True, text=True)`
    gives (exit status, stdout, stderr), from `evalkit.cli.main` in this process: no interpreter to start and no
    evalkit to import (0.6 s of CPU each; issue #30). An exception main() lets out is printed as Python prints it,
    with exit status 1, as the process's would be. os.environ (main seals the API keys out of it) and the working
    directory are put back afterwards, and the per-process project cache (`evalkit.project`) is emptied before
    and after, as a new process would have it. Not for `run` (doit, signal handlers, gc.freeze and the
    process-wide state of a run), nor for an environment read once per process or thread (PYTHONPATH for an
    outside plug-in, DOCKER_HOST for the Docker client): those keep their subprocess."""
    import contextlib
    import io
    import traceback

    from evalkit import project as project_mod
    from evalkit.cli import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    project_mod._loaded.clear()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if not isinstance(exc.code, (int, type(None))):
                    print(exc.code, file=sys.stderr)
            except Exception:  # what the interpreter prints before it exits 1
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        project_mod._loaded.clear()
    return subprocess.CompletedProcess([sys.executable, "-m", "evalkit", *args], code, out.getvalue(), err.getvalue())


HERE_COMMANDS = frozenset({"check", "import"})
"""The commands `evalkit_at` runs in this process (`in_process`): they read files and write a suite or print
problems; no test of them is about the process."""


def evalkit_at(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`python -m evalkit ARGS` in ``cwd`` with the environment ``env``: `check` and `import` in this process
    (`in_process`, the same exit status and output without an interpreter to start), the others (`run`, ...)
    in a subprocess."""
    if args and args[0] in HERE_COMMANDS:
        return in_process(list(args), cwd=cwd, env=env)
    return python_m_evalkit(list(args), cwd=cwd, env=env, timeout=timeout)


def both(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    """One change to a project folder made of several, in order (tests that parametrize over changes)."""
    def go(root: Path) -> None:
        for step in steps:
            step(root)
    return go


def record_group_kills(monkeypatch) -> list[tuple[int, tuple[str, int, int] | None]]:
    """Every `os.killpg` from now on, with the /proc state of the group's number at the call (None: no process
    has that pid, so the group's leader was reaped before its group was killed)."""
    calls: list[tuple[int, tuple[str, int, int] | None]] = []
    real = os.killpg

    def killpg(pgid: int, sig: int) -> None:
        calls.append((pgid, _procs.stat(pgid)))
        real(pgid, sig)

    monkeypatch.setattr(os, "killpg", killpg)
    return calls
