"""Fixtures for the sandbox tests: a Docker engine (or a clear skip), a tiny buggy project, diffs."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

IMAGE = os.environ.get("EVALKIT_SANDBOX_IMAGE", "evalkit/python-pytest:bookworm")
REPO = Path(__file__).resolve().parents[2]
TEST_COMMAND = "python3 -m pytest -rA -p no:cacheprovider tests"
# The same without the host's installed pytest plug-ins (langsmith's, hypothesis'...): 3 to 4 s of CPU less per
# local run of this 2-test tree (0.4 s left). Plug-ins a patch can bring (conftest.py, `-p` in a config file,
# `pytest_plugins`, import-time patches) still load, and the Docker image's pytest has no installed plug-ins.
LOCAL_TEST_COMMAND = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 " + TEST_COMMAND
F2P = ["tests/test_calc.py::test_add"]
P2P = ["tests/test_calc.py::test_mul"]

CALC = '''def add(a, b):
    return a - b


def mul(a, b):
    return a * b
'''

TESTS = '''from calc import add, mul


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6
'''


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def demo_tree(tmp_path: Path) -> Path:
    """A project whose ``add`` is wrong (test_add fails) and ``mul`` right (test_mul passes)."""
    return write_tree(tmp_path / "demo", {"calc/__init__.py": CALC, "tests/test_calc.py": TESTS})


def unified_diff(path: str, old: str | None, new: str | None) -> str:
    """A git-style diff of one file (None = absent)."""
    a = [] if old is None else old.splitlines(keepends=True)
    b = [] if new is None else new.splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{path}",
                                      "/dev/null" if new is None else f"b/{path}"))
    return "".join(lines)


FIX = unified_diff("calc/__init__.py", CALC, CALC.replace("a - b", "a + b"))


@pytest.fixture
def spec_for(demo_tree):
    """Build a TestRunSpec on the demo tree; keyword arguments override the defaults."""
    from evalkit.sandbox import SandboxLimits, TestRunSpec

    def make(**kw) -> TestRunSpec:
        limits = kw.pop("limits", {})
        base = dict(image=IMAGE, tree=str(demo_tree), patch=FIX, test_command=TEST_COMMAND,
                    fail_to_pass=F2P, pass_to_pass=P2P, limits=SandboxLimits(**{"timeout_s": 60, **limits}))
        base.update(kw)
        return TestRunSpec(**base)

    return make


def sandbox_containers() -> list:
    """Sandbox-labelled containers of this process (other processes may be running their own)."""
    from evalkit.sandbox.docker_backend import LABEL, OWNER_LABEL, _owner
    from evalkit.sandbox.dockerclient import client
    from evalkit.sandbox.reaper import drain

    drain()  # containers are removed in the background once a run ends
    return client().containers.list(all=True, filters={"label": [f"{LABEL}=1", f"{OWNER_LABEL}={_owner()}"]},
                                    ignore_removed=True)  # one removed between listing and look: not left over


@pytest.fixture
def make_diff():
    """``make_diff(path, old, new)``: a git-style one-file diff (None = file absent)."""
    return unified_diff


@pytest.fixture
def calc_source() -> str:
    """The demo's buggy calc/__init__.py."""
    return CALC


@pytest.fixture
def leftovers(docker_engine):
    """``leftovers()``: containers carrying the sandbox label right now."""
    return sandbox_containers


@pytest.fixture
def fix_patch() -> str:
    """The correct fix of the demo's bug (a diff)."""
    return FIX


@pytest.fixture
def tests_source() -> str:
    """The demo's tests/test_calc.py."""
    return TESTS
