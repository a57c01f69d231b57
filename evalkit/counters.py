"""Process-wide counters the live display of `evalkit run` (evalkit.progress) shows: the model client counts each
call it charges to a budget, the Docker sandbox each container while it runs, the cluster executor adds a line."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator


class Counters:
    """Model calls, spend and running containers of this process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.model_calls = 0
            self.spend_usd = 0.0
            self.budgeted_spend_usd = 0.0
            self.budget_usd: float | None = None
            self.containers = 0
            self.containers_started = 0

    def add_budget(self, limit_usd: float | None) -> None:
        """A budget was made (one per judge client): its limit adds to the run's."""
        if limit_usd is None:
            return
        with self._lock:
            self.budget_usd = (self.budget_usd or 0.0) + limit_usd

    def model_call(self, usd: float, budgeted: bool) -> None:
        """One model call was charged (``budgeted``: to a budget with a limit)."""
        with self._lock:
            self.model_calls += 1
            self.spend_usd += usd
            if budgeted:
                self.budgeted_spend_usd += usd

    @contextmanager
    def container(self) -> Iterator[None]:
        """Counts a container as running for the duration of the block."""
        with self._lock:
            self.containers += 1
            self.containers_started += 1
        try:
            yield
        finally:
            with self._lock:
                self.containers -= 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"model_calls": self.model_calls, "spend_usd": self.spend_usd,
                    "budgeted_spend_usd": self.budgeted_spend_usd, "budget_usd": self.budget_usd,
                    "containers": self.containers, "containers_started": self.containers_started}


COUNTERS = Counters()

EXTRA_LINES: list[Callable[[], str]] = []
"""More status lines of the live display, each asked at every refresh (the cluster executor's calls per worker)."""
