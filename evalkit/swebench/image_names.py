"""The name a run gives a SWE-bench environment image (light: `evalkit run` lists its images before any stage loads)."""

from __future__ import annotations

from evalkit.config import Config


def official_image(cfg: Config, image: str) -> str:
    """A SWE-bench environment image name: as written when it names a registry namespace, else under
    `sandbox.swebench_namespace` (SWE-bench's `__` -> `_1776_` rule applied, as the harness names them)."""
    ns = cfg.sandbox.swebench_namespace.strip().strip("/")
    if "/" in image or not ns:
        return image
    return f"{ns}/{image}".replace("__", "_1776_").lower()
