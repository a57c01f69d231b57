"""One Docker client per thread (requests sessions are not shared between threads)."""

from __future__ import annotations

import threading

import docker
import docker.errors
import requests.exceptions

_local = threading.local()


def client() -> docker.DockerClient:
    """This thread's Docker client (created on first use, from the environment)."""
    cli = getattr(_local, "client", None)
    if cli is None:
        cli = docker.from_env(timeout=120)
        _local.client = cli
    return cli


DOCKER_FAILURES = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)
"""What a call to the daemon raises when the daemon, not the call, failed (absent, gone, refusing)."""


def docker_available() -> bool:
    """Whether a Docker daemon answers a ping from this process."""
    try:
        return bool(client().ping())
    except DOCKER_FAILURES:
        _local.client = None
        return False
