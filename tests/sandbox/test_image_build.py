"""A run on a Docker engine that lacks the sandbox base image builds it first, and says so.

The base image is configured under a throwaway name (the shared evalkit/python-pytest:bookworm is
never removed): with no registry reachable here, evalkit builds it from Debian packages
(mmdebstrap or debootstrap + docker import, under a minute or two) in one task before any execute or validate task;
the cases then run in Docker rather than ending as infrastructure errors; the next run builds
nothing. The throwaway image is removed at the end.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest

from evalkit.sandbox.images import DEFAULT_BASE_IMAGE, image_id
from helpers import REPO, evalkit, executed, in_ci

pytestmark = pytest.mark.docker


def test_run_builds_the_absent_base_image_once_before_executing(tmp_path: Path, docker_engine: str) -> None:
    from evalkit.sandbox.dockerclient import client

    name = f"evalkit-test/python-pytest:throwaway-{uuid.uuid4().hex[:8]}"
    assert name != DEFAULT_BASE_IMAGE and image_id(name) is None
    root = tmp_path / "p"
    suite = root / "cases" / "patch"
    shutil.copytree(REPO / "cases" / "patch" / "_src", suite / "_src")
    shutil.copytree(REPO / "cases" / "patch" / "round-half-up", suite / "round-half-up")
    text = (REPO / "cases" / "patch" / "suite.yaml").read_text()
    assert f"image: {DEFAULT_BASE_IMAGE}" in text
    (suite / "suite.yaml").write_text(text.replace(f"image: {DEFAULT_BASE_IMAGE}", f"image: {name}"))
    (root / "evalkit.yaml").write_text(
        "release: r1\nbaseline: gold\nsystems:\n  - name: gold\n    adapter: gold\n  - name: empty\n    adapter: empty\n"
        f"sandbox:\n  backend: docker\n  base_image: {name}\n")
    try:
        first = evalkit(root, "run", timeout=900)
        out = first.stdout
        assert f"sandbox image {name} is absent" in out and "building it from Debian packages" in out, out
        # the recipe's root file system tool: mmdebstrap where installed (CI installs it: the path CI tests)
        tool = "mmdebstrap" if shutil.which("mmdebstrap") else "debootstrap"
        assert not in_ci() or tool == "mmdebstrap"
        assert f"built {name} from Debian packages ({tool}) in" in out, out + first.stderr
        built = image_id(name)
        assert built is not None
        tasks = [line.strip() for line in out.splitlines()]
        build_line = next(i for i, t in enumerate(tasks) if t.startswith(f"evalkit: built {name}"))
        sandboxed = [i for i, t in enumerate(tasks) if t.startswith((".  execute:", ".  validate:"))]
        assert sandboxed and min(sandboxed) > build_line  # built before any case ran in it
        execution = json.loads((root / ".evalkit/artifacts/gold/patch/round-half-up/execution.json").read_text())
        assert execution["status"] == "ok" and execution["isolation"] == "docker", execution
        run_result = execution["runs"][0]
        assert run_result["status"] == "completed" and run_result["resolved"] is True, run_result
        image = client().images.get(name)
        assert image.attrs["Config"]["User"] == "evalkit"
        assert image.history()[0]["Comment"].startswith(f"evalkit sandbox base: {tool} bookworm"), image.history()
        # nothing to build the second time; a no-op run
        second = evalkit(root, "run")
        assert "building" not in second.stdout and not executed(second)
        assert image_id(name) == built
    finally:
        if name != DEFAULT_BASE_IMAGE and image_id(name) is not None:
            client().images.remove(name, force=True)
