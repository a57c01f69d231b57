"""The plug-in registries: parts come from entry points, ours from pyproject.toml, outside ones from metadata."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalkit import plugins
from tests.helpers import REPO, plugin_dist


def _in_subprocess(path: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": f"{path}:{REPO}", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=120)


def test_outside_distribution_adds_a_part(tmp_path: Path) -> None:
    plugin_dist(tmp_path, "evalkit-extra", {"evalkit.executors": {"nowhere": "extra_mod:NOWHERE"}},
                {"extra_mod.py": "NOWHERE = {'said': 'hello'}\n"})
    proc = _in_subprocess(tmp_path, """
        from evalkit.plugins import registry
        r = registry("executors")
        print("nowhere" in r.names(), r.get("nowhere")["said"], r.source("nowhere"))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "hello", "evalkit-extra"]


def test_two_distributions_claiming_one_name_are_refused(tmp_path: Path) -> None:
    plugin_dist(tmp_path / "a", "extra-a", {"evalkit.executors": {"same": "mod_a:X"}}, {"mod_a.py": "X = 1\n"})
    plugin_dist(tmp_path / "b", "extra-b", {"evalkit.executors": {"same": "mod_b:X"}}, {"mod_b.py": "X = 2\n"})
    env_path = f"{tmp_path / 'a'}:{tmp_path / 'b'}"
    proc = _in_subprocess(Path(env_path), """
        from evalkit.plugins import registry
        from evalkit.errors import InputError
        try:
            registry("executors").names()
        except InputError as exc:
            print(exc)
    """)
    assert "'same' is registered by both extra-a (mod_a:X) and extra-b (mod_b:X)" in proc.stdout, proc.stderr


def test_an_entry_point_that_does_not_import_is_named(tmp_path: Path) -> None:
    plugin_dist(tmp_path, "broken-extra", {"evalkit.executors": {"broken": "no_such_module:X"}}, {})
    proc = _in_subprocess(tmp_path, """
        from evalkit.plugins import registry
        from evalkit.errors import InputError
        try:
            registry("executors").get("broken")
        except InputError as exc:
            print(exc)
    """)
    assert "no_such_module:X (from broken-extra) does not load" in proc.stdout, proc.stderr


def test_unknown_names_and_points_say_what_is_known() -> None:
    with pytest.raises(KeyError, match="unknown plug-in point 'nope'"):
        plugins.registry("nope")
    with pytest.raises(KeyError, match="unknown executor 'nope'"):
        plugins.registry("executors").get("nope")


def test_register_in_process_refuses_a_taken_name() -> None:
    reg = plugins.Registry("executors")
    reg.register("mine", object())
    with pytest.raises(ValueError, match="already registered"):
        reg.register("mine", object())
    reg.register("mine", "other", replace=True)
    assert reg.get("mine") == "other"


def test_own_parts_come_from_pyproject_in_a_source_checkout() -> None:
    own = plugins._own_from_source()
    assert own is not None and "doit.BACKEND" in own  # the table evalkit already declares
