"""A system declared as a matrix expands into named systems with merged settings."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evalkit.config import load_config
from evalkit.errors import InputError


def write(tmp_path: Path, systems: str) -> Path:
    p = tmp_path / "evalkit.yaml"
    p.write_text("release: r1\nsystems:\n" + textwrap.indent(textwrap.dedent(systems), "  "), encoding="utf-8")
    return p


def test_default_names_follow_the_settings_that_are_on(tmp_path):
    cfg = load_config(write(tmp_path, """\
        - name: kai
          adapter: command
          command: [kai]
          settings: {model: m1, agents: false}
          matrix: {agents: [false, true], solution_server: [off, on]}
        - {name: gold, adapter: gold}
        """))
    names = [s.name for s in cfg.systems]
    assert names == ["kai-baseline", "kai-solution-server", "kai-agents", "kai-agents-solution-server", "gold"]
    full = cfg.system("kai-agents-solution-server")
    assert full.settings == {"model": "m1", "agents": True, "solution_server": "on"}
    assert cfg.system("kai-baseline").settings == {"model": "m1", "agents": False, "solution_server": "off"}
    assert {s.scenario_of for s in cfg.systems} == {"kai", None}
    assert cfg.baseline_name == "kai-baseline"


def test_given_names_and_non_boolean_axes(tmp_path):
    cfg = load_config(write(tmp_path, """\
        - name: kai
          adapter: command
          command: [kai]
          matrix: {model: [small, large]}
          names: [kai-small, kai-large]
        """))
    assert [(s.name, s.settings) for s in cfg.systems] == [("kai-small", {"model": "small"}),
                                                           ("kai-large", {"model": "large"})]
    cfg2 = load_config(write(tmp_path, """\
        - {name: k, adapter: command, command: [k], matrix: {temperature: [0, 0.5]}}
        """))
    assert [s.name for s in cfg2.systems] == ["k-temperature-0", "k-temperature-0.5"]


def test_expanded_systems_have_their_own_generate_slice(tmp_path):
    from evalkit.stages.slices import generate_slice

    cfg = load_config(write(tmp_path, """\
        - {name: kai, adapter: command, command: [kai], matrix: {agents: [false, true]}}
        """))
    a, b = (generate_slice(cfg, s) for s in cfg.systems)
    assert a != b and a["system"]["settings"] == {"agents": False}
    assert "matrix" not in a["system"] and "scenario_of" not in a["system"]


@pytest.mark.parametrize("systems, expected", [
    ("- {name: kai, adapter: command, command: [k], matrix: {a: [1, 2]}, names: [only-one]}",
     "names lists 1 name(s) for 2 matrix combinations"),
    ("- {name: kai, adapter: gold, matrix: {a: [1, 2]}}", "matrix needs an adapter with `settings`"),
    ("- {name: kai, adapter: command, command: [k], matrix: {a: []}}", "matrix.a"),
    ("- {name: kai, adapter: command, command: [k], matrix: {a: [true, true]}}", "duplicate system name"),
])
def test_bad_matrices_name_the_file_and_the_problem(tmp_path, systems, expected):
    p = write(tmp_path, systems)
    with pytest.raises(InputError) as err:
        load_config(p)
    text = str(err.value.problems[0])
    assert str(p) in text and expected in text
