"""incidents_resolved of migration cases (hand-checked), codebleu_gain, and reference validation of
every kind: a broken reference of each kind is found, a deletion case is valid when gold deletes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evalkit.casemodels import Incident, IncidentMatcher
from evalkit.graders.incidents import recheck_file, resolved_share
from evalkit.metrics.codebleu import codebleu_gain
from evalkit.project import load
from evalkit.stages.validate import validate_case
from evalkit.systems.gold import gold_sample

JAVAX = IncidentMatcher(type="regex", pattern=r"(?m)^\s*import\s+(?:static\s+)?javax\.(persistence|xml)[\w.]*")
LEGACY = textwrap.dedent("""\
    package com.acme;

    import javax.persistence.Column;
    import javax.persistence.Entity;
    import javax.persistence.Id;
    import javax.xml.bind.annotation.XmlRootElement;

    @Entity
    @Stateless
    public class Item {
        @Id @Column Long id;
    }
    """)
INCIDENTS = [Incident(rule_id="javax", line=n) for n in (3, 4, 5, 6)]


def test_each_fixed_import_counts_and_the_one_left_is_the_kept_line() -> None:
    out = LEGACY.replace("javax.persistence", "jakarta.persistence")
    checks = recheck_file(INCIDENTS, {"javax": JAVAX}, LEGACY, out, "Item.java")
    assert [c.present for c in checks] == [False, False, False, True]  # only the javax.xml line is left
    assert resolved_share(checks) == 0.75


def test_collapsed_wildcard_import_is_one_incident_left() -> None:
    out = LEGACY.replace("import javax.persistence.Column;\nimport javax.persistence.Entity;\nimport javax.persistence.Id;\n",
                         "import javax.persistence.*;\n").replace("javax.xml", "jakarta.xml")
    checks = recheck_file(INCIDENTS, {"javax": JAVAX}, LEGACY, out, "Item.java")
    assert sum(c.present for c in checks) == 1
    assert resolved_share(checks) == 0.75


def test_unchanged_resolves_nothing_deleted_resolves_everything() -> None:
    assert resolved_share(recheck_file(INCIDENTS, {"javax": JAVAX}, LEGACY, LEGACY, "Item.java")) == 0.0
    assert resolved_share(recheck_file(INCIDENTS, {"javax": JAVAX}, LEGACY, None, "Item.java")) == 1.0


def test_without_matcher_the_line_decides_and_categories_and_blind_incidents_are_not_counted() -> None:
    incidents = [Incident(rule_id="stateless", line=9),                                 # no matcher: line 9 "@Stateless"
                 Incident(rule_id="gen", line=11, category="potential"),              # not counted
                 Incident(rule_id="import-ejb", line=3)]                                # matcher blind in legacy
    matchers = {"import-ejb": IncidentMatcher(type="import", pattern="javax.ejb")}
    out = LEGACY.replace("@Stateless\n", "@ApplicationScoped\n")
    checks = recheck_file(incidents, matchers, LEGACY, out, "Item.java")
    assert [c.present for c in checks][0] is False
    assert [c.counted for c in checks] == [True, False, False]
    assert checks[2].checkable is False
    assert resolved_share(checks) == 1.0
    assert resolved_share(recheck_file(incidents, matchers, LEGACY, LEGACY, "Item.java")) == 0.0


def test_codebleu_gain_is_a_plain_difference_that_never_saturates() -> None:
    """#25: the normalised gain saturated at +-1 on files whose legacy CodeBLEU was 0.97-0.997 (a few
    tokens of headroom); the gain is now CodeBLEU points over the legacy file."""
    assert codebleu_gain(0.8, 0.8) == 0.0
    assert codebleu_gain(1.0, 0.8) == pytest.approx(0.2)            # gold gains the headroom
    assert codebleu_gain(0.9, 0.8) == pytest.approx(0.1)
    assert codebleu_gain(0.0, 0.8) == pytest.approx(-0.8)           # no clipping needed
    assert codebleu_gain(0.995, 0.99) == pytest.approx(0.005)       # tiny headroom: a tiny number, not 0.5


def _project(root: Path) -> Path:
    mig = root / "cases" / "mig"
    (mig / "ok" / "legacy").mkdir(parents=True)
    (mig / "ok" / "expected").mkdir(parents=True)
    (mig / "ok" / "legacy" / "Item.java").write_text(LEGACY)
    (mig / "ok" / "expected" / "Item.java").write_text(LEGACY.replace("javax.", "jakarta.").replace("@Stateless", "@ApplicationScoped"))
    (mig / "suite.yaml").write_text("kind: migration\nlanguage: java\ndefaults:\n  matchers:\n"
                                    "    javax: {type: regex, pattern: '(?m)^\\s*import\\s+javax\\.(persistence|xml)'}\n")
    incidents = "\n".join(f"    - {{rule_id: javax, line: {n}}}" for n in (3, 4, 5, 6))
    base = "inputs:\n  file_path: src/Item.java\n  legacy_file: legacy/Item.java\n  incidents:\n" + incidents + "\n"
    (mig / "ok" / "case.yaml").write_text("id: ok\n" + base + "reference: {expected_file: expected/Item.java}\n"
                                          "assertions: [{type: not_contains, value: 'javax.persistence'}]\n")
    # gold keeps the javax.xml import: the incident stays, and an assertion fails
    (mig / "keeps" / "expected").mkdir(parents=True)
    (mig / "keeps" / "legacy").mkdir(parents=True)
    (mig / "keeps" / "legacy" / "Item.java").write_text(LEGACY)
    (mig / "keeps" / "expected" / "Item.java").write_text(LEGACY.replace("javax.persistence", "jakarta.persistence"))
    (mig / "keeps" / "case.yaml").write_text("id: keeps\n" + base + "reference: {expected_file: expected/Item.java}\n")
    (mig / "gone" / "legacy").mkdir(parents=True)
    (mig / "gone" / "legacy" / "Item.java").write_text(LEGACY)
    (mig / "gone" / "case.yaml").write_text("id: gone\n" + base + "reference: {deleted: true}\n")
    # an elided reference file
    (mig / "elided" / "expected").mkdir(parents=True)
    (mig / "elided" / "legacy").mkdir(parents=True)
    (mig / "elided" / "legacy" / "Item.java").write_text(LEGACY)
    (mig / "elided" / "expected" / "Item.java").write_text(
        "package com.acme;\n\nimport jakarta.persistence.Entity;\n\n@Entity\npublic class Item {\n"
        "    // ... rest of the class remains unchanged ...\n}\n")
    (mig / "elided" / "case.yaml").write_text("id: elided\n" + base + "reference: {expected_file: expected/Item.java}\n")
    gen = root / "cases" / "gen"
    (gen / "bad" / "ref").mkdir(parents=True)
    (gen / "suite.yaml").write_text("kind: generation\nlanguage: python\n")
    (gen / "bad" / "ref" / "m.py").write_text("def f():\n    return 1\n")
    (gen / "bad" / "case.yaml").write_text("id: bad\ninputs: {instructions: write f, output_path: m.py}\n"
                                           "reference: {files: {m.py: ref/m.py}}\n"
                                           "assertions: [{type: contains, value: 'def g('}]\n")
    (root / "evalkit.yaml").write_text("release: r\nsystems:\n  - {name: gold, adapter: gold}\n")
    return root / "evalkit.yaml"


def test_validation_of_every_kind_finds_broken_references(tmp_path: Path) -> None:
    loaded = load(str(_project(tmp_path)))
    assert not loaded.project.problems, loaded.project.problems
    cases = {c.key: c for c in loaded.project.cases}
    result = {k: validate_case(loaded.config, c) for k, c in cases.items()}
    assert result["mig/ok"].status == "valid", result["mig/ok"].reason
    assert result["mig/gone"].status == "valid", result["mig/gone"].reason
    assert gold_sample(cases["mig/gone"]).deleted_files == ["src/Item.java"]
    assert result["mig/keeps"].status == "broken"
    assert "gold keeps 1 incident(s) of javax" in result["mig/keeps"].reason
    assert result["mig/elided"].status == "broken" and "not complete" in result["mig/elided"].reason
    assert result["gen/bad"].status == "broken" and "def g(" in result["gen/bad"].reason


def test_deleted_with_expected_file_is_a_case_problem(tmp_path: Path) -> None:
    cfg = _project(tmp_path)
    case = tmp_path / "cases" / "mig" / "ok" / "case.yaml"
    case.write_text(case.read_text().replace("reference: {expected_file: expected/Item.java}",
                                             "reference: {expected_file: expected/Item.java, deleted: true}"))
    problems = load(str(cfg)).project.problems
    assert any("contradict" in p.message and p.file.endswith("case.yaml") and p.line for p in problems), problems
