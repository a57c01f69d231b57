"""Sandbox images: use the local one, else pull, else build the case's Dockerfile folder."""

from __future__ import annotations

import logging
from pathlib import Path

import docker
import docker.errors
import requests.exceptions

from evalkit.sandbox.dockerclient import client

log = logging.getLogger(__name__)


class ImageUnavailable(RuntimeError):
    """No image of that name is present, pullable or buildable (an infrastructure failure)."""


def image_id(name: str) -> str | None:
    """The local image id (``sha256:...``) of ``name``, or None when absent."""
    try:
        return client().images.get(name).id
    except docker.errors.ImageNotFound:
        return None


def ensure_image(name: str, dockerfile_dir: str | None = None) -> str:
    """The id of image ``name``: present locally, else pulled, else built from ``dockerfile_dir``.

    Raises ImageUnavailable with the reasons of every attempt when none works.
    """
    found = image_id(name)
    if found:
        return found
    attempts = []
    try:
        return client().images.pull(name).id
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        attempts.append(f"pull failed: {_first_line(exc)}")
    if dockerfile_dir:
        if not (Path(dockerfile_dir) / "Dockerfile").is_file():
            attempts.append(f"no Dockerfile in {dockerfile_dir}")
        else:
            try:
                image, _logs = client().images.build(path=str(dockerfile_dir), tag=name, rm=True, forcerm=True)
                return image.id
            except (docker.errors.BuildError, docker.errors.APIError) as exc:
                attempts.append(f"build of {dockerfile_dir} failed: {_first_line(exc)}")
    else:
        attempts.append("no Dockerfile folder to build it from")
    hint = " (for the default image run scripts/build-base-image.sh)" if name.startswith("evalkit/") else ""
    raise ImageUnavailable(f"image {name} is not present locally{hint}; " + "; ".join(attempts))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
