"""The image store: evalkit's sandbox images on this Docker host, their sizes, and eviction under a cap.

Which images are evalkit's: those evalkit built (the base image, a case's ``dockerfile_dir``), and those
the project's use record says a run of this project pulled or built (an image that was on the host before
a run needed it is never evalkit's). Nothing else on the host is ever removed. evalkit labels what it
builds with ``evalkit.image`` (what built it) and ``evalkit.image.name`` (the name it was built as), and
an image counts as built by evalkit only while that name is one of its own tags: Docker copies a parent's
labels into every image built ``FROM`` it, so an image someone builds on evalkit's base carries both
labels too, under a name of its own (`built_by_evalkit`).

When an image was last used: the project's use record (``<work>/image-store.json``), which ``evalkit
run`` updates at its end for every image the run needed (Docker keeps no last-use time of an image);
an evalkit image with no record here (built by another project) counts from Docker's creation time.

Sizes are Docker's own (``docker system df -v``): an image's ``Size`` holds all its layers,
``SharedSize`` the part other images share. The store's size is the sum of the evalkit images'
unshared bytes plus the largest shared part once (the common base layers), and evicting an image
frees its unshared bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import docker.errors
import requests.exceptions
from pydantic import ValidationError

from evalkit.fsutil import atomic_write_text
from evalkit.models import Model
from evalkit.sandbox.dockerclient import DOCKER_FAILURES, client

log = logging.getLogger(__name__)

LABEL = "evalkit.image"
"""The label evalkit puts on every image it builds (value: what built it)."""
NAME_LABEL = "evalkit.image.name"
"""The label evalkit puts on every image it builds beside `LABEL`: the name (repository:tag) it built it as."""
RECORD_FILE = "image-store.json"
"""The project's use record, in its work folder."""
GB = 1_000_000_000


def build_labels(what: str, name: str) -> dict[str, str]:
    """The labels of an image evalkit builds as ``name`` (``what``: base, case)."""
    return {LABEL: what, NAME_LABEL: name}


def built_by_evalkit(labels: dict[str, str] | None, tags: list[str]) -> bool:
    """Whether an image with these labels and tags is one evalkit built: labelled, and still tagged with the
    name it was built as. An image built FROM one of evalkit's inherits both labels but not the tag; an
    image labelled by an evalkit older than `NAME_LABEL` counts only through the project's use record."""
    labels = labels or {}
    return LABEL in labels and labels.get(NAME_LABEL) in tags


class ImageRecord(Model):
    """What the project knows of one image (by Docker id)."""

    names: list[str] = []
    """Names the runs used it by."""
    origin: str = "present"
    """`pulled` or `built` when a run of this project brought it to the host; `present` when it was there first."""
    last_used: str = ""
    """When a run last needed it (ISO 8601, UTC)."""


class ImageRecords(Model):
    """``<work>/image-store.json``: the images this project's runs used, and the evictions it made."""

    images: dict[str, ImageRecord] = {}
    """Docker image id -> record."""
    evicted: list[str] = []
    """One line per eviction (newest last, the last 200 kept)."""


def load_records(work: Path) -> ImageRecords:
    """The project's use record (empty when absent or unreadable: it only orders evictions)."""
    try:
        return ImageRecords.model_validate_json((work / RECORD_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValidationError, UnicodeDecodeError):
        return ImageRecords()


def save_records(work: Path, records: ImageRecords) -> None:
    records.evicted = records.evicted[-200:]
    atomic_write_text(work / RECORD_FILE, records.model_dump_json(indent=1) + "\n")


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def image_ids(names: Iterable[str]) -> dict[str, str | None]:
    """Name -> local image id (None: absent)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = client().images.get(name).id
        except docker.errors.ImageNotFound:
            out[name] = None
    return out


def record_use(work: Path, used: dict[str, str | None], present_before: dict[str, str | None]) -> ImageRecords:
    """Mark every image a run needed as used now: ``used`` name -> id after the run, ``present_before`` the
    same when it started (an image absent then and present now was pulled or built by this run)."""
    records = load_records(work)
    stamp = now_iso()
    for name, image in used.items():
        if image is None:
            continue
        rec = records.images.get(image) or ImageRecord(origin="present" if present_before.get(name) else "pulled")
        if name not in rec.names:
            rec.names = sorted({*rec.names, name})
        rec.last_used = stamp
        records.images[image] = rec
    save_records(work, records)
    return records


@dataclass
class StoredImage:
    """One evalkit image on the host."""

    id: str
    names: list[str]
    size: int
    """All its layers (bytes)."""
    shared: int
    """Bytes of its layers other images use too."""
    last_used: str
    """ISO time: the use record's, else Docker's creation time."""
    known_from: str
    """`record` or `docker created` (where last_used comes from)."""
    containers: int
    """Containers (running or stopped) made from it, as Docker counts them."""

    @property
    def unique(self) -> int:
        return max(self.size - max(self.shared, 0), 0)


def _created_iso(created: object) -> str:
    if isinstance(created, (int, float)):
        return datetime.fromtimestamp(created, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return str(created or "")


def store_images(records: ImageRecords) -> list[StoredImage]:
    """The evalkit images on the host (built by evalkit, `built_by_evalkit`, or pulled/built by this project's runs),
    oldest use first."""
    out = []
    for row in client().df().get("Images") or []:
        rec = records.images.get(row["Id"])
        labelled = built_by_evalkit(row.get("Labels"), row.get("RepoTags") or [])
        if not labelled and (rec is None or rec.origin == "present"):
            continue  # not evalkit's: never touched
        last, where = (rec.last_used, "record") if rec and rec.last_used else (_created_iso(row.get("Created")), "docker created")
        out.append(StoredImage(id=row["Id"], names=list(row.get("RepoTags") or []), size=int(row.get("Size") or 0),
                               shared=int(row.get("SharedSize") or 0), last_used=last, known_from=where,
                               containers=int(row.get("Containers") or 0)))
    return sorted(out, key=lambda i: (i.last_used, i.id))


def store_bytes(images: list[StoredImage]) -> int:
    """The store's size: unshared bytes of each image plus the largest shared part once."""
    return sum(i.unique for i in images) + max((max(i.shared, 0) for i in images), default=0)


def _container_images() -> set[str]:
    """Ids of the images every container on the host (running or stopped) was made from."""
    return {str(c.get("ImageID") or "") for c in client().api.containers(all=True)}  # one call, no look per container


@dataclass
class Eviction:
    """What one pass of the cap did."""

    cap: int
    before: int
    after: int
    evicted: list[StoredImage]
    kept_needed: list[StoredImage]
    failed: list[str]


def evict_over_cap(work: Path, cap_gb: float, needed: Iterable[str], say: Callable[[str], None]) -> Eviction:
    """Remove evalkit images, least recently used first, until the store is at most ``cap_gb`` GB.

    Never an image named in ``needed`` (the current run's), nor one a container (running or stopped) was
    made from, nor any image that is not evalkit's. Each eviction is logged, told to ``say`` and kept in
    the use record."""
    records = load_records(work)
    images = store_images(records)
    keep = {i for i in image_ids(needed).values() if i}
    busy = _container_images()
    cap = int(cap_gb * GB)
    before = size = store_bytes(images)
    evicted: list[StoredImage] = []
    failed: list[str] = []
    for img in images:
        if size <= cap:
            break
        if img.id in keep or img.id in busy or img.containers > 0:
            continue
        try:
            for name in img.names or [img.id]:
                client().images.remove(name, noprune=False)
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            failed.append(f"{', '.join(img.names) or img.id}: {str(exc).splitlines()[0][:200]}")
            continue
        size -= img.unique
        evicted.append(img)
        line = (f"evicted {', '.join(img.names) or img.id} ({img.unique / GB:.3f} GB freed; last used "
                f"{img.last_used} from the {img.known_from}); store {size / GB:.3f} GB, cap {cap_gb:g} GB")
        log.info("image store: %s", line)
        say(f"image store: {line}")
        records.evicted.append(f"{now_iso()} {line}")
        records.images.pop(img.id, None)
    if evicted:
        save_records(work, records)
    kept = [i for i in images if i.id in keep]
    if size > cap:
        say(f"image store: {size / GB:.3f} GB stays over the cap of {cap_gb:g} GB: the rest is the current run's "
            f"images or in use by containers")
    return Eviction(cap=cap, before=before, after=size, evicted=evicted, kept_needed=kept, failed=failed)


def after_run(work: Path, names: list[str], present_before: dict[str, str | None], cap_gb: float | None,
              say: Callable[[str], None]) -> None:
    """Record that a run used ``names``, then apply the cap; a daemon gone since the run started is said, not raised."""
    try:
        record_use(work, image_ids(names), present_before)
        if cap_gb is not None:
            evict_over_cap(work, cap_gb, names, say)
    except DOCKER_FAILURES as exc:
        say(f"image store: not updated, Docker failed: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}")


def image_sizes(names: Iterable[str]) -> dict[str, int | None]:
    """Name -> Docker's size of the local image (bytes; None: not present here)."""
    out: dict[str, int | None] = {}
    for name in names:
        try:
            out[name] = int(client().images.get(name).attrs.get("Size") or 0)
        except docker.errors.ImageNotFound:
            out[name] = None
    return out

