"""One Docker client per thread (requests sessions are not shared between threads), and a bounded wait for a
daemon that does not answer (evalkit.sandbox.silence)."""

from __future__ import annotations

import threading
from typing import Any

import docker
import docker.errors
import requests
import requests.exceptions

from evalkit.sandbox import silence


class CallDeadline(int):
    """The client's own deadline for a call, in seconds: a call that misses it found the daemon hung, and marks it
    silent. Calls with a deadline of their own are not of this type: waiting for a container (the test's timeout),
    pulls and builds (none)."""


CALL_S = CallDeadline(120)
"""Seconds a Docker call may wait for its answer once the daemon has answered this thread's handshake."""

_local = threading.local()


class DaemonSilent(requests.exceptions.ConnectionError):
    """The daemon did not answer in time a moment ago, so this call was not sent (evalkit.sandbox.silence).

    A ``ConnectionError``: every handler of a failed Docker call (``DOCKER_FAILURES``, and the sandbox's
    ``requests.exceptions.RequestException``) takes it as the daemon's failure, an infrastructure error."""


def client() -> docker.DockerClient:
    """This thread's Docker client (created on first use, from the environment).

    Raises ``DaemonSilent`` at once while the daemon is taken as silent; creating the client asks the daemon its
    API version, with ``ANSWER_S`` seconds to answer, and a timeout there marks it silent."""
    if silence.silent_for() > 0:
        raise DaemonSilent(silence.why_silent())
    cli = getattr(_local, "client", None)
    if cli is None:
        try:
            cli = docker.from_env(timeout=silence.ANSWER_S)
        except docker.errors.DockerException as exc:
            if silence.is_timeout(exc):
                silence.note_silent()
            raise
        cli.api.timeout = CALL_S  # the handshake is answered: later calls (pulls, builds, archives) may take long
        _watch(cli.api)
        _local.client = cli
    return cli


def _watch(api: docker.APIClient) -> None:
    """Mark the daemon silent when one of ``api``'s calls misses the client's own deadline (``CallDeadline``): a
    daemon that hangs in the middle of a run then costs one deadline, not one per call for the rest of the run."""
    send = api.send

    def watched(request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        try:
            return send(request, **kwargs)
        except requests.exceptions.RequestException as exc:
            if isinstance(kwargs.get("timeout"), CallDeadline) and silence.is_timeout(exc):
                silence.note_silent()
            raise

    api.send = watched  # type: ignore[method-assign]  # this client's session only


DOCKER_FAILURES = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)
"""What a call to the daemon raises when the daemon, not the call, failed (absent, gone, refusing, silent)."""


def docker_available(again: bool = False) -> bool:
    """Whether a Docker daemon answers a ping from this process within ``ANSWER_S`` seconds.

    A daemon that did not answer in time moments ago is not asked again for ``RECHECK_S`` seconds unless
    ``again`` (a caller that waits and retries on purpose)."""
    if again:
        silence.note_answered()
    try:
        cli = client()
        cli.api.timeout = silence.ANSWER_S  # this thread's own client: no other thread sees the short timeout
        try:
            answered = bool(cli.ping())
        finally:
            cli.api.timeout = CALL_S
    except DOCKER_FAILURES as exc:
        if silence.is_timeout(exc):
            silence.note_silent()
        _local.client = None
        return False
    silence.note_answered()
    return answered
