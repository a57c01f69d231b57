"""Adapters: how a system under test is run on one case; registered as ``evalkit.adapters`` entry points."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

from evalkit.artifacts import Sample
from evalkit.cases import Case
from evalkit.contracts import Adapter
from evalkit.plugins import Registry, registry

if TYPE_CHECKING:
    from evalkit.cases import Project
    from evalkit.config import Config, System
    from evalkit.llm.calls import LLMRequest
    from evalkit.llm.settings import JudgeSettings


@dataclass(frozen=True)
class RunContext:
    """What an adapter may need besides the system and the case."""

    root: Path
    """Folder of the config file (relative paths in system settings resolve here)."""
    work: Path
    """The project's work folder (caches)."""
    judge: JudgeSettings | dict[str, Any] | None = None
    """Judge settings (for adapters that share the model client)."""


Planner = Callable[["System", Case, int, RunContext, "JudgeSettings"], "tuple[LLMRequest, JudgeSettings]"]
"""``(system, case, sample_index, ctx, judge) -> (request, settings)``: the one model call a sample makes."""


def adapter(name: str, kinds: set[str] | None = None, *, free: bool = False,
            plan: Planner | None = None) -> Callable[[Adapter], Adapter]:
    """Mark an adapter with the name evalkit.yaml's `adapter:` uses and the suite kinds it answers (None:
    every kind). Registration is the ``evalkit.adapters`` entry point naming it (evalkit's own in
    pyproject.toml); an adapter without this mark answers every kind.

    ``free``: its answers cost nothing and need no model (gold, empty, recorded): ``evalkit estimate`` and the
    judge audit's plan compute them instead of guessing. ``plan``: the model call one sample makes, which
    ``evalkit estimate`` counts before the run (model adapters)."""

    def deco(fn: Adapter) -> Adapter:
        vars(fn).update(adapter_name=name, kinds=kinds, free=free, plan=plan)
        return fn

    return deco


def adapters() -> Registry[Adapter]:
    """The adapters by name (``evalkit.plugins.registry("adapters")``); ``names()`` imports none of them."""
    return cast("Registry[Adapter]", registry("adapters"))  # what the group's entry points name: its contract


def supported_kinds(name: str) -> set[str] | None:
    """Suite kinds adapter ``name`` answers; None = every kind."""
    return getattr(adapters().get(name), "kinds", None)


def is_free(name: str) -> bool:
    """Whether adapter ``name``'s answers cost nothing to compute (see ``adapter``)."""
    return bool(getattr(adapters().get(name), "free", False))


def planner(name: str) -> Planner | None:
    """The model call planner of adapter ``name`` (see ``adapter``); None for adapters that call no model."""
    return getattr(adapters().get(name), "plan", None)


def runs_on(system: System, suite_name: str, kind: str) -> bool:
    """Does this system take part in this suite?"""
    if system.suites is not None:
        return suite_name in system.suites
    kinds = supported_kinds(system.adapter)
    return kinds is None or kind in kinds


def participating(cfg: Config, project: Project) -> list[tuple[System, Case]]:
    """Every (system, case) pair a run covers, in config and case order."""
    pairs = []
    for system in cfg.systems:
        for case in project.cases:
            if runs_on(system, case.suite, project.suites[case.suite].kind):
                pairs.append((system, case))
    return pairs


def run_system(system: System, case: Case, sample_index: int, ctx: RunContext) -> Sample:
    return adapters().get(system.adapter)(system, case, sample_index, ctx)
