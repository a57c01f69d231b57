"""Reference strength of generation cases: the expected output file with each top-level statement left out
in turn, checked by the case's free graders (assertions, the rubric's pre-check; never the judge)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from evalkit.kinds import kind
from evalkit.project import load
from helpers import evalkit

EXPECTED = textwrap.dedent('''\
    """Arithmetic helpers."""
    import math


    # adds
    def add(a, b):
        return a + b


    def mul(a, b):
        return a * b


    def root(x):
        return math.sqrt(x)
    ''')


def case_yaml(cid: str, assertions: str) -> str:
    return textwrap.dedent(f"""\
        id: {cid}
        inputs:
          instructions: Write calc.py with add, mul and root.
          output_path: calc.py
        reference:
          files:
            calc.py: expected.py
        criteria:
          - {{id: all, text: "Defines add, mul and root."}}
        assertions:
        """) + textwrap.indent(assertions, "  ")


def project(root: Path) -> Path:
    suite = root / "cases" / "gen"
    for cid, assertions in (
            ("thin", '- {type: contains, value: "def add(", description: defines add}\n'),
            ("full", '- {type: contains, value: "def add(", description: defines add}\n'
                     '- {type: contains, value: "def mul(", description: defines mul}\n'
                     '- {type: regex, value: "def root\\\\(", description: defines root}\n')):
        (suite / cid).mkdir(parents=True)
        (suite / cid / "expected.py").write_text(EXPECTED)
        (suite / cid / "case.yaml").write_text(case_yaml(cid, assertions))
    (suite / "suite.yaml").write_text("kind: generation\nlanguage: python\n")
    (root / "evalkit.yaml").write_text("release: r1\nsystems:\n  - {name: gold, adapter: gold}\n")
    return root


def test_generation_ablations_leave_out_each_statement_but_the_imports(tmp_path: Path) -> None:
    loaded = load(str(project(tmp_path / "p") / "evalkit.yaml"))
    case = loaded.project.case("gen/thin")
    ablations = kind("generation").ablations(case)
    assert [a.name for a in ablations] == ["half-statements", "without-statement-1", "without-statement-2",
                                          "without-statement-3", "without-statement-4"]
    # the docstring is a statement too; the import is kept in every partial answer
    assert ablations[1].description == 'calc.py without `"""Arithmetic helpers."""` (lines 1-1)'
    assert all("import math" in a.sample.files["calc.py"] for a in ablations)
    # a comment right above a statement goes with it
    without_add = ablations[2].sample.files["calc.py"]
    assert "# adds" not in without_add and "def add" not in without_add and "def mul" in without_add
    assert "def mul" not in ablations[0].sample.files["calc.py"]  # the later half: mul and root


def test_thin_assertions_are_weak_and_full_ones_strong(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    evalkit(root, "run", "health")

    def health(cid: str) -> dict:
        return json.loads((root / ".evalkit" / "health" / "gen" / f"{cid}.json").read_text())

    thin, full = health("thin"), health("full")
    assert thin["checked_by"] == "reference" and thin["strength"] == "weak", thin
    outcomes = {a["name"]: a["outcome"] for a in thin["ablations"]}
    # only `def add` is asserted: the file without mul, root or the docstring passes every free check
    assert outcomes == {"half-statements": "passed", "without-statement-1": "passed",
                        "without-statement-2": "noticed", "without-statement-3": "passed",
                        "without-statement-4": "passed"}
    assert "calc.py without `def mul(a, b):`" in thin["reason"]
    assert not any(a["container"] for a in thin["ablations"])
    # the full case notices each function gone, but not its docstring: still weak, naming only that
    assert full["strength"] == "weak"
    passed = [a["name"] for a in full["ablations"] if a["outcome"] == "passed"]
    assert passed == ["without-statement-1"], full
    noticed = next(a for a in full["ablations"] if a["name"] == "without-statement-3")
    assert "defines mul (not found)" in noticed["detail"]


def test_demo_generation_cases_strong_and_weak() -> None:
    loaded = load(str(Path(__file__).resolve().parents[1] / "evalkit.yaml"))
    gen = kind("generation")
    model = loaded.project.case("generation/petstore-model")
    runs = [gen.try_ablation(loaded.config, model, a) for a in gen.ablations(model)]
    assert [r.outcome for r in runs] == ["noticed", "noticed"]  # each interface is asserted
    tests = loaded.project.case("generation/petstore-tests")
    runs = {r.name: r for r in (gen.try_ablation(loaded.config, tests, a) for a in gen.ablations(tests))}
    # only the POST test is asserted (toBe(201)); the list and get-by-id tests are judged, not checked
    assert runs["without-statement-4"].outcome == "noticed" and "checks 201" in runs["without-statement-4"].detail
    assert runs["without-statement-3"].outcome == "passed" and "lists pets" in runs["without-statement-3"].description
    # an empty output file: the rubric's pre-check decides without a model
    empty = gen.ablations(tests)[0].model_copy(update={"sample": gen.ablations(tests)[0].sample.model_copy(
        update={"files": {"tests/pets.test.ts": ""}})})
    run = gen.try_ablation(loaded.config, tests, empty)
    assert run.outcome == "noticed" and "pre-check" in run.detail
