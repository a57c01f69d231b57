"""What a sandbox backend reports for one phase of the runner, and the per-phase control files."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Literal, Protocol


class SandboxError(RuntimeError):
    """The sandbox itself failed (daemon, container start, crash): an infrastructure failure."""


@dataclass
class PhaseOutcome:
    """The result of running the runner script once (``main`` or a rerun)."""

    phase: str
    nonce: str
    state: Literal["exited", "timeout", "oom"]
    exit_code: int | None
    """The runner's exit status (None after a timeout)."""
    files: dict[str, bytes] = field(default_factory=dict)
    """Files of ``out/<phase>/`` by relative name (``status``, ``log``, ``junit/0/report.xml``...)."""
    files_capped: bool = False
    crash_output: bytes = b""
    """The sandbox's own stdout/stderr, read (capped) only when the runner left no output file."""
    duration_s: float = 0.0
    sentinel: list[bytes] = field(default_factory=list)
    """What evalkit's pytest plugin wrote this phase (one JSON file per pytest process), read from the
    results folder outside the tree, never from ``out/``."""

    def marker(self, name: str) -> str | None:
        """The value of a ``<nonce> <value>`` marker file; None when absent or written without the nonce."""
        raw = self.files.get(name)
        if raw is None:
            return None
        text = raw.decode("utf-8", "replace").strip()
        nonce, _, value = text.partition(" ")
        return value if secrets.compare_digest(nonce, self.nonce) and value else None

    def tampered(self, name: str) -> bool:
        """A marker file exists but does not carry this phase's nonce."""
        return name in self.files and self.marker(name) is None


class Sandbox(Protocol):
    """One prepared sandbox (tree and control files in place) that can run phases, then be closed."""

    image_digest: str | None
    notes: list[str]

    @property
    def isolation(self) -> Literal["docker", "local"]:
        """Which backend runs the phases (read-only: a backend class declares its own literal)."""
        ...

    def __enter__(self) -> Sandbox:
        """Fill the sandbox; it is closed on exit, also after a failure."""
        ...

    def __exit__(self, *exc: object) -> None:
        ...

    def run_phase(self, phase: str, command: str | None) -> PhaseOutcome:
        """Run the runner for ``phase`` (``command`` is written as ``<phase>.cmd`` unless None)."""
        ...

    def close(self) -> None:
        """Remove everything the sandbox created."""
        ...


def new_nonce() -> str:
    return secrets.token_hex(16)
