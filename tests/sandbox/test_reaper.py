"""The reaper (evalkit.sandbox.reaper) removes every container handed to it, on a real engine.

In a whole test run its thread died on a ``KeyError`` that requests raised while iterating ``os.environ``
(pytest changed ``PYTEST_CURRENT_TEST`` in the main thread meanwhile): the container being removed was left
behind, and the next test of that worker found it. A removal is now tried again after any failure but a daemon
that does not answer, and the thread outlives every removal.
"""

from __future__ import annotations

import threading
import uuid

import docker.api.client
import pytest
import requests.exceptions

from evalkit.sandbox import reaper
from evalkit.sandbox.docker_backend import LABEL, OWNER_LABEL, _owner
from evalkit.sandbox.dockerclient import client

pytestmark = pytest.mark.docker


def _container(image: str) -> str:
    return client().api.create_container(image, ["true"], name=f"evalkit-reaper-test-{uuid.uuid4().hex[:12]}",
                                         labels={LABEL: "1", OWNER_LABEL: _owner()})["Id"]


def _exists(ident: str) -> bool:
    return bool(client().api.containers(all=True, filters={"id": ident}))


def test_a_removal_that_raised_is_tried_again_and_the_next_one_still_runs(docker_engine: str, monkeypatch) -> None:
    real = docker.api.client.APIClient.remove_container
    calls: dict[str, int] = {}

    def flaky(self, ident, *args, **kwargs):  # the first attempt at each container fails as the environ race did
        calls[ident] = calls.get(ident, 0) + 1
        if calls[ident] == 1:
            raise KeyError("PYTEST_CURRENT_TEST")
        return real(self, ident, *args, **kwargs)

    assert reaper.drain(60)  # removals other tests of this worker queued go first, unpatched
    monkeypatch.setattr(docker.api.client.APIClient, "remove_container", flaky)
    first, second = _container(docker_engine), _container(docker_engine)
    released = []
    reaper.remove_later(first, "first", lambda: released.append("first"))
    reaper.remove_later(second, "second", lambda: released.append("second"))
    assert reaper.drain(30)
    assert not _exists(first) and not _exists(second), "a removal that raised once must not leave its container"
    assert calls == {first: 2, second: 2} and released == ["first", "second"]


def test_a_daemon_that_does_not_answer_is_not_asked_again(docker_engine: str, monkeypatch, caplog) -> None:
    calls = []

    def refused(self, ident, *args, **kwargs):
        calls.append(ident)
        raise requests.exceptions.ConnectionError("connection refused")

    ident = _container(docker_engine)
    assert reaper.drain(60)  # removals other tests of this worker queued go first, unpatched
    try:
        monkeypatch.setattr(docker.api.client.APIClient, "remove_container", refused)
        released = threading.Event()
        reaper.remove_later(ident, "gone-daemon", released.set)
        assert reaper.drain(30) and released.is_set()
        assert calls == [ident]  # one attempt: no retry
        assert "could not remove container gone-daemon" in caplog.text and "ConnectionError" in caplog.text
    finally:
        monkeypatch.undo()
        client().api.remove_container(ident, force=True)
