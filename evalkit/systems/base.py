"""The adapter registry: how a system under test is run on one case."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from evalkit.artifacts import Sample
from evalkit.cases import Case

if TYPE_CHECKING:
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


class Adapter(Protocol):
    """Runs a system on a case; returns one Sample. Raises nothing for the system's own failures."""

    def __call__(self, system: Any, case: Case, sample_index: int, ctx: RunContext) -> Sample: ...


ADAPTERS: dict[str, Adapter] = {}
# Suite kinds each adapter can answer; None = every kind.
SUPPORTED_KINDS: dict[str, set[str] | None] = {}


def adapter(name: str, kinds: set[str] | None = None) -> Callable[[Adapter], Adapter]:
    """Register an adapter under the name used in evalkit.yaml's `adapter:` key."""

    def deco(fn: Adapter) -> Adapter:
        ADAPTERS[name] = fn
        SUPPORTED_KINDS[name] = kinds
        return fn

    return deco


def load_adapters() -> None:
    """Import the built-in adapters (registration happens at import)."""
    from evalkit.systems import command, gold, recorded  # noqa: F401
    try:
        from evalkit.systems import anthropic_adapter, openai_adapter  # noqa: F401
    except ImportError:  # pragma: no cover - only while the module is absent
        pass


def runs_on(system: Any, suite_name: str, kind: str) -> bool:
    """Does this system take part in this suite?"""
    if system.suites is not None:
        return suite_name in system.suites
    load_adapters()
    kinds = SUPPORTED_KINDS.get(system.adapter)
    return kinds is None or kind in kinds


def participating(cfg: Any, project: Any) -> list[tuple[Any, Case]]:
    """Every (system, case) pair a run covers, in config and case order."""
    pairs = []
    for system in cfg.systems:
        for case in project.cases:
            if runs_on(system, case.suite, project.suites[case.suite].kind):
                pairs.append((system, case))
    return pairs


def run_system(system: Any, case: Case, sample_index: int, ctx: RunContext) -> Sample:
    load_adapters()
    return ADAPTERS[system.adapter](system, case, sample_index, ctx)
