"""`evalkit init [DIR] [--kind K]...`: a runnable project from nothing.

It writes ``evalkit.yaml`` (commented: every section says what it is for), one example suite per chosen
kind (the demo's suites, shipped with evalkit), and a CI workflow; then, unless ``--no-history``, it
evaluates a first release (``v1``) and moves the project on to ``v2`` with improved assistants, so the
first ``evalkit run`` already shows a release-against-release comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from evalkit import __version__
from evalkit.cli import command
from evalkit.errors import InputError, Problem
from evalkit.report.site import PACKAGE_TEMPLATES

#: The demo's suites, shipped as package data (evalkit/demo_cases links to the repository's cases/).
DEMO_CASES = Path(__file__).resolve().parents[1] / "demo_cases"


def demo_suites() -> list[str]:
    """The demo's suites that `init` can copy (one per kind, named for it)."""
    return sorted(p.name for p in DEMO_CASES.iterdir() if (p / "suite.yaml").is_file())


def assistants() -> list[dict[str, Any]]:
    """The example assistants (templates/starter/assistants.yaml)."""
    return YAML(typ="safe").load((PACKAGE_TEMPLATES / "starter" / "assistants.yaml").read_text(encoding="utf-8"))


def _init_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", default=".", help="the project folder (created; must be empty if it exists)")
    p.add_argument("--kind", action="append", choices=demo_suites(), metavar="KIND",
                   help=f"an example suite of this kind (repeatable; default all: {', '.join(demo_suites())})")
    p.add_argument("--no-history", action="store_true",
                   help="do not evaluate the first release v1 (the first run then has nothing to compare with)")


def _template(name: str, **values: object) -> str:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined  # deferred: jinja2, only when pages are rendered

    env = Environment(loader=FileSystemLoader(str(PACKAGE_TEMPLATES / "starter")), undefined=StrictUndefined,
                      keep_trailing_newline=True)
    return env.get_template(name).render(**values)


def config_text(kinds: list[str], release: str) -> str:
    """The commented evalkit.yaml of a starter project at ``release`` (v1 or v2)."""
    systems = []
    for a in assistants():
        suites = [k for k in kinds if k in a["suites"]]
        if not suites:
            continue
        version = a[release]
        systems.append({"name": a["name"], "adapter": "command", "description": json.dumps(a["description"]),
                        "command": json.dumps(["{python}", "-m", f"evalkit.demo_systems.{version['module']}"]),
                        "settings": json.dumps(version["settings"]) if version.get("settings") else "",
                        "suites": suites})
    systems.append({"name": "gold", "adapter": "gold", "description": json.dumps("The cases' reference answers (the ceiling)"),
                    "command": "", "settings": "", "suites": []})
    return _template(
        "evalkit.yaml.j2", kinds=kinds, release=release, previous="v1" if release == "v2" else None, baseline="gold", systems=systems,
        title="My assistant's evaluation")


@command("init", "write a runnable project: evalkit.yaml, one example suite per kind, a CI workflow, and a first "
         "release v1 evaluated, so the first `evalkit run` (v2) shows a comparison", _init_args)
def cmd_init(args: argparse.Namespace) -> int:
    root = Path(args.dir).resolve()
    if root.exists() and any(root.iterdir()):
        raise InputError(Problem(str(root), None, "the folder is not empty: `evalkit init` writes a new project "
                                 "(give another DIR)"))
    kinds = list(dict.fromkeys(args.kind or demo_suites()))
    root.mkdir(parents=True, exist_ok=True)
    for kind in kinds:
        shutil.copytree(DEMO_CASES / kind, root / "cases" / kind, ignore=shutil.ignore_patterns("__pycache__"))
    workflow = root / ".github" / "workflows" / "evalkit.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(_template("evalkit-ci.yml.j2", version=__version__), encoding="utf-8")
    (root / ".gitignore").write_text(".evalkit/\n", encoding="utf-8")
    config = root / "evalkit.yaml"
    print(f"evalkit: wrote {root} ({', '.join(kinds)})")
    if not args.no_history:
        config.write_text(config_text(kinds, "v1"), encoding="utf-8")
        print("evalkit: evaluating release v1 (the history the first run compares with) ...", flush=True)
        env = {k: v for k, v in os.environ.items() if k not in ("EVALKIT_CONFIG", "EVALKIT_RELEASE", "EVALKIT_SELECT")}
        proc = subprocess.run([sys.executable, "-m", "evalkit", "run", "-q"], cwd=root, env=env)
        if proc.returncode != 0:
            print(f"evalkit: the v1 run exited {proc.returncode}: the project is written at v1; fix what it said, "
                  "then `evalkit run`", file=sys.stderr)
            return proc.returncode
    config.write_text(config_text(kinds, "v2"), encoding="utf-8")
    print(f"evalkit: the project is at release v2. Next:\n  cd {os.path.relpath(root)} && evalkit run\n"
          "and open site/v2/index.html: v2 against v1, case by case")
    return 0
