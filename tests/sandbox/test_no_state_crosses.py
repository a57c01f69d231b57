"""No state crosses systems or cases (issue 32, item 2): every test run gets a fresh container from the image.

System A's patch plants state everywhere its tests' user can write outside the tree (/tmp, /var/tmp, /dev/shm,
HOME, an environment file) and leaves a process running detached; system B's run on the same case, right after
and at the same time, must see none of it. Real Docker.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from evalkit.sandbox import run_tests

pytestmark = pytest.mark.docker

PLANT = '''import os, subprocess


def plant():
    for d in ("/tmp", "/var/tmp", "/dev/shm", os.environ.get("HOME", "/tmp")):
        try:
            with open(os.path.join(d, "evalkit-leak"), "w") as fh:
                fh.write("from system A")
        except OSError:
            pass
    subprocess.Popen(["python3", "-c", "import time; time.sleep(600)", "evalkit-leak-sleeper"], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return True
'''

CHECK = '''import os
from calc import add, mul


def leaks():
    found = [d for d in ("/tmp", "/var/tmp", "/dev/shm", os.environ.get("HOME", "/tmp"))
             if os.path.exists(os.path.join(d, "evalkit-leak"))]
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if b"evalkit-leak-sleeper" in fh.read():
                        found.append(f"process {pid}")
            except OSError:
                pass
    return found


def test_add():
    try:
        import calc.plant as plant
    except ImportError:
        plant = None
    if plant is not None:
        assert plant.plant()
        assert len(leaks()) >= 2, leaks()  # the planting shows here: a file (at least /tmp) and the process
    else:
        assert leaks() == []
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6
'''


@pytest.fixture
def leak_tree(tmp_path, calc_source):
    root = tmp_path / "leak"
    for rel, text in {"calc/__init__.py": calc_source, "tests/test_calc.py": CHECK}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_what_system_a_leaves_behind_system_b_never_sees(docker_engine, spec_for, leak_tree, fix_patch,
                                                          make_diff) -> None:
    planting = fix_patch + make_diff("calc/plant.py", None, PLANT)
    a = spec_for(tree=str(leak_tree), patch=planting)
    b = spec_for(tree=str(leak_tree), patch=fix_patch)
    first = run_tests(a, "docker")
    assert first.resolved is True, first.reason + first.log[-2000:]  # A planted (its test passed after planting)
    after = run_tests(b, "docker")
    assert after.resolved is True, after.log[-3000:]  # B's test_add asserts leaks() == []
    with ThreadPoolExecutor(max_workers=4) as pool:  # side by side: neither sees the other's
        runs = list(pool.map(lambda s: run_tests(s, "docker"), [a, b, a, b]))
    assert all(r.resolved for r in runs), [r.log[-1500:] for r in runs if not r.resolved]
