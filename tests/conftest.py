"""Fixtures shared by every test folder."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
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

    for _ in range(3):  # a loaded machine's daemon can miss one ping: a skip here skips all of a worker's
        if docker_available(again=True):  # Docker tests (86 in one whole run under load), so ask again before giving up
            break
        time.sleep(5)
    else:
        unavailable("no Docker engine answers (start dockerd, or set DOCKER_HOST)")
    try:
        return ensure_image(IMAGE)
    except ImageUnavailable:
        build = subprocess.run([str(REPO / "scripts" / "build-base-image.sh"), IMAGE], capture_output=True, text=True)
        if build.returncode != 0:
            unavailable(f"image {IMAGE} missing and scripts/build-base-image.sh failed: {build.stderr[-500:]}")
        return ensure_image(IMAGE)


@pytest.fixture(scope="session")
def demo_run(docker_engine: str, request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The whole demo project (the repository's evalkit.yaml and cases/, Docker sandbox) run once per test
    session with `evalkit run -q --strict`, and that run's process. Read it, never change it: the tests
    sharing it (test_report_identical's numbers and pages, test_canaries') would see the change. One full
    demo run costs 2 to 3 minutes on 2 cores; each test that ran its own paid that again.

    Under pytest-xdist every worker is its own session: the first worker that wants the run makes it while it
    holds a lock in the folder all workers' temporary folders share, and leaves the project's path and the
    process in a JSON file there; a worker that wants it later (or waits on the lock meanwhile) reads that."""
    workerinput = getattr(request.config, "workerinput", None)
    if workerinput is None:  # a serial session: the only one to want it
        return _run_demo(tmp_path_factory)
    shared = tmp_path_factory.getbasetemp().parent  # pytest-N/, one per `pytest -n` run; popen-gwK/ inside
    done = shared / f"demo-run-{workerinput['testrunuid']}.json"
    with open(shared / "demo-run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, a crashed worker's with its process
        if done.exists():
            made = json.loads(done.read_text(encoding="utf-8"))
            proc = subprocess.CompletedProcess(made["args"], made["returncode"], made["stdout"], made["stderr"])
            assert proc.returncode == 0, f"(run by {made['worker']}) " + proc.stdout[-3000:] + proc.stderr[-3000:]
            return Path(made["project"]), proc
        project, proc = _run_demo(tmp_path_factory, check=False)
        made = {"project": str(project), "args": proc.args, "returncode": proc.returncode, "stdout": proc.stdout,
                "stderr": proc.stderr, "worker": workerinput["workerid"]}
        done.write_text(json.dumps(made), encoding="utf-8")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return project, proc


def _run_demo(tmp_path_factory: pytest.TempPathFactory,
              check: bool = True) -> tuple[Path, subprocess.CompletedProcess[str]]:
    project = tmp_path_factory.mktemp("demo-run") / "demo"
    project.mkdir()
    shutil.copy(REPO / "evalkit.yaml", project / "evalkit.yaml")
    shutil.copytree(REPO / "cases", project / "cases")
    proc = evalkit(project, "run", "-q", "--strict", timeout=1500, check=False)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return project, proc


@pytest.fixture(scope="session", autouse=True)
def _shared_template_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The `evalkit` processes the tests start share one folder of compiled templates (EVALKIT_TEMPLATE_CACHE,
    evalkit.config.Config.template_cache): each new project compiled the site's templates again (0.3 s of CPU per
    first render), a few hundred times in a whole run. A test that gives a process its own environment, or sets
    the variable itself, is left as it is."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if hasattr(request.config, "workerinput") else base  # pytest-N/, all workers' parent
    os.environ.setdefault("EVALKIT_TEMPLATE_CACHE", str(shared / "template-cache"))


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


@pytest.fixture(autouse=True)
def _heap_not_left_frozen():
    """A run freezes the heap (gc.freeze: evalkit.doitplus, evalkit.tasks, the case pages' render): a test that
    runs one in this process gives it back (`gc.unfreeze`) before it ends. One that did not (a doit run with
    evalkit's reporter) failed a later test of the same worker that counts what a render leaves frozen; it now
    fails itself."""
    import gc

    yield
    left = gc.get_freeze_count()
    if left:
        gc.unfreeze()
        pytest.fail(f"the test left {left} objects frozen (gc.freeze) in this process: unfreeze them when it ends")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.realdata(*parts)``: the test reads ../shared/realdata/<parts> (`helpers.realdata`:
    fails in CI when absent, skips elsewhere)."""
    for mark in item.iter_markers("realdata"):
        realdata(*mark.args)


@pytest.fixture
def realdata_dir() -> Path:
    """../shared/realdata (`helpers.realdata`: fails in CI when absent, skips elsewhere)."""
    return realdata()


# The files that set the wall time of a parallel run, in the order workers should start them: the slowest
# tests of one whole `-n 4` run (issue #30: a Dask cluster 574 s, the demo run, judge_changes 329 s, case
# pages' set-up 269 s, a SWE-bench gold run 221 s) and of tests/sandbox + report + llm serially (the base
# image built from Debian packages 167 s, auto isolation 53 s); then the files whose tests added up to the
# most wall time in a whole run under load (docs/operations/testing.md, "Per-file CPU": test_site_fresh 512 s,
# test_estimate_calls 435 s, judge_audit 432 s, judge_faults 427 s, ...), which had started last and left one
# worker running alone. A file here reaches the front of the queue; `test_report_identical.py` waits behind the
# others so that the demo run `test_canaries.py` makes (conftest.demo_run) is likely done when it wants it.
# Stop 29's whole run (testing.md) added the three before test_report_identical: they started after 1,000 s
# (test_progress_eta 205 s of wall, 46 s of CPU in-process), one of them the last file of the run.
# Re-measure with `--durations=60` (or the per-file table) when a file grows.
HEAVY_FIRST = (
    "test_canaries.py",  # demo_run, which test_cluster's demo test and test_report_identical read after it
    "sandbox/test_image_build.py",
    "graders/test_judge_changes.py",
    "report/test_case_pages.py",
    "test_cluster.py",
    "test_site_fresh.py",
    "test_estimate_calls.py",
    "graders/test_judge_audit.py",
    "faults/test_judge_faults.py",
    "importers/test_swebench_import.py",
    "test_paths.py",
    "test_benchmarks.py",
    "sandbox/test_redteam.py",
    "test_paid_answers.py",
    "test_judge_pipeline.py",
    "test_executors.py",
    "swebench/test_harness_agreement.py",
    "scenarios/test_kai_canaries.py",
    "sandbox/test_isolation.py",
    "test_progress_eta.py",
    "faults/test_daemon_stop.py",
    "test_patch_demo.py",
    "test_report_identical.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (a worker's collection, which the scheduler hands out in this order with
    `--dist loadfile --no-loadscope-reorder`): the files of HEAVY_FIRST first, in that order, then the others
    with the most tests first (xdist's own order). A serial run keeps pytest's order."""
    if not hasattr(config, "workerinput"):
        return
    tests_dir = Path(__file__).resolve().parent
    counts: dict[Path, int] = {}
    for item in items:
        counts[item.path] = counts.get(item.path, 0) + 1

    def rank(item: pytest.Item) -> tuple[int, int]:
        name = item.path.relative_to(tests_dir).as_posix() if item.path.is_relative_to(tests_dir) else ""
        first = HEAVY_FIRST.index(name) if name in HEAVY_FIRST else len(HEAVY_FIRST)
        return first, -counts[item.path]

    items.sort(key=rank)  # stable: a file's tests stay together and in their order


@pytest.fixture
def added_metrics():
    """Forget metrics a test registers with evalkit.api.register_metric (the registry is this process's)."""
    from evalkit.metrics.registry import ADDED, ADDED_SCORERS, METRICS

    yield
    for name in list(ADDED):
        METRICS.pop(name, None)
        ADDED.pop(name)
    ADDED_SCORERS.clear()
