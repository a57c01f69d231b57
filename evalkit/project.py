"""A loaded project (config + cases), memoized per process so doit actions don't re-read YAML."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from evalkit.cases import Case, LeftOut, Project, discover
from evalkit.config import Config, System, config_path, load_config
from evalkit.errors import InputError, Problem
from evalkit.kind_registry import kind
from evalkit.names import is_valid_name
from evalkit.systems.base import runs_on
from evalkit.yamlio import line_of, load_yaml

_lock = threading.Lock()
_loaded: dict[str, "Loaded"] = {}


@dataclass
class Loaded:
    """Config and cases of one project."""

    config: Config
    project: Project

    def case(self, suite: str, case_id: str) -> Case:
        return self.project.case(f"{suite}/{case_id}")


def load(path: str | None = None, refresh: bool = False) -> Loaded:
    """Config and cases, read once per process (per config file).

    Every command that runs anything loads through here: names are checked (evalkit.names) and
    writes confined to the work and site folders (evalkit.fsutil.confine_writes) before anything
    is written. Raises InputError for what no run can go past: a broken config, a bad release
    label, no cases folder or no suite in it (`Project.fatal`). Bad cases and suites are left
    out (`Project.left_out`) and the rest loads.
    """
    key = str(config_path(path))
    with _lock:
        if not refresh and key in _loaded:
            return _loaded[key]
        cfg = load_config(key)
        project = discover(cfg.cases_path, cfg.suites, cache_dir=cfg.work_path / "cache", shown_root=Path(cfg.root))
        blockers = project.fatal + unknown_suites(cfg, project)
        if blockers:
            raise InputError(blockers)
        project.left_out[:0] = [LeftOut(None, p) for p in cfg.left_out]  # systems with a bad name

        for suite in project.suites.values():  # each suite's kind module, loaded: its metrics are registered
            if suite.spec is not None:
                kind(suite.spec.kind)
        _loaded[key] = Loaded(cfg, project)
        return _loaded[key]


def unknown_suites(cfg: Config, project: Project) -> list[Problem]:
    """A system's `suites` naming a suite with no folder: the run would quietly skip it, so it is a
    project-level problem (the same message as `evalkit check`). A folder left out of the run (no
    suite.yaml, bad name) is listed as such instead."""
    bad = [(system, j, s) for system in cfg.systems for j, s in enumerate(system.suites or [])
           if s not in project.suites and not (is_valid_name(s) and (cfg.cases_path / s).is_dir())]
    if not bad:
        return []

    try:
        node = load_yaml(Path(cfg.path))
    except InputError:
        node = None
    index: dict[str, int] = {}
    for i, raw in enumerate(node.get("systems") or [] if isinstance(node, dict) else []):
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            index.setdefault(raw["name"], i)
    out = []
    for system, j, s in bad:
        at = index.get(system.scenario_of or system.name)
        line = line_of(node, ("systems", at, "suites", j)) if node is not None and at is not None else None
        out.append(Problem(cfg.path, line, f"system {system.name!r}: unknown suite {s!r}; "
                                           f"expected one of {', '.join(sorted(project.suites)) or '(none)'}"))
    return out


def participating(cfg: Config, project: Project) -> list[tuple[System, Case]]:
    """Every (system, case) pair a run covers, in config and case order: the same list as
    evalkit.systems.base.participating, asking runs_on once per (system, suite), not per case."""

    memo: dict[tuple[int, str], bool] = {}
    pairs: list[tuple[System, Case]] = []
    for i, system in enumerate(cfg.systems):
        for case in project.cases:
            key = (i, case.suite)
            ok = memo.get(key)
            if ok is None:
                ok = memo[key] = runs_on(system, case.suite, project.suites[case.suite].kind)
            if ok:
                pairs.append((system, case))
    return pairs


def forget() -> None:
    """Drop memoized projects (tests that edit files in-process)."""
    with _lock:
        _loaded.clear()
