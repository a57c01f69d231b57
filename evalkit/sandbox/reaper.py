"""Containers are removed off the test run's path: one background thread per process removes them in turn.

A test run ends when its results are fetched; removing its container (a Docker round trip of 0.1 to 0.3 s on a
loaded machine) then happens here while the next run goes. The container keeps its slot of the container budget
until it is gone (``on_done``), so containers that exist stay within the budget. ``drain`` waits until every
container handed over is removed; it runs when the process exits, and the next run's sweep removes any container
a killed process left (evalkit.sandbox.docker_backend.sweep_leftovers).
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from typing import Callable

import docker.errors
import requests.exceptions

from evalkit.sandbox.dockerclient import client

log = logging.getLogger(__name__)

#: Seconds the process's exit waits for the removals still queued.
EXIT_WAIT_S = 60.0

_queue: queue.Queue[tuple[str, str, Callable[[], None]]] = queue.Queue()
_lock = threading.Lock()
_thread: threading.Thread | None = None


def _remove(ident: str, name: str) -> None:
    try:
        client().api.remove_container(ident, force=True, v=True)  # this thread's client (sessions are per thread)
    except docker.errors.NotFound:
        log.debug("container %s was already removed", name)
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        log.warning("could not remove container %s (the next sweep will): %s", name, exc)


def _work() -> None:
    while True:
        ident, name, on_done = _queue.get()
        try:
            _remove(ident, name)
        finally:
            try:
                on_done()
            finally:
                _queue.task_done()


def remove_later(ident: str, name: str, on_done: Callable[[], None]) -> None:
    """Remove the container ``ident`` in the background, then call ``on_done`` (which releases its budget slot)."""
    global _thread
    with _lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_work, name="evalkit-container-reaper", daemon=True)
            _thread.start()
    _queue.put((ident, name, on_done))


def drain(timeout: float = EXIT_WAIT_S) -> bool:
    """Wait until every container handed over is removed (at most ``timeout`` seconds); whether all were."""
    done = threading.Event()

    def wait() -> None:
        _queue.join()
        done.set()

    threading.Thread(target=wait, daemon=True).start()
    return done.wait(timeout)


atexit.register(drain)
