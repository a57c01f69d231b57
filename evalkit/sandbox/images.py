"""Sandbox images: use the local one, else pull, else build the case's Dockerfile folder.

The base image (``sandbox.base_image``, default ``evalkit/python-pytest:bookworm``) is evalkit's
own: when it is absent, ``build_base_image`` builds it from the recipe shipped in
``evalkit/sandbox/base_image/``: its Dockerfile where a registry answers, else Debian packages
(``from-debian.sh``: mmdebstrap, else debootstrap, bookworm + docker import; needs root and a Debian mirror).
``evalkit run`` does so in one task before any execute or validate task (evalkit.tasks).
Every image evalkit builds carries the labels ``evalkit.image`` and ``evalkit.image.name``
(evalkit.sandbox.image_store.build_labels: what ``sandbox.image_store_gb`` may evict).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import docker
import docker.errors
import requests.exceptions
from docker.models.images import Image

from evalkit.sandbox.dockerclient import client
from evalkit.sandbox.image_errors import ImageUnavailable
from evalkit.sandbox.image_store import build_labels
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.sandbox import dockerclient as dockerclient_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    dockerclient_code = later("evalkit.sandbox.dockerclient")

log = logging.getLogger(__name__)

DEFAULT_BASE_IMAGE = "evalkit/python-pytest:bookworm"
RECIPE_DIR = Path(__file__).resolve().parent / "base_image"
"""The base image's Dockerfile and from-debian.sh (package data)."""


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
        return _built_id(client().images.pull(name), name)
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        attempts.append(f"pull failed: {_first_line(exc)}")
    if dockerfile_dir:
        if not (Path(dockerfile_dir) / "Dockerfile").is_file():
            attempts.append(f"no Dockerfile in {dockerfile_dir}")
        else:
            try:
                image, _logs = client().images.build(path=str(dockerfile_dir), tag=name, rm=True, forcerm=True,
                                                     labels=build_labels("case", name))
                return _built_id(image, name)
            except (docker.errors.BuildError, docker.errors.APIError) as exc:
                attempts.append(f"build of {dockerfile_dir} failed: {_first_line(exc)}")
    else:
        attempts.append("no Dockerfile folder to build it from")
    hint = " (for the default image run scripts/build-base-image.sh)" if name.startswith("evalkit/") else ""
    raise ImageUnavailable(f"image {name} is not present locally{hint}; " + "; ".join(attempts))


def _built_id(image: Image, name: str) -> str:
    """The id of an image Docker just pulled or built (docker-py types ``Image.id`` as optional)."""
    if image.id is None:
        raise ImageUnavailable(f"Docker returned image {name} without an id")
    return image.id


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def _registry_reachable() -> bool:
    """The base of the shipped Dockerfile can be pulled (a registry answers)."""
    try:
        client().images.pull("debian", tag="bookworm-slim")
        return True
    except (docker.errors.APIError, requests.exceptions.RequestException):
        return False


def build_base_image(name: str, say=print) -> str:
    """Build evalkit's base image as ``name`` and return its id, telling ``say`` what it does.

    From the shipped Dockerfile where a registry is reachable, else from Debian packages
    (from-debian.sh). Raises ImageUnavailable with both reasons when neither works.
    """
    start = time.monotonic()
    reasons = []
    if _registry_reachable():
        say(f"evalkit: sandbox image {name} is absent: building it from {RECIPE_DIR / 'Dockerfile'}")
        try:
            image, _logs = client().images.build(path=str(RECIPE_DIR), tag=name, rm=True, forcerm=True,
                                                 labels=build_labels("base", name))
            say(f"evalkit: built {name} in {time.monotonic() - start:.0f} s")
            return _built_id(image, name)
        except (docker.errors.BuildError, docker.errors.APIError) as exc:
            reasons.append(f"docker build failed: {_first_line(exc)}")
    else:
        reasons.append("no registry reachable for the Dockerfile's base")
    say(f"evalkit: sandbox image {name} is absent and no registry answers: building it from Debian packages "
        "(bookworm + python3-pytest, git, patch; under a minute with mmdebstrap, a minute or two with debootstrap)")
    proc = subprocess.run(["sh", str(RECIPE_DIR / "from-debian.sh"), name], capture_output=True, text=True,
                          env={**os.environ})
    found = image_id(name)
    if proc.returncode == 0 and found:
        tool = re.search(r"^built \S+ with (\S+) in", proc.stdout, re.MULTILINE)
        using = f" ({tool.group(1)})" if tool else ""
        say(f"evalkit: built {name} from Debian packages{using} in {time.monotonic() - start:.0f} s")
        return found
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    reasons.append(f"from-debian.sh exited {proc.returncode}: {' / '.join(tail)[:500]}")
    raise ImageUnavailable(f"image {name} is absent and could not be built: " + "; ".join(reasons))


def base_image_ready(name: str) -> bool:
    """doit ``uptodate`` of the image task: the image is present, or no Docker daemon answers, or the one that
    answers fails when asked for the image (the local backend or an infrastructure error follows; nothing to build)."""

    if not dockerclient_code.docker_available():
        return True
    try:
        return image_id(name) is not None
    except dockerclient_code.DOCKER_FAILURES:
        return True


def ensure_base_image(name: str) -> bool:
    """doit action of the image task: build ``name`` when Docker answers and it is absent.

    A failed build is printed and leaves the run going: each execute task then records an
    infrastructure error naming the missing image (retried next run).
    """
    if base_image_ready(name):
        return True
    try:
        build_base_image(name, say=lambda text: print(text, flush=True))
    except ImageUnavailable as exc:
        print(f"evalkit: {exc}", file=sys.stderr, flush=True)
    return True
