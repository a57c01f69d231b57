"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import realdata

IMAGE = os.environ.get("EVALKIT_SANDBOX_IMAGE", "evalkit/python-pytest:bookworm")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def docker_engine() -> str:
    """The sandbox image's id on a live Docker engine; skip (or fail in CI) when there is none."""
    from evalkit.sandbox import docker_available
    from evalkit.sandbox.images import ImageUnavailable, ensure_image

    def unavailable(reason: str):
        if os.environ.get("EVALKIT_REQUIRE_DOCKER") == "1":
            pytest.fail(f"EVALKIT_REQUIRE_DOCKER=1 but {reason}")
        pytest.skip(reason)

    if not docker_available():
        unavailable("no Docker engine answers (start dockerd, or set DOCKER_HOST)")
    try:
        return ensure_image(IMAGE)
    except ImageUnavailable:
        build = subprocess.run([str(REPO / "scripts" / "build-base-image.sh"), IMAGE], capture_output=True, text=True)
        if build.returncode != 0:
            unavailable(f"image {IMAGE} missing and scripts/build-base-image.sh failed: {build.stderr[-500:]}")
        return ensure_image(IMAGE)


@pytest.fixture(autouse=True)
def _unconfined_writes():
    """Loading a project confines this process's writes to its folders (evalkit.fsutil.confine_writes):
    forget them after each test, so a later test's own tmp_path stays writable."""
    yield
    from evalkit import fsutil

    fsutil._write_roots.clear()


@pytest.fixture(autouse=True)
def _unsealed_keys():
    """A sandbox run seals this process's API keys away (evalkit.llm.keys.seal): after each test, the key
    variables are as they were before it, and nothing stays sealed or registered with the redactor."""
    from evalkit import fsutil
    from evalkit.llm import keys

    before = {name: os.environ[name] for name in keys.key_names(os.environ)}
    yield
    for name in keys.key_names(os.environ):
        if name not in before:
            del os.environ[name]
    os.environ.update(before)
    keys._sealed.clear()
    fsutil._secrets.clear()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.realdata(*parts)``: the test reads ../shared/realdata/<parts> (`helpers.realdata`:
    fails in CI when absent, skips elsewhere)."""
    for mark in item.iter_markers("realdata"):
        realdata(*mark.args)


@pytest.fixture
def realdata_dir() -> Path:
    """../shared/realdata (`helpers.realdata`: fails in CI when absent, skips elsewhere)."""
    return realdata()
