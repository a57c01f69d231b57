"""No secret in reach of code under test (issue 26, point 4).

A system's patch whose code reads every /proc/*/environ and prints its own environment when it is
imported: after `evalkit run` with keys of two providers set, neither key appears anywhere under
the work folder or the site. Below, the pieces: the keys leave evalkit's environment (and the C
environment block), the process is not dumpable, every write is redacted.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import evalkit, patch_project, without_plugin_autoload
from sandbox.conftest import LOCAL_TEST_COMMAND

from evalkit import fsutil
from evalkit.llm import keys
from evalkit.sandbox import run_tests

# Appended to invlib/money.py: the failing FAIL_TO_PASS test calls it, so what it prints is in the log.
LEAK = '''

_parse_amount = parse_amount


def parse_amount(text):
    import glob
    import os
    for path in glob.glob("/proc/*/environ"):
        try:
            print("ENVIRON", path, open(path, "rb").read().replace(bytes(1), b" ").decode("latin-1"))
        except OSError as exc:
            print("ENVIRON", path, exc)
    print("MYENV", dict(os.environ))
    return _parse_amount(text)
'''

LEAKER = '''import difflib
import sys

sys.path.insert(0, {repo!r})
from evalkit.demo_systems.protocol import answer, read_case

case, work = read_case()
tree = work / case["files"]["inputs.source_dir"]
path = "invlib/money.py"
before = (tree / path).read_text(encoding="utf-8")
leak = {leak!r}
patch = "".join(difflib.unified_diff(before.splitlines(True), (before + leak).splitlines(True), "a/" + path, "b/" + path))
answer({{"patch": patch, "steps": 1, "usage": {{"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}}}})
'''


@pytest.fixture
def sealed_state():
    """seal() makes this process non-dumpable: put that back afterwards (tests/conftest.py puts the keys back)."""
    yield
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(keys.PR_SET_DUMPABLE, 1, 0, 0, 0)


def test_seal_takes_keys_out_of_the_environment_and_redacts_writes(monkeypatch, tmp_path, sealed_state):
    key = "sk-test-" + secrets.token_hex(12)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setenv("SOMEPROVIDER_API_KEYS", "k1-" + secrets.token_hex(8) + ",k2-" + secrets.token_hex(8))
    keys.seal()
    assert "ANTHROPIC_API_KEY" not in os.environ and "SOMEPROVIDER_API_KEYS" not in os.environ
    assert keys.env_keys("anthropic") == [key]  # evalkit still has it
    assert len(keys.env_keys("someprovider")) == 2
    # a child process sees no key, in its environment or in ours
    child = subprocess.run(["sh", "-c", f"env; cat /proc/{os.getpid()}/environ"], capture_output=True)
    assert key.encode() not in child.stdout
    fsutil.confine_writes(tmp_path)
    fsutil.atomic_write_text(tmp_path / "a.json", f'{{"log": "ANTHROPIC_API_KEY={key}"}}')
    assert key not in (tmp_path / "a.json").read_text() and "[redacted]" in (tmp_path / "a.json").read_text()


def test_the_process_is_not_dumpable_after_seal(sealed_state):
    keys.seal()
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    assert libc.prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_system_reading_every_environ_leaks_no_key_into_work_or_site(request, tmp_path, backend):
    if backend == "docker":
        request.getfixturevalue("docker_engine")
    repo = str(Path(__file__).resolve().parents[2])
    root = patch_project(tmp_path / "proj", backend=backend, cases=["parse-thousands"], systems=())
    suite = root / "cases" / "patch" / "suite.yaml"
    suite.write_text(suite.read_text().replace("judge: true", "judge: false"))
    if backend == "local":  # the host's installed pytest plug-ins see no key either way (the sandbox's environment is
        without_plugin_autoload(suite)  # its own); without them each pytest run costs 3 s of CPU less
    (root / "leaker.py").write_text(LEAKER.format(repo=repo, leak=LEAK))
    config = root / "evalkit.yaml"
    config.write_text(config.read_text().replace(
        "systems:\n", f"systems:\n  - {{name: leaker, adapter: command, command: [{sys.executable!r}, {str(root / 'leaker.py')!r}]}}\n"))
    anthropic, openai = "sk-ant-" + secrets.token_hex(16), "sk-oai-" + secrets.token_hex(16)
    evalkit(root, "run", env={"ANTHROPIC_API_KEY": anthropic, "OPENAI_API_KEYS": f"{openai},sk-two-{secrets.token_hex(8)}"},
            timeout=400, check=False)
    execution = root / ".evalkit" / "artifacts" / "leaker" / "patch" / "parse-thousands" / "execution.json"
    text = execution.read_text()
    assert "ENVIRON" in text and "MYENV" in text  # the code under test did run and print
    leaked = []
    for folder in (root / ".evalkit", root / "site"):
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                if anthropic.encode() in data or openai.encode() in data:
                    leaked.append(str(path))
    assert leaked == []
    assert (root / "site").is_dir()


def test_a_key_the_tests_print_is_redacted_in_what_evalkit_writes(tmp_path, spec_for, calc_source, make_diff,
                                                                  sealed_state):
    # the worst case: the code under test knows a key (here it is in the patch itself) and prints it
    key = "sk-leaked-" + secrets.token_hex(12)
    fsutil.register_secrets([key])
    printing = calc_source.replace("    return a - b\n", f"    print({key!r})\n    return a - b\n")
    r = run_tests(spec_for(patch=make_diff("calc/__init__.py", calc_source, printing), test_command=LOCAL_TEST_COMMAND),
                  "local")
    assert key in r.log  # it got out of the sandbox...
    fsutil.confine_writes(tmp_path)
    fsutil.atomic_write_json(tmp_path / "execution.json", r)
    written = (tmp_path / "execution.json").read_text()
    assert key not in written and "[redacted]" in written  # ...and into no file
