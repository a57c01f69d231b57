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
import time
from typing import Callable

import docker.errors
import requests.exceptions

from evalkit.sandbox.dockerclient import client

log = logging.getLogger(__name__)

#: Seconds the process's exit waits for the removals still queued.
EXIT_WAIT_S = 60.0
#: Waits before each new attempt at a removal that failed while the daemon answered (busy, 409 removal under way)
#: or for a reason of this process (requests iterating ``os.environ`` while another thread changed it raised
#: ``KeyError``, and the removal was lost with the thread). A daemon that does not answer is not asked again.
RETRY_WAITS_S = (0.5, 1.0, 2.0)

_queue: queue.Queue[tuple[str, str, Callable[[], None]]] = queue.Queue()
_lock = threading.Lock()
_thread: threading.Thread | None = None


def _remove(ident: str, name: str) -> None:
    """Remove one container; a removal that failed is tried again (`RETRY_WAITS_S`) unless the daemon is gone."""
    for wait in (*RETRY_WAITS_S, None):
        try:
            client().api.remove_container(ident, force=True, v=True)  # this thread's client (sessions are per thread)
            return
        except docker.errors.NotFound:
            log.debug("container %s was already removed", name)
            return
        except requests.exceptions.ConnectionError as exc:  # absent, gone, or silent (DaemonSilent): not asked again
            failure: BaseException = exc
            break
        except Exception as exc:  # noqa: BLE001 - whatever fails one removal, the reaper goes on with the next
            failure = exc
        if wait is None:
            break
        time.sleep(wait)
    log.warning("could not remove container %s (a later run's sweep removes it once this process has exited or its "
                "deadline has passed): %s: %s", name, type(failure).__name__, failure)


def _work() -> None:
    while True:  # the thread outlives every removal: one that raised lost the containers queued behind it
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
