"""Sandbox backends: where a test run's phases execute, registered as ``evalkit.sandbox_backends`` entry points.

``sandbox.backend:`` names one, or ``auto``: among the backends that declare an ``auto_preference``, the
one with the highest preference whose ``available()`` answers yes, asked once when the run starts
(evalkit.isolation). evalkit's own: ``docker`` (preference 10: when a Docker daemon answers) and
``local`` (preference 0: always available, the fallback). A backend an outside package adds declares no
preference unless ``auto`` may pick it; naming it in ``sandbox.backend:`` always works.

A backend opens a ``Sandbox`` (evalkit.sandbox.phase) for one run: the runner, the checks before it and
the grading are the same for every backend. Importing this module imports neither docker-py nor the
backends' own modules (a run's start asks only ``auto``'s question).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, cast

from evalkit.config import AUTO_BACKEND as AUTO
from evalkit.plugins import registry
from evalkit.sandbox import daemon
from evalkit.lazy_modules import later

if TYPE_CHECKING:
    from evalkit.plugins import Registry
    from evalkit.sandbox.phase import Sandbox
    from evalkit.sandbox.script import ControlFiles
    from evalkit.sandbox.spec import TestRunSpec

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.sandbox import docker_backend as docker_backend_code
    from evalkit.sandbox import images as images_code
    from evalkit.sandbox import local_backend as local_backend_code
    from evalkit.sandbox import phase as phase_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    docker_backend_code = later("evalkit.sandbox.docker_backend")
    images_code = later("evalkit.sandbox.images")
    local_backend_code = later("evalkit.sandbox.local_backend")
    phase_code = later("evalkit.sandbox.phase")

class SandboxBackend:
    """One backend; subclass it (or follow its shape) and register an instance."""

    isolation: Literal["docker", "local"] = "local"
    """How far the tests are kept from this host: ``docker`` (a container) or ``local`` (a process on this
    host: under ``auto``, outputs of suites not marked trusted are then refused)."""
    auto_preference: int | None = None
    """Rank among the backends ``auto`` may pick (highest available wins); None: ``auto`` never picks it."""
    auto_reason: str = ""
    """Why ``auto`` picked it, said in the report (e.g. "a Docker daemon answered when the run started")."""
    uses_images: bool = False
    """Whether runs need a container image (the base image is built before the run, ``image_id`` keys the cache)."""
    trust_matters: bool = True
    """Whether ``TestRunSpec.patch_trusted`` (the case's own reference patch) changes how it runs; when not, a
    reference patch's run and a system's run of the same patch share one cached result (one container)."""

    def available(self) -> bool:
        """Whether it can run now (asked only for ``auto``, once per run)."""
        return True

    def image_id(self, spec: TestRunSpec) -> str | None:
        """Id of the image ``spec`` would run in (part of the result cache's key); None when it is absent
        (the run gets it) or the backend uses none. Raises ``SandboxError`` when it cannot tell."""
        return None

    def open(self, spec: TestRunSpec, ctl: ControlFiles) -> Sandbox:
        """A prepared sandbox for ``spec`` with the control files ``ctl``; ``SandboxError`` when it cannot be."""
        raise NotImplementedError


class DockerBackend(SandboxBackend):
    """One container per run, in the case's image (pulled or built when absent)."""

    isolation: Literal["docker", "local"] = "docker"
    auto_preference = 10
    auto_reason = "a Docker daemon answered when the run started"
    uses_images = True
    trust_matters = False  # every patch runs in the same container, trusted or not

    def available(self) -> bool:
        return daemon.daemon_answers()

    def image_id(self, spec: TestRunSpec) -> str | None:
        import docker.errors  # deferred: docker-py, only when a container runs
        import requests.exceptions  # deferred: requests (with docker-py), only when a container runs


        try:
            return images_code.image_id(spec.image)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise phase_code.SandboxError(f"Docker daemon unreachable or failing: {exc}") from exc

    def open(self, spec: TestRunSpec, ctl: ControlFiles) -> Sandbox:
        try:
            digest = images_code.ensure_image(spec.image, spec.dockerfile_dir)
        except images_code.ImageUnavailable:
            raise
        except Exception as exc:
            raise phase_code.SandboxError(f"Docker daemon unreachable or failing: {exc}") from exc
        return docker_backend_code.DockerSandbox(spec, ctl, digest)


class LocalBackend(SandboxBackend):
    """A subprocess on a temporary copy of the tree on this host (weaker isolation)."""

    isolation: Literal["docker", "local"] = "local"
    auto_preference = 0
    auto_reason = "no Docker daemon answered when the run started"

    def open(self, spec: TestRunSpec, ctl: ControlFiles) -> Sandbox:
        return local_backend_code.LocalSandbox(spec, ctl)


DOCKER = DockerBackend()
LOCAL = LocalBackend()


def backends() -> Registry[SandboxBackend]:
    """The sandbox backends by name (``evalkit.plugins.registry("sandbox_backends")``)."""

    return cast("Registry[SandboxBackend]", registry("sandbox_backends"))  # the group's contract


def backend(name: str) -> SandboxBackend:
    """The backend registered as ``name`` (not ``auto``: see evalkit.isolation.for_run)."""
    return backends().get(name)


def auto_candidates() -> list[str]:
    """Names ``auto`` may pick, most preferred first (imports the backends' parts, not their sandboxes)."""
    ranked = [(part.auto_preference, name) for name in backends().names()
              if (part := backend(name)).auto_preference is not None]
    return [name for _, name in sorted(ranked, key=lambda x: (-x[0], x[1]))]


def uses_images(name: str) -> bool:
    """Whether runs under ``sandbox.backend: name`` may need a container image (``auto``: yes)."""
    return name == AUTO or backend(name).uses_images
