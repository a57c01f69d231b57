"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import evalkit, realdata

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


@pytest.fixture(scope="session")
def demo_run(docker_engine: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The whole demo project (the repository's evalkit.yaml and cases/, Docker sandbox) run once per test
    session with `evalkit run -q --strict`, and that run's process. Read it, never change it: the tests
    sharing it (test_report_identical's numbers and pages, test_canaries') would see the change. One full
    demo run costs 2 to 3 minutes on 2 cores; each test that ran its own paid that again."""
    project = tmp_path_factory.mktemp("demo-run") / "demo"
    project.mkdir()
    shutil.copy(REPO / "evalkit.yaml", project / "evalkit.yaml")
    shutil.copytree(REPO / "cases", project / "cases")
    proc = evalkit(project, "run", "-q", "--strict", timeout=1500, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return project, proc


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
