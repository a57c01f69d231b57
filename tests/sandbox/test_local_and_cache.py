"""The local backend (subprocess, rlimits, process-group timeout) and the content-addressed cache."""

from __future__ import annotations

import pytest
from helpers import record_group_kills
from sandbox.conftest import LOCAL_TEST_COMMAND

from evalkit.sandbox import run_tests, run_tests_cached
from evalkit.sandbox.local_backend import network_namespace_available
from evalkit.store import ContentStore

F2P = "tests/test_calc.py::test_add"
# The runs below but the first use the test command without the host's installed pytest plug-ins (3 to 4 s of CPU
# less per run, sandbox/conftest.py): test_local_fix_is_resolved runs the command as a user's suite would.
QUICK = {"test_command": LOCAL_TEST_COMMAND}


def test_local_fix_is_resolved(spec_for, demo_tree):
    before = (demo_tree / "calc" / "__init__.py").read_text()
    r = run_tests(spec_for(), "local")
    assert r.status == "completed", r.reason
    assert r.isolation == "local" and r.image_digest is None
    assert r.resolved is True and r.patch_method == "git apply"
    assert "local backend" in r.reason
    if not network_namespace_available():
        assert "no network namespace" in r.reason
    assert (demo_tree / "calc" / "__init__.py").read_text() == before  # the tree is never modified


def test_local_timeout_kills_the_process_group(spec_for, make_diff, fix_patch, tmp_path):
    marker = tmp_path / "survivor"
    hang = make_diff("tests/test_hang.py", None,
                     "import subprocess, time\n\n\ndef test_hang():\n"
                     f"    subprocess.Popen(['sh', '-c', 'sleep 4; touch {marker}'])\n"
                     "    time.sleep(600)\n")
    r = run_tests(spec_for(patch=fix_patch, test_patch=hang, limits={"timeout_s": 3}, **QUICK), "local")
    assert r.status == "timeout"
    assert r.duration_s < 15
    import time

    time.sleep(2)
    assert not marker.exists(), "a child of the test outlived the timeout"


def test_local_refuses_unsafe_patch(spec_for):
    r = run_tests(spec_for(patch="--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n"), "local")
    assert r.status == "patch_failed" and "outside the tree" in r.reason


def test_local_network_is_cut_when_namespaces_allow(spec_for, make_diff, fix_patch):
    if not network_namespace_available():
        pytest.skip("unshare -rn is not permitted here")
    net = make_diff("tests/test_net.py", None,
                    "import socket\n\n\ndef test_net():\n"
                    "    s = socket.socket()\n    s.settimeout(2)\n    s.connect(('1.1.1.1', 53))\n")
    r = run_tests(spec_for(patch=fix_patch, test_patch=net, pass_to_pass=["tests/test_net.py::test_net"], **QUICK),
                  "local")
    assert r.pass_to_pass == {"tests/test_net.py::test_net": "failed"}


def test_cache_answers_the_same_inputs_without_running(spec_for, tmp_path, monkeypatch):
    store = ContentStore(tmp_path / "store", "sandbox")
    first = run_tests_cached(spec_for(**QUICK), store, "local")
    assert first.status == "completed"
    from evalkit.sandbox import cache

    def boom(*_a, **_k):
        raise AssertionError("ran again")

    monkeypatch.setattr(cache, "run_tests", boom)
    again = run_tests_cached(spec_for(**QUICK), store, "local")
    assert again == first


def test_the_same_run_wanted_at_once_runs_once(spec_for, tmp_path, monkeypatch):
    """Two tasks wanting the same run at the same moment (two systems with equal patches, one task per core):
    the second waits for the first and is answered from the cache, so both record the same result."""
    import threading
    import time

    from evalkit.sandbox import cache

    real, ran = cache.run_tests, []

    def slow(*a, **k):
        ran.append(threading.get_ident())
        time.sleep(0.3)  # both threads are inside run_tests_cached before the first result is stored
        return real(*a, **k)

    monkeypatch.setattr(cache, "run_tests", slow)
    store = ContentStore(tmp_path / "store", "sandbox")
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(run_tests_cached(spec_for(**QUICK), store, "local")))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ran) == 1 and len(results) == 3
    assert results[0] == results[1] == results[2]


def test_cache_key_follows_tree_contents_not_its_path(spec_for, demo_tree, tmp_path):
    from evalkit.sandbox.cache import cache_inputs

    spec = spec_for()
    key = cache_inputs(spec, "docker", "sha256:x")
    moved = spec.model_copy(update={"tree": str(tmp_path / "elsewhere")})
    import shutil

    shutil.copytree(demo_tree, tmp_path / "elsewhere")
    assert cache_inputs(moved, "docker", "sha256:x") == key
    (tmp_path / "elsewhere" / "calc" / "__init__.py").write_text("changed\n")
    assert cache_inputs(moved, "docker", "sha256:x") != key
    assert cache_inputs(spec, "docker", "sha256:y") != key
    trusted = spec.model_copy(update={"patch_trusted": True})
    # Docker runs a trusted patch as any other: the reference's run and a system's of the same patch are one
    assert cache_inputs(trusted, "docker", "sha256:x") == key
    assert cache_inputs(trusted, "local", None) != cache_inputs(spec, "local", None)  # local: trust decides the user


def test_infra_errors_are_not_stored(docker_engine, spec_for, tmp_path):
    store = ContentStore(tmp_path / "store", "sandbox")
    r = run_tests_cached(spec_for(image="evalkit/no-such-image:never"), store, "docker")
    assert r.status == "infra_error"
    assert not any((tmp_path / "store").rglob("*.json"))


def test_the_runners_group_is_killed_before_it_is_reaped(spec_for, monkeypatch):
    """As for a command system (tests/systems/test_clean_env.py): no group kill by a number already free."""
    kills = record_group_kills(monkeypatch)
    r = run_tests(spec_for(**QUICK), "local")
    assert r.status == "completed", r.reason
    assert kills and all(state is not None and state[1] == pgid for pgid, state in kills), kills
