"""A loaded project (config + cases), memoized per process so doit actions don't re-read YAML."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from evalkit.cases import Case, Project, discover
from evalkit.config import Config, config_path, load_config
from evalkit.errors import InputError

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
        if project.fatal:
            raise InputError(project.fatal)
        _loaded[key] = Loaded(cfg, project)
        return _loaded[key]


def participating(cfg: Config, project: Project) -> list[tuple[object, Case]]:
    """Every (system, case) pair a run covers, in config and case order: the same list as
    evalkit.systems.base.participating, asking runs_on once per (system, suite), not per case."""
    from evalkit.systems.base import runs_on

    memo: dict[tuple[int, str], bool] = {}
    pairs = []
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
