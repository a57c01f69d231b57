"""The sandbox images a run needs, with their sizes, and the image store's cap applied after a run.

``evalkit run``, and plain ``doit`` in its ``images:run`` task (evalkit.tasks.images_bracket), lists the
images its selected cases run in when it starts (``<work>/sandbox-images.json``: name, cases, Docker's size
when present; the report's "Sandbox images" table reads it), records at its end
that it used them (evalkit.sandbox.image_store's use record) and, with ``sandbox.image_store_gb`` set,
evicts the least recently used evalkit images over the cap, never one of this run's. ``evalkit estimate``
prints the same list and, for SWE-bench cases whose tree is in SWE-bench's images, the image plan
(evalkit.swebench.image_plan).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from evalkit.cases import Case
from evalkit.casemodels import PatchInputs
from evalkit.config import Config
from evalkit.fsutil import atomic_write_text
from evalkit.kind_registry import kind
from evalkit.models import Model
from evalkit.report.models import SandboxImage
from evalkit.sandbox.backends import uses_images
from evalkit.swebench.image_names import official_image

IMAGES_FILE = "sandbox-images.json"
"""The images the last `evalkit run` needed, in its work folder."""


class RunImages(Model):
    """``<work>/sandbox-images.json``."""

    images: list[SandboxImage] = []
    """Each image the run's cases run in."""
    docker: bool = False
    """A Docker daemon answered when the run started (sizes are known only then)."""


def case_image(cfg: Config, case: Case) -> str | None:
    """The image a case's tests run in, as the run names it (None: the case runs no tests in an image)."""
    if not case.ok or not kind(case.kind).sandbox_image(case):
        return None
    image = str(getattr(case.inputs, "image", "") or "")
    if isinstance(case.inputs, PatchInputs) and case.inputs.tree_in_image:
        image = official_image(cfg, image)  # SWE-bench's image, under sandbox.swebench_namespace
    return image or None


def version_tag(case: Case) -> str:
    """A SWE-bench case's version, from the `v<version>` tag `evalkit import swebench` gives it ("" when none)."""
    return next((t[1:] for t in case.tags if re.fullmatch(r"v\d[\w.]*", t)), "")


def swebench_rows(cfg: Config, cases: Iterable[Case]) -> list[tuple[str, str, str, str]]:
    """(instance_id, repo, version, image as the run names it) of every case whose tree is in SWE-bench's image."""
    rows = []
    for case in cases:
        if case.ok and isinstance(case.inputs, PatchInputs) and case.inputs.tree_in_image:
            rows.append((case.id, case.inputs.repo or "", version_tag(case), official_image(cfg, case.inputs.image)))
    return rows


def needed_images(cfg: Config, cases: Iterable[Case]) -> dict[str, int]:
    """Image name -> number of cases that run in it (empty when the backend runs no images)."""
    if not uses_images(cfg.sandbox.backend):
        return {}
    out: dict[str, int] = {}
    for case in cases:
        image = case_image(cfg, case)
        if image:
            out[image] = out.get(image, 0) + 1
    return dict(sorted(out.items()))


def image_rows(needed: dict[str, int], sizes: dict[str, int | None]) -> list[SandboxImage]:
    return [SandboxImage(name=name, cases=n, present=sizes.get(name) is not None, size_bytes=sizes.get(name))
            for name, n in needed.items()]


def local_sizes(names: Iterable[str]) -> dict[str, int | None] | None:
    """Docker's size of each local image (None for one absent); None when no daemon answers, or it fails while
    asked (the run goes on: its cases say what the daemon does to them)."""
    from evalkit.sandbox.dockerclient import DOCKER_FAILURES, docker_available  # deferred: docker-py (heavy), only when a case runs in an image

    if not docker_available():
        return None
    from evalkit.sandbox.image_store import image_sizes  # deferred: docker-py (heavy), only when a case runs in an image

    try:
        return image_sizes(names)
    except DOCKER_FAILURES:
        return None


def before_run(cfg: Config, cases: Iterable[Case]) -> dict[str, int | None] | None:
    """At the start of `evalkit run`: write the list of images with sizes; name -> size, or None when no
    case needs an image or no daemon answers."""
    needed = needed_images(cfg, cases)
    sizes = local_sizes(needed) if needed else None
    listed = RunImages(images=image_rows(needed, sizes or {}), docker=sizes is not None)
    path = cfg.work_path / IMAGES_FILE
    text = listed.model_dump_json(indent=1) + "\n"
    try:
        unchanged = path.read_text(encoding="utf-8") == text
    except (FileNotFoundError, UnicodeDecodeError):
        unchanged = False
    if needed and not unchanged:
        atomic_write_text(path, text)
    elif not needed and path.exists():
        path.unlink()
    return sizes


def read_run_images(work: Path) -> list[SandboxImage]:
    """The images the last run listed (empty when none or unreadable)."""
    try:
        return RunImages.model_validate_json((work / IMAGES_FILE).read_text(encoding="utf-8")).images
    except (FileNotFoundError, ValidationError, UnicodeDecodeError):
        return []


def listed_sizes(work: Path) -> dict[str, int | None] | None:
    """`before_run`'s answer, read back from the list it wrote (plain `doit`'s teardown runs in a later action):
    name -> size, None when no image is listed or no daemon answered."""
    try:
        listed = RunImages.model_validate_json((work / IMAGES_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValidationError, UnicodeDecodeError):
        return None
    return {i.name: i.size_bytes for i in listed.images} if listed.docker and listed.images else None


def after_run(cfg: Config, sizes_before: dict[str, int | None] | None) -> None:
    """At the end of `evalkit run`: record that the run used its images, then apply ``sandbox.image_store_gb``."""
    if sizes_before is None:
        return
    from evalkit.sandbox.image_store import after_run as store_after_run  # deferred: docker-py (heavy), only when a case runs in an image

    present_before = {n: ("present" if s is not None else None) for n, s in sizes_before.items()}
    store_after_run(cfg.work_path, list(sizes_before), present_before, cfg.sandbox.image_store_gb,
                    say=lambda line: print(f"evalkit: {line}", file=sys.stderr, flush=True))
