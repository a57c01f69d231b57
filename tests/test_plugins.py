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


@pytest.mark.parametrize("source", [
    "raise RuntimeError('no config file for my kind')\n",
    # the example: a metric declared without display= (a pydantic ValidationError at import)
    "from evalkit.metrics.registry import metric\nmetric(name='my_score', aggregate='mean')\nX = 1\n",
])
def test_any_failure_while_an_outside_part_loads_is_bad_input_naming_it(tmp_path: Path, source: str) -> None:
    plugin_dist(tmp_path, "fragile-extra", {"evalkit.executors": {"fragile": "fragile_mod:X"}},
                {"fragile_mod.py": source})
    proc = _in_subprocess(tmp_path, """
        from evalkit.plugins import registry
        from evalkit.errors import InputError
        try:
            registry("executors").get("fragile")
        except InputError as exc:
            print("INPUT", exc)
    """)
    assert "INPUT" in proc.stdout and "entry point evalkit.executors 'fragile'" in proc.stdout, proc.stderr
    assert "fragile_mod:X (from fragile-extra) does not load" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_a_failing_outside_kind_makes_check_exit_2_not_a_traceback(tmp_path: Path) -> None:
    plugin_dist(tmp_path / "dist", "bad-kind", {"evalkit.kinds": {"badkind": "bad_kind_mod:KIND"}},
                {"bad_kind_mod.py": "from evalkit.metrics.registry import metric\n"
                                    "metric(name='bad_kind_score', aggregate='mean', kinds=('badkind',))\n"})
    project = tmp_path / "p"
    (project / "cases" / "s").mkdir(parents=True)
    (project / "evalkit.yaml").write_text("release: r1\nbaseline: gold\nsystems:\n  - name: gold\n    adapter: gold\n")
    (project / "cases" / "s" / "suite.yaml").write_text("kind: badkind\n")
    (project / "cases" / "s" / "c1").mkdir()
    (project / "cases" / "s" / "c1" / "case.yaml").write_text("id: c1\ndescription: one case\n")
    env = {"PYTHONPATH": f"{tmp_path / 'dist'}:{REPO}", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "evalkit", "check"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "bad_kind_mod:KIND (from bad-kind) does not load" in proc.stderr and "Traceback" not in proc.stderr
