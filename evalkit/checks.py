"""`evalkit check`: every problem of the project at once, each with file:line."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from evalkit.cases import discover
from evalkit.config import load_config
from evalkit.errors import InputError, Problem


def check_project(config: str | None = None) -> tuple[list[Problem], str]:
    try:
        cfg = load_config(config)
    except InputError as exc:
        return exc.problems, ""
    project = discover(cfg.cases_path, cfg.suites, cache_dir=None, shown_root=Path(cfg.root))
    problems = list(project.problems)
    for system in cfg.systems:
        if system.adapter == "command":
            prog = system.command[0].replace("{python}", sys.executable)
            if not (shutil.which(prog) or shutil.which(str(cfg.resolve(prog)))):
                problems.append(Problem(cfg.path, None, f"system {system.name!r}: command {prog!r} not found"))
        if system.adapter == "recorded":
            path = cfg.resolve(system.path)
            if not path.exists():
                problems.append(Problem(cfg.path, None, f"system {system.name!r}: recorded path {system.path!r} does not exist"))
            elif path.is_file():
                from evalkit.systems.recorded import load_predictions

                try:
                    load_predictions(path)
                except InputError as exc:
                    problems.extend(exc.problems)
        for s in system.suites or []:
            if s not in project.suites:
                problems.append(Problem(cfg.path, None, f"system {system.name!r}: unknown suite {s!r}"))
    summary = f"{len(project.suites)} suites, {len(project.cases)} cases, {len(cfg.systems)} systems"
    return problems, summary
