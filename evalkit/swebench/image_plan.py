"""The SWE-bench image plan: which images a run of SWE-bench cases needs, how many, and how many GB.

Names come from the pinned harness (``swebench`` 5.0.2): ``ImageSpec(...).name`` is
``sweb.eval.x86_64.<instance_id>:<tag>``, lower case, and under a registry namespace ``__`` becomes
``_1776_`` (Docker Hub allows no dunders). Traps found in that version: it has **no** base or environment
tier any more (the 4.x harness built ``sweb.base.*`` once, ``sweb.env.*`` once per repo + version and reused
it across that group's instances; 5.x builds or pulls one image per instance from the dataset's own
Dockerfile or ``image`` field, and ``swebench.image_builder.__all__`` still lists the removed
``build_base_images`` / ``build_env_images``, so a star import fails); ``ImageSpec`` refuses an empty
``dockerfile`` even when only its name is wanted. The plan therefore counts one image per instance, and
shows the repo + version groups (the 4.x environments) because instances of one group share most layers
when pulled from one registry build.

Sizes: Docker's, for an image present on this host; otherwise a documented average:
Epoch AI measured the unique layers of SWE-bench's 500 Verified images on Docker Hub at 189 GiB
(https://epoch.ai/blog/swebench-docker, "How to run SWE-bench Verified in one hour on one machine"),
0.378 GiB (0.406 GB) per instance image. LogicStar measured 240 GiB of local storage for the same set
after `docker pull` (https://logicstar.ai/blog/how-we-made-swe-bench-50x-smaller); the plan uses Epoch's figure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from evalkit.swebench.harness import HarnessUnavailable

GIB = 1024 ** 3
VERIFIED_IMAGES = 500
VERIFIED_UNIQUE_GIB = 189
PER_IMAGE_BYTES = VERIFIED_UNIQUE_GIB * GIB // VERIFIED_IMAGES
"""Average unique bytes of one SWE-bench instance image (Epoch AI's Verified figure)."""
SIZE_SOURCE = ("Epoch AI, unique layers of the 500 SWE-bench Verified images on Docker Hub: 189 GiB "
               "(https://epoch.ai/blog/swebench-docker)")


@dataclass
class PlannedImage:
    """One instance image."""

    name: str
    """As the run names it."""
    instance_id: str
    repo: str
    version: str
    local_bytes: int | None = None
    """Docker's size when the image is on this host."""


@dataclass
class ImagePlan:
    """The images of a run's SWE-bench cases."""

    images: list[PlannedImage] = field(default_factory=list)
    harness_named: int = 0
    """Images whose name is the harness's own (ImageSpec.name) for their instance."""
    per_image_bytes: int = PER_IMAGE_BYTES
    size_source: str = SIZE_SOURCE

    @property
    def environments(self) -> Counter[tuple[str, str]]:
        """(repo, version) -> instances (the 4.x harness's one environment image each)."""
        return Counter((i.repo, i.version) for i in self.images)

    @property
    def present(self) -> list[PlannedImage]:
        return [i for i in self.images if i.local_bytes is not None]

    @property
    def local_bytes(self) -> int:
        return sum(i.local_bytes or 0 for i in self.images)

    @property
    def missing_bytes(self) -> int:
        """Estimated bytes of the images not on this host (the documented average each)."""
        return self.per_image_bytes * (len(self.images) - len(self.present))

    def as_json(self) -> dict[str, object]:
        return {"images": len(self.images), "environments": len(self.environments), "present": len(self.present),
                "local_bytes": self.local_bytes, "missing_estimated_bytes": self.missing_bytes,
                "per_image_bytes": self.per_image_bytes, "harness_named": self.harness_named,
                "size_source": self.size_source}


def harness_image_name(instance_id: str, namespace: str | None) -> str:
    """The harness's image name of an instance (``swebench.image_builder.ImageSpec.name``)."""
    try:
        from swebench.image_builder.image_spec import ImageSpec  # deferred: the official SWE-bench harness (~1.7 s, optional extra), only for SWE-bench cases
    except ImportError as exc:
        raise HarnessUnavailable(str(exc)) from None
    # ImageSpec refuses an empty dockerfile; only the name is wanted here.
    return str(ImageSpec(instance_id=instance_id, dockerfile="# named only", namespace=namespace or None).name)


def image_plan(rows: list[tuple[str, str, str, str]], sizes: dict[str, int | None], namespace: str | None) -> ImagePlan:
    """The plan of ``rows`` (instance_id, repo, version, image name as the run names it), with Docker's
    ``sizes`` of the images present here. Raises HarnessUnavailable without the `swebench` package."""
    plan = ImagePlan()
    seen: set[str] = set()
    for instance_id, repo, version, image in rows:
        if image in seen:
            continue
        seen.add(image)
        plan.images.append(PlannedImage(name=image, instance_id=instance_id, repo=repo, version=version,
                                        local_bytes=sizes.get(image)))
        plan.harness_named += image == harness_image_name(instance_id, namespace)
    return plan
