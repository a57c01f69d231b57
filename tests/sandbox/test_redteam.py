"""Red team (issue 26): a system's patch can neither rig its own verdict nor read a secret.

Every attack is a patch that does NOT fix the demo's bug (``add`` subtracts; ``test_add`` fails)
and tries to make the run ``resolved`` anyway. Each runs on both backends twice: with evalkit's
guards switched off (``evalkit.sandbox.guards.disabled``, for tests only), where it must flip the
verdict, which shows the payload works, and with them on, where it must not.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import _bootstrap_external  # type: ignore[attr-defined]
from pathlib import Path

import pytest
from helpers import REPO, evalkit, patch_project
from sandbox.conftest import CALC, LOCAL_TEST_COMMAND, TESTS, unified_diff

from evalkit.sandbox import guards, local_user, run_tests
from evalkit.sandbox.worktree import ChangeRejected, apply_changes


X_THEN_X_Y = ("diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a\n"
              "diff --git a/x/y b/x/y\nnew file mode 100644\n--- /dev/null\n+++ b/x/y\n@@ -0,0 +1 @@\n+b\n")


# ---- 3. a patch that cannot be applied is the system's failure, whatever raises --------------------

def test_a_patch_whose_dry_run_passes_but_apply_fails_is_rejected_not_a_crash(tmp_path: Path):
    tree = tmp_path / "t"
    tree.mkdir()
    check = subprocess.run(["git", "apply", "--check", "-"], cwd=tree, input=X_THEN_X_Y.encode(), capture_output=True)
    assert check.returncode == 0  # the dry run passes: only the real apply fails
    with pytest.raises(ChangeRejected, match="does not apply"):
        apply_changes(tree, X_THEN_X_Y, {})


def test_files_that_cannot_be_written_are_rejected_not_a_crash(tmp_path: Path):
    tree = tmp_path / "t"
    tree.mkdir()
    with pytest.raises(ChangeRejected, match="could not be applied"):
        apply_changes(tree, None, {"x": "a", "x/y": "b"})


# ---- payloads -------------------------------------------------------------------------------------

# A plugin module that turns every failed report into a passed one.
LIAR = '''import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
        report.longrepr = None
'''

# The same lie by patching pytest's report class when the module is imported, with no name any
# host-side rule can see (no `_pytest`, no hook name).
PATCH_AT_IMPORT = '''import importlib as _il

_r = _il.import_module("_py" + "test.reports")
_o = _r.TestReport.from_item_and_call.__func__


def _lie(cls, item, call):
    report = _o(cls, item, call)
    if report.failed:
        report.outcome = "passed"
        report.longrepr = None
    return report


_r.TestReport.from_item_and_call = classmethod(_lie)
'''

# Code under test that patches the report class for one report only, then puts it back: nothing
# is left to see at the end of the run.
ONE_SHOT = '''

def _one_shot():
    import importlib
    r = importlib.import_module("_py" + "test.reports")
    original = r.TestReport.__dict__["from_item_and_call"]
    real = original.__func__

    def lie(cls, item, call):
        r.TestReport.from_item_and_call = original
        report = real(cls, item, call)
        report.outcome = "passed"
        report.longrepr = None
        return report

    r.TestReport.from_item_and_call = classmethod(lie)


_add = add


def add(a, b):
    _one_shot()
    return _add(a, b)
'''

# Code under test that finds pytest's plugin manager and registers a lying hook at run time.
REGISTER_AT_RUNTIME = '''
import gc as _gc
import pytest as _pt


class _Liar:
    @getattr(_pt, "hook" + "impl")(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.failed:
            report.outcome = "passed"
            report.longrepr = None


for _o in _gc.get_objects():
    if type(_o).__name__ == "PytestPluginManager":
        getattr(_o, "regis" + "ter")(_Liar(), "liar")
        break
'''

# Code under test that prints a passing summary past pytest's capture (to the pipe pytest saved) and
# leaves with status 0 while collection imports it.
EXIT_ZERO = '''import os as _os
import stat as _st

for _fd in range(3, 64):
    try:
        if _st.S_ISFIFO(_os.fstat(_fd).st_mode):
            _os.write(_fd, b"PASSED tests/test_calc.py::test_add\\nPASSED tests/test_calc.py::test_mul\\n")
    except OSError:
        pass
_os._exit(0)
'''

# A top-level pluggy.py: `python -m pytest` puts the tree first on sys.path, so pytest imports it
# before any plugin. It loads the real pluggy, then lies (forging evalkit's plugin results when it
# finds their secret, else patching pytest's report class).
SHADOW_PLUGGY = '''import importlib
import json
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
del sys.modules[__name__]
_saved = list(sys.path)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_real = importlib.import_module("pluggy")
sys.path[:] = _saved
sys.modules["pluggy"] = _real
for _d in os.environ.get("PYTHONPATH", "").split(":"):
    _secret = os.path.join(_d, "secret", "sentinel")
    if os.path.isfile(_secret):
        _lines = open(_secret).read().splitlines()
        os.unlink(_secret)
        with open(_lines[0] + "-1.json", "w") as _fh:
            json.dump({"state": "finished", "tampered": [], "tests": {
                "tests/test_calc.py::test_add": "passed", "tests/test_calc.py::test_mul": "passed"}}, _fh)


class _After:  # patches pytest's report class once pytest has imported it
    def find_spec(self, name, path=None, target=None):
        if name != "_py" + "test.reports":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            original = module.TestReport.from_item_and_call.__func__

            def lie(cls, item, call):
                report = original(cls, item, call)
                if report.failed:
                    report.outcome = "passed"
                    report.longrepr = None
                return report

            module.TestReport.from_item_and_call = classmethod(lie)

        spec.loader.exec_module = exec_module
        return spec


import importlib.util  # noqa: E402
sys.meta_path.insert(0, _After())
'''


def _new(path: str, text: str) -> str:
    return unified_diff(path, None, text)


def _pyc_patch(tmp: Path) -> str:
    """A git binary patch adding calc/__pycache__/__init__.cpython-311.pyc: the FIXED add, compiled with an
    unchecked hash, so Python imports it instead of the (still wrong) source, which the diff never shows."""
    repo = tmp / "pyc-repo"
    (repo / "calc" / "__pycache__").mkdir(parents=True)
    code = compile(CALC.replace("a - b", "a + b"), "calc/__init__.py", "exec")
    source_hash = importlib.util.source_hash(CALC.encode())
    data = _bootstrap_external._code_to_hash_pyc(code, source_hash, False)  # type: ignore[attr-defined]
    (repo / "calc" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(bytes(data))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    return subprocess.run([*git, "diff", "--cached", "--binary"], check=True, capture_output=True, text=True).stdout


def _symlink_patch() -> str:
    return ("diff --git a/tests/conftest.py b/tests/conftest.py\nnew file mode 0120000\n--- /dev/null\n"
            "+++ b/tests/conftest.py\n@@ -0,0 +1 @@\n+../liar.py\n\\ No newline at end of file\n") + _new("liar.py", LIAR)


@dataclass(frozen=True)
class Attack:
    patch: Callable[[Path], str]
    """The attacking patch (it never fixes add)."""
    held_as: tuple[str, ...]
    """Statuses the run may end with when the guards hold (never resolved)."""
    backends: tuple[str, ...] = ("docker", "local")
    """Where the payload works at all (pytest.toml is read by pytest >= 9, which only the local backend has here)."""


TOML_INLINE = '[tool]\npytest = { "ini\\u005foptions" = { addopts = "-p liar" } }\n'
TOML_ESCAPED_HEADER = '[tool.pytest."ini\\u005foptions"]\naddopts = "-p liar"\n'

ATTACKS: dict[str, Attack] = {
    # from issue 26
    "new-test-module-patches-pytest": Attack(lambda _t: _new("tests/test_zz_lie.py", PATCH_AT_IMPORT), ("completed",)),
    "test-package-init-patches-pytest": Attack(lambda _t: _new("tests/__init__.py", PATCH_AT_IMPORT), ("completed",)),
    "code-under-test-patches-pytest-at-import": Attack(
        lambda _t: unified_diff("calc/__init__.py", CALC, CALC + PATCH_AT_IMPORT), ("tampered_with_tests",)),
    "pyproject-inline-table-escaped-key": Attack(
        lambda _t: _new("pyproject.toml", TOML_INLINE) + _new("liar.py", LIAR), ("tampered_with_tests",)),
    "pyproject-escaped-quoted-header": Attack(
        lambda _t: _new("pyproject.toml", TOML_ESCAPED_HEADER) + _new("liar.py", LIAR), ("tampered_with_tests",)),
    "pytest-toml": Attack(lambda _t: _new("pytest.toml", '[pytest]\naddopts = ["-p", "liar"]\n') + _new("liar.py", LIAR),
                          ("tampered_with_tests",), ("local",)),
    "dot-pytest-toml": Attack(
        lambda _t: _new(".pytest.toml", '[pytest]\naddopts = ["-p", "liar"]\n') + _new("liar.py", LIAR),
        ("tampered_with_tests",), ("local",)),
    "annotated-pytest-plugins-in-new-test-module": Attack(
        lambda _t: _new("tests/test_zz_plugins.py", 'pytest_plugins: list = ["liar"]\n') + _new("liar.py", LIAR),
        ("completed", "tampered_with_tests")),
    "globals-pytest-plugins-in-new-test-module": Attack(
        lambda _t: _new("tests/test_zz_plugins.py", 'globals()["pytest_" + "plugins"] = ["liar"]\n')
        + _new("liar.py", LIAR), ("completed", "tampered_with_tests")),
    "binary-patch-unchecked-pyc": Attack(_pyc_patch, ("patch_failed",)),
    "f2p-test-file-edited": Attack(
        lambda _t: unified_diff("tests/test_calc.py", TESTS, TESTS.replace("== 5", "== -1")), ("completed",)),
    "symlink-mode-0120000": Attack(lambda _t: _symlink_patch(), ("patch_failed",)),
    # ours
    "one-shot-self-restoring-report-patch": Attack(
        lambda _t: unified_diff("calc/__init__.py", CALC, CALC + ONE_SHOT), ("tampered_with_tests",)),
    "hook-registered-at-run-time-by-code": Attack(
        lambda _t: unified_diff("calc/__init__.py", CALC, CALC + REGISTER_AT_RUNTIME), ("tampered_with_tests",)),
    "fake-summary-then-exit-zero": Attack(
        lambda _t: unified_diff("calc/__init__.py", CALC, EXIT_ZERO + CALC), ("completed",)),
    "top-level-module-shadowing-pluggy": Attack(lambda _t: _new("pluggy.py", SHADOW_PLUGGY), ("tampered_with_tests",)),
}
CASES = [(name, backend) for name in sorted(ATTACKS) for backend in ATTACKS[name].backends]


def without_host_plugins(backend: str) -> dict[str, str]:
    """On the local backend, the test command without the host's installed pytest plug-ins (sandbox/conftest.py's
    LOCAL_TEST_COMMAND: 3 to 4 s of CPU less per pytest run, two runs per attack). No payload here comes from
    an installed plug-in: each reaches pytest through the tree (a test module, conftest.py, `-p` in a config
    file, `pytest_plugins`, code under test, a module shadowing pluggy), and the unguarded run still shows it
    flips the verdict. The honest fix and the end-to-end hostile system keep the host's plug-ins."""
    return {"test_command": LOCAL_TEST_COMMAND} if backend == "local" else {}


@pytest.mark.parametrize("name, backend", CASES)
def test_attack_flips_the_verdict_without_the_guards_and_not_with_them(request, tmp_path, spec_for, name, backend):
    if backend == "docker":
        request.getfixturevalue("docker_engine")
    attack = ATTACKS[name]
    spec = spec_for(patch=attack.patch(tmp_path), **without_host_plugins(backend))
    with guards.disabled():
        unguarded = run_tests(spec, backend)
    assert unguarded.status == "completed" and unguarded.resolved is True, (name, unguarded.reason)
    guarded = run_tests(spec, backend)
    assert guarded.resolved is not True, (name, guarded.reason)
    assert guarded.status in attack.held_as, (name, guarded.status, guarded.reason)
    if guarded.status == "completed":
        assert guarded.resolved is False, guarded.reason


@pytest.mark.parametrize("backend", ["docker", "local"])
def test_the_honest_fix_still_resolves_with_every_guard(request, spec_for, fix_patch, backend):
    if backend == "docker":
        request.getfixturevalue("docker_engine")
    r = run_tests(spec_for(patch=fix_patch), backend)
    assert r.status == "completed" and r.resolved is True, r.reason
    assert r.test_changes == []


@pytest.mark.parametrize("backend", ["docker", "local"])
def test_a_patch_the_sandbox_cannot_apply_is_patch_failed(request, spec_for, backend):
    if backend == "docker":
        request.getfixturevalue("docker_engine")
    r = run_tests(spec_for(patch=X_THEN_X_Y, **without_host_plugins(backend)), backend)
    assert r.status == "patch_failed" and r.resolved is not True, r.reason


# ---- 4. the local backend runs a system's patch only as a user of its own --------------------------

def test_the_local_backend_refuses_a_systems_patch_when_it_cannot_drop_to_its_own_user(monkeypatch, spec_for,
                                                                                      fix_patch):
    stay = local_user.Identity(stay_reason="the tests ran as root: the test command's program is out of reach")
    monkeypatch.setattr(local_user, "choose", lambda *_a, **_k: stay)
    local = without_host_plugins("local")
    refused = run_tests(spec_for(patch=fix_patch, **local), "local")
    assert refused.status == "infra_error" and "only as a user of its own" in refused.reason, refused.reason
    assert "out of reach" in refused.reason and "Docker" in refused.reason
    # the case's own reference patch and a run without any patch are not a system's code
    trusted = run_tests(spec_for(patch=fix_patch, patch_trusted=True, **local), "local")
    assert trusted.status == "completed" and trusted.resolved is True, trusted.reason
    assert run_tests(spec_for(patch=None, **local), "local").status == "completed"
    with guards.disabled("local_uid"):  # what the guard stops: the system's code running as root
        assert run_tests(spec_for(patch=fix_patch, **local), "local").status == "completed"


# ---- end to end: a hostile system's rate is its honest one ------------------------------------------

HOSTILE_SYSTEM = '''import difflib
import sys

sys.path.insert(0, {repo!r})
from evalkit.demo_systems.protocol import answer, read_case

case, work = read_case()
tree = work / case["files"]["inputs.source_dir"]
path = "invlib/money.py"
before = (tree / path).read_text(encoding="utf-8")
after = before + {payload!r}
patch = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a/" + path, "b/" + path))
answer({{"patch": patch, "steps": 1, "usage": {{"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}}}})
'''


@pytest.mark.parametrize("backend", ["docker", "local"])
def test_evalkit_run_counts_a_hostile_system_as_not_resolved(request, tmp_path, backend):
    if backend == "docker":
        request.getfixturevalue("docker_engine")
    root = patch_project(tmp_path / "proj", backend=backend, cases=["parse-thousands"], systems=())
    suite = root / "cases" / "patch" / "suite.yaml"
    suite.write_text(suite.read_text().replace("judge: true", "judge: false"))
    (root / "hostile.py").write_text(HOSTILE_SYSTEM.format(repo=str(REPO), payload="\n" + PATCH_AT_IMPORT))
    config = root / "evalkit.yaml"
    config.write_text(config.read_text().replace("systems:\n", "systems:\n  - {name: hostile, adapter: command, "
                                                 f"command: [{sys.executable!r}, {str(root / 'hostile.py')!r}]}}\n"))
    evalkit(root, "run", timeout=400, check=False)
    work = root / ".evalkit" / "artifacts" / "hostile" / "patch" / "parse-thousands"
    run = json.loads((work / "execution.json").read_text())["runs"][0]
    assert run["status"] == "tampered_with_tests" and run["resolved"] is False, run["reason"]
    assert any("TestReport" in change for change in run["test_changes"])
    scores = json.loads((work / "scores.json").read_text())
    assert scores["excluded"] is None and scores["metrics"]["resolved"] == 0.0  # counted, as the system's failure
    report = json.loads((root / "site" / "r1" / "report.json").read_text())
    (hostile,) = report["systems"]
    assert hostile["metrics"]["resolved"]["value"] == 0.0 and hostile["metrics"]["resolved"]["n"] == 1
