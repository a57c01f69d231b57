"""One isolation per run: where this run's tests execute, decided once when the run starts.

``auto`` asks the Docker daemon once (when the doit graph is built, before any execute task) and
keeps the answer for the whole process: a daemon that dies later gives infrastructure errors
(retried next run), never executions on the host. ``auto`` picks the local backend only when no
daemon answers at the start, and then only suites marked ``trusted: true`` run on the host:
running untrusted outputs on the host needs an explicit ``sandbox.backend: local``.
"""

from __future__ import annotations

import threading
from typing import Literal

from pydantic import model_validator

from evalkit.config import AUTO_BACKEND
from evalkit.errors import InputError, Problem
from evalkit.models import Model
from evalkit.sandbox.backends import auto_candidates
from evalkit.sandbox.backends import backend as part

BackendName = str
"""A ``sandbox.backend`` value: ``auto`` or a registered sandbox backend (evalkit.sandbox.backends)."""


class IsolationDecision(Model):
    """Where the tests of one run execute (the execute stage's config slice holds it)."""

    backend: BackendName
    """The configured ``sandbox.backend``."""
    isolation: Literal["docker", "local"]
    """Where every execution of this run goes: a Docker container, or a subprocess on this host."""
    reason: str
    """Why: configured, or what the daemon answered when the run started."""
    chosen: str = ""
    """The sandbox backend that runs this run's executions (``auto``'s pick; else ``backend``)."""

    @model_validator(mode="after")
    def _chosen(self) -> "IsolationDecision":
        if not self.chosen:  # a decision recorded before backends were plug-ins: docker or local
            self.chosen = self.backend if self.backend != AUTO else self.isolation
        return self

    @property
    def untrusted_on_host(self) -> bool:
        """Whether outputs of suites not marked trusted may run on the host (only when asked for explicitly:
        a backend named in ``sandbox.backend``, not ``auto``'s fallback)."""
        return self.isolation == "docker" or self.backend != AUTO


AUTO = AUTO_BACKEND

_lock = threading.Lock()
_decided: dict[str, IsolationDecision] = {}


def decide(backend: BackendName) -> IsolationDecision:
    """Ask now (for ``auto``: each candidate's ``available()``, most preferred first, e.g. one daemon
    ping); not cached: see ``for_run``."""

    if backend != AUTO:
        return IsolationDecision(backend=backend, isolation=part(backend).isolation,
                                 reason=f"sandbox.backend: {backend}", chosen=backend)
    for name in auto_candidates():
        chosen = part(name)
        if chosen.available():
            return IsolationDecision(backend=backend, isolation=chosen.isolation, chosen=name,
                                     reason=f"sandbox.backend: auto; {chosen.auto_reason or name + ' is available'}")
    raise InputError(Problem("sandbox.backend", None, "auto: no registered sandbox backend that auto may pick "
                                                      "is available; name one in sandbox.backend"))


def for_run(backend: BackendName) -> IsolationDecision:
    """This process's decision for ``backend``: made at the first call, then kept for the whole run."""
    with _lock:
        found = _decided.get(backend)
        if found is None:
            found = _decided[backend] = decide(backend)
        return found


def forget() -> None:
    """Drop the decisions of this process (a new run in the same process, tests)."""
    with _lock:
        _decided.clear()


def refusal(decision: IsolationDecision, suite: str, trusted: bool) -> str | None:
    """Why an execution of ``suite`` may not run under ``decision`` (None: it may)."""
    if trusted or decision.untrusted_on_host:
        return None
    return (f"not run: no Docker daemon answered when the run started, and suite {suite!r} is not marked "
            "trusted, so its outputs are not executed on this host (start Docker and run again; or set "
            "sandbox.backend: local, or trusted: true in the suite's suite.yaml, to run them on the host)")
