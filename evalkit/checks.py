"""`evalkit check`: every problem of the project at once, each with file:line."""

from __future__ import annotations

from pathlib import Path

from evalkit.cases import discover
from evalkit.checks_deep import deep_checks
from evalkit.config import load_config
from evalkit.errors import InputError, Problem
from evalkit.labels import project_labels


def check_project(config: str | None = None) -> tuple[list[Problem], str]:
    try:
        cfg = load_config(config)
    except InputError as exc:
        return exc.problems, ""
    project = discover(cfg.cases_path, cfg.suites, cache_dir=None, shown_root=Path(cfg.root))
    problems = list(cfg.left_out) + list(project.problems)  # systems and cases left out of a run

    problems += deep_checks(cfg, project)  # systems and cases, deeper: evalkit/checks_deep.py

    problems += project_labels(cfg, project)[1]  # people's labels against the suites' judge rubrics
    summary = f"{len(project.suites)} suites, {len(project.cases)} cases, {len(cfg.systems)} systems"
    return problems, summary
