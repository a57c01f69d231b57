"""The ``local`` executor: every stage call in this process, on the host's own files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.executors.call import CallResult, StageCall, run_call

if TYPE_CHECKING:
    from evalkit.config import Config


class LocalExecutor:
    """Runs each call in-process; the files are the originals (checked by digest against the call)."""

    name = "local"

    def run(self, call: StageCall) -> CallResult:
        return run_call(call)


def local(cfg: Config | None = None, settings: dict[str, Any] | None = None) -> LocalExecutor:
    """Factory registered as ``evalkit.executors: local`` (no settings)."""
    return LocalExecutor()
