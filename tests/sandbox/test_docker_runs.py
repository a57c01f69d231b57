"""run_tests against the real Docker engine on a tiny buggy project (reuses one image)."""

from __future__ import annotations

import threading

import docker.errors
import pytest

from evalkit.sandbox import run_tests

pytestmark = pytest.mark.docker

F2P = "tests/test_calc.py::test_add"
P2P = "tests/test_calc.py::test_mul"


def test_correct_fix_is_resolved(docker_engine, spec_for, leftovers):
    r = run_tests(spec_for(), "docker")
    assert r.status == "completed", r.reason
    assert r.isolation == "docker"
    assert r.resolved is True
    assert r.patch_applied and r.patch_method == "git apply"
    assert r.fail_to_pass == {F2P: "passed"} and r.pass_to_pass == {P2P: "passed"}
    assert r.exit_code == 0
    assert r.image_digest == docker_engine
    assert "2 passed" in r.log
    assert leftovers() == []


def test_no_patch_runs_the_unmodified_tree(docker_engine, spec_for):
    r = run_tests(spec_for(patch=None), "docker")
    assert r.status == "completed" and r.resolved is False
    assert r.patch_applied is False and r.patch_method is None
    assert r.fail_to_pass == {F2P: "failed"} and r.exit_code == 1


def test_patch_that_does_not_apply_is_the_systems_failure(docker_engine, spec_for, make_diff):
    bad = make_diff("calc/__init__.py", "def add(a, b):\n    return a * 7\n", "def add(a, b):\n    return a + b\n")
    r = run_tests(spec_for(patch=bad), "docker")
    assert r.status == "patch_failed", r.reason
    assert r.resolved is None and r.patch_applied is False
    assert "does not apply" in r.reason


def test_fuzzy_patch_falls_back_to_patch_fuzz(docker_engine, spec_for, calc_source, make_diff):
    # One context line differs from the tree: git apply refuses, patch --fuzz applies.
    drifted = calc_source.replace("def mul(a, b):", "def mul(a, b):  # drifted")
    fuzzy = make_diff("calc/__init__.py", drifted, drifted.replace("a - b", "a + b"))
    r = run_tests(spec_for(patch=fuzzy), "docker")
    assert r.status == "completed", r.reason
    assert r.patch_method == "patch --fuzz=3"
    assert r.resolved is True


def test_fix_that_breaks_pass_to_pass_is_not_resolved(docker_engine, spec_for, calc_source, make_diff):
    broken = calc_source.replace("a - b", "a + b").replace("a * b", "a ** b")
    r = run_tests(spec_for(patch=make_diff("calc/__init__.py", calc_source, broken)), "docker")
    assert r.status == "completed"
    assert r.resolved is False
    assert r.fail_to_pass == {F2P: "passed"} and r.pass_to_pass == {P2P: "failed"}


def test_hanging_test_times_out_and_leaves_no_container(docker_engine, spec_for, make_diff, fix_patch, leftovers):
    hang = make_diff("tests/test_hang.py", None, "import time\n\n\ndef test_hang():\n    time.sleep(600)\n")
    r = run_tests(spec_for(patch=fix_patch, test_patch=hang, limits={"timeout_s": 5}), "docker")
    assert r.status == "timeout", r.reason
    assert r.resolved is None and r.exit_code is None
    assert 4.5 <= r.duration_s < 30
    assert leftovers() == []


def test_fake_passed_lines_do_not_resolve(docker_engine, spec_for, make_diff, calc_source):
    # The code under test (which a patch may change; conftest.py it may not) prints the lie at exit.
    lie = (
        "import atexit\n"
        "atexit.register(print, 'PASSED tests/test_calc.py::test_add')\n"
        "atexit.register(print, 'PASSED tests/test_calc.py::test_mul')\n"
    )
    r = run_tests(spec_for(patch=make_diff("calc/__init__.py", calc_source, lie + calc_source)), "docker")
    assert r.status == "completed"
    assert "PASSED tests/test_calc.py::test_add" in r.log  # the lie was printed...
    assert r.fail_to_pass == {F2P: "failed"}  # ...and not believed
    assert r.resolved is False


def test_faked_summary_with_forced_exit_zero_does_not_resolve(docker_engine, spec_for, make_diff, calc_source):
    # The code under test prints a fake summary and exits 0 when collection imports it, before any
    # test runs: only the JUnit report, which pytest never writes, tells the truth.
    lie = (
        "import os\n"
        "print('PASSED tests/test_calc.py::test_add')\n"
        "print('PASSED tests/test_calc.py::test_mul')\n"
        "os._exit(0)\n"
    )
    r = run_tests(
        spec_for(patch=make_diff("calc/__init__.py", calc_source, lie + calc_source),
                 test_command="python3 -m pytest -rA -p no:cacheprovider --junitxml=report.xml tests",
                 junit_paths=["report.xml"]),
        "docker",
    )
    assert r.status == "completed" and r.exit_code == 0
    assert r.resolved is False
    assert "no JUnit report" in r.reason


def test_planted_junit_report_is_not_collected(docker_engine, spec_for, make_diff):
    planted = ('<testsuites><testsuite name="pytest"><testcase classname="tests.test_calc" name="test_add"/>'
               '<testcase classname="tests.test_calc" name="test_mul"/></testsuite></testsuites>\n')
    r = run_tests(
        spec_for(patch=make_diff("report.xml", None, planted), test_command="true", junit_paths=["report.xml"]),
        "docker",
    )
    assert r.status == "completed" and r.resolved is False
    assert r.tests == {}


def test_junit_report_is_preferred_and_mapped_to_node_ids(docker_engine, spec_for):
    r = run_tests(
        spec_for(test_command="python3 -m pytest -p no:cacheprovider --junitxml=out/report.xml tests",
                 junit_paths=["out/*.xml"]),
        "docker",
    )
    assert r.status == "completed", r.reason
    assert r.tests == {F2P: "passed", P2P: "passed"}
    assert r.resolved is True


@pytest.fixture
def no_container(monkeypatch):
    """Fail the test if a container would be created."""
    from evalkit.sandbox import docker_backend

    def refuse(*_a, **_k):
        raise AssertionError("a container was created for a patch that should have been refused")

    monkeypatch.setattr(docker_backend.DockerSandbox, "__init__", refuse)


@pytest.mark.parametrize(
    "patch, words",
    [
        ("--- a/../evil.py\n+++ b/../evil.py\n@@ -0,0 +1 @@\n+x = 1\n", "outside the tree"),
        ("--- /dev/null\n+++ /etc/cron.d/evil\n@@ -0,0 +1 @@\n+x\n", "absolute path"),
        ("diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100755\n"
         "--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+rm -rf /\n", ".git"),
        ("\x00\x01\x02binary garbage\xff", "NUL"),
        ("just some words, no diff here\n", "no diff headers"),
    ],
)
def test_unsafe_patch_refused_without_a_container(docker_engine, spec_for, no_container, patch, words):
    r = run_tests(spec_for(patch=patch), "docker")
    assert r.status == "patch_failed"
    assert words in r.reason
    assert r.image_digest is None and r.log == ""


def test_fifty_megabytes_of_output_are_capped(docker_engine, spec_for, make_diff, fix_patch):
    noisy = make_diff("tests/test_noisy.py", None,
                      "import sys\n\n\ndef test_noisy():\n    line = 'x' * 999 + '\\n'\n"
                      "    for _ in range(50_000):\n        sys.stdout.write(line)\n    assert False\n")
    r = run_tests(spec_for(patch=fix_patch, test_patch=noisy, test_command="python3 -m pytest -rA -s -p no:cacheprovider tests",
                           limits={"log_limit_bytes": 200_000}), "docker")
    assert r.status == "completed", r.reason
    assert r.log_truncated is True
    assert len(r.log.encode()) <= 200_000
    assert r.log_bytes >= 50_000_000
    # the summary at the end survives the cap
    assert r.tests["tests/test_noisy.py::test_noisy"] == "failed"
    assert r.resolved is True


def test_missing_image_is_an_infrastructure_error(docker_engine, spec_for, leftovers):
    r = run_tests(spec_for(image="evalkit/no-such-image:never"), "docker")
    assert r.status == "infra_error"
    assert "evalkit/no-such-image:never" in r.reason
    assert r.resolved is None
    assert leftovers() == []


def test_nonexistent_fail_to_pass_ids_are_not_resolved(docker_engine, spec_for):
    r = run_tests(spec_for(fail_to_pass=["tests/test_calc.py::test_nope"]), "docker")
    assert r.status == "completed"
    assert r.fail_to_pass == {"tests/test_calc.py::test_nope": "failed"}
    assert r.resolved is False
    assert "absent" in r.reason


def test_empty_fail_to_pass_is_a_case_error(docker_engine, spec_for, no_container):
    r = run_tests(spec_for(fail_to_pass=[]), "docker")
    assert r.status == "case_error"
    assert r.reason == "no FAIL_TO_PASS tests: cannot decide resolution"
    assert r.resolved is None


def test_collection_error_is_recorded_not_a_crash(docker_engine, spec_for, make_diff, calc_source):
    # The patch breaks the import the test module needs.
    broken = make_diff("calc/__init__.py", calc_source, calc_source.replace("def add(a, b):", "def add(a, b)"))
    r = run_tests(spec_for(patch=broken), "docker")
    assert r.status == "completed", r.reason
    assert r.exit_code == 2
    assert r.tests.get("tests/test_calc.py") == "error"
    assert r.fail_to_pass == {F2P: "error"} and r.pass_to_pass == {P2P: "error"}
    assert r.resolved is False


def test_missing_test_command_is_a_case_error(docker_engine, spec_for):
    r = run_tests(spec_for(test_command="no-such-test-runner --all"), "docker")
    assert r.status == "case_error"
    assert r.exit_code == 127
    assert r.resolved is None


# The counter lives outside the tree: a rerun starts from the prepared tree, so a file the tests
# wrote in it is gone (the container's /tmp persists across phases, as a machine's state would).
FLAKY_TEST = """from pathlib import Path

COUNTER = Path("/tmp/evalkit-flaky-counter.txt")


def test_flaky():
    n = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(n + 1))
    assert n % 2 == 1
"""


@pytest.mark.parametrize("policy, resolved", [("fail", False), ("pass", True)])
def test_flaky_test_detected_by_reruns(docker_engine, spec_for, make_diff, fix_patch, policy, resolved):
    flaky = make_diff("tests/test_flaky.py", None, FLAKY_TEST)
    # The rerun command names only the ids: the default "{test_command} {ids}" would also rerun
    # the whole "tests" folder, running the flaky test twice per rerun.
    r = run_tests(spec_for(patch=fix_patch, test_patch=flaky, reruns=2, flaky_policy=policy,
                           rerun_command="python3 -m pytest -rA -p no:cacheprovider {ids}",
                           pass_to_pass=[P2P, "tests/test_flaky.py::test_flaky"]), "docker")
    assert r.status == "completed", r.reason
    assert r.flaky == ["tests/test_flaky.py::test_flaky"]
    assert r.tests["tests/test_flaky.py::test_flaky"] == "flaky"
    assert r.pass_to_pass["tests/test_flaky.py::test_flaky"] == "flaky"
    assert r.resolved is resolved
    assert "rerun1" in r.log


def test_consistent_failure_is_not_flaky(docker_engine, spec_for):
    r = run_tests(spec_for(patch=None, reruns=2), "docker")
    assert r.status == "completed"
    assert r.flaky == [] and r.fail_to_pass == {F2P: "failed"}
    assert "rerun2" in r.log


def test_memory_hog_is_oom(docker_engine, spec_for, make_diff, fix_patch):
    hog = make_diff("tests/test_hog.py", None,
                    "def test_hog():\n    blocks = []\n    for _ in range(64):\n"
                    "        blocks.append(bytearray(8 << 20))\n    assert blocks\n")
    r = run_tests(spec_for(patch=fix_patch, test_patch=hog, limits={"memory_mb": 64}), "docker")
    assert r.status == "oom", r.reason
    assert r.resolved is None


def test_test_patch_applies_over_base_files(docker_engine, spec_for, make_diff, fix_patch, tests_source):
    # The system also rewrote the test file (dropping test_mul); the case's test patch is applied
    # over the base version of that file, as the SWE-bench harness does.
    weakened = make_diff("tests/test_calc.py", tests_source, tests_source.split("def test_mul")[0])
    extended = tests_source + "\n\ndef test_add_negative():\n    assert add(-2, -3) == -5\n"
    r = run_tests(spec_for(patch=fix_patch + weakened,
                           test_patch=make_diff("tests/test_calc.py", tests_source, extended),
                           fail_to_pass=[F2P, "tests/test_calc.py::test_add_negative"]), "docker")
    assert r.status == "completed", r.reason
    assert r.tests == {F2P: "passed", P2P: "passed", "tests/test_calc.py::test_add_negative": "passed"}
    assert r.resolved is True


def test_two_threads_at_once(docker_engine, spec_for, leftovers):
    spec = spec_for()
    results = []
    threads = [threading.Thread(target=lambda: results.append(run_tests(spec, "docker"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.resolved for r in results] == [True] * 4, [r.reason for r in results]
    assert leftovers() == []


def test_sweep_removes_leftovers_of_dead_processes(docker_engine, leftovers):
    from evalkit.sandbox.docker_backend import DEADLINE_LABEL, LABEL, OWNER_LABEL, sweep_leftovers
    from evalkit.sandbox.dockerclient import client

    import socket
    import time

    dead = client().containers.create(
        docker_engine, ["true"], labels={LABEL: "1", OWNER_LABEL: f"{socket.gethostname()}:999999999",
                                         DEADLINE_LABEL: f"{time.time() + 3600:.0f}"})
    try:
        assert sweep_leftovers(force=True) >= 1
        # other test workers' containers come and go: one removed between the listing and docker-py's look at it
        # (a 404 from `containers.list`, seen in a whole run) is not one left over
        remaining = client().containers.list(all=True, filters={"label": f"{LABEL}=1"}, ignore_removed=True)
        assert dead.id not in {c.id for c in remaining}
    finally:
        try:
            dead.remove(force=True)
        except docker.errors.NotFound:
            assert True  # swept, as it should be
        except docker.errors.APIError as exc:  # 409: the sweep's removal of it is still under way
            assert exc.status_code == 409, exc


def test_the_results_folder_cannot_be_moved_or_listed_by_the_tests(docker_engine, spec_for):
    """One fetch of /work/out brings a phase's files and the pytest plugin's results: out/ is root's, so the tests'
    user can neither add a folder there nor rename res/ (swap it for one it can list), nor list res/ itself."""
    probe = ("python3 -c \"import os, sys\n"
             "for f in (lambda: os.mkdir('/work/out/x'), lambda: os.rename('/work/out/res', '/work/out/y'),\n"
             "          lambda: os.listdir('/work/out/res')):\n"
             "    try:\n        f()\n    except OSError:\n        continue\n"
             "    sys.exit('not protected')\n\"")
    r = run_tests(spec_for(test_command=f"{probe} && python3 -m pytest -rA -p no:cacheprovider tests"), "docker")
    assert r.status == "completed" and r.resolved is True, (r.reason, r.log[-2000:])  # the probe let the tests run
    assert "2 passed" in r.log


def test_sweep_meets_containers_that_come_and_go(docker_engine):
    """Other runs create and remove their containers while a process sweeps: one removed between the sweep's
    listing and its look at it is no failure (a sweep that inspected each listed container raised
    NotFound, and the sandbox that swept ended in an infra error). Containers of live owners stay."""
    from evalkit.sandbox.docker_backend import DEADLINE_LABEL, LABEL, OWNER_LABEL, _owner, sweep_leftovers
    from evalkit.sandbox.dockerclient import client

    import time

    labels = {LABEL: "1", OWNER_LABEL: _owner(), DEADLINE_LABEL: f"{time.time() + 3600:.0f}"}
    stop = threading.Event()
    made: list[str] = []
    errors: list[BaseException] = []

    def churn() -> None:
        api = client().api  # this thread's client
        try:
            while not stop.is_set():
                ident = api.create_container(docker_engine, ["true"], labels=labels)["Id"]
                made.append(ident)
                api.remove_container(ident, force=True)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=churn) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 120  # a bound for a stuck engine, not a speed: the loop ends on its counts
        sweeps = 0
        while time.monotonic() < deadline and not errors and (sweeps < 40 or len(made) < 60):
            sweep_leftovers(force=True)
            sweeps += 1
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    assert len(made) >= 20, f"the churn made {len(made)} containers: the sweep met too few to mean anything"
    kept = client().api.containers(all=True, filters={"label": f"{OWNER_LABEL}={_owner()}"})
    assert kept == [], kept
