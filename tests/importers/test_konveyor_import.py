"""`evalkit import konveyor`: a real analyzer report excerpt (konveyor/kai coolstore) as agentic and
migration suites, matcher derivation from real rules, and bad input."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from evalkit.cases import discover
from evalkit.casemodels import IncidentMatcher
from evalkit.errors import InputError
from evalkit.importers.konveyor import (copy_source, import_konveyor, load_report, matcher_from_rule, matcher_hits,
                                        migration_ids, resolve)
from evalkit.yamlio import load_yaml, plain
from helpers import evalkit_at

DATA = Path(__file__).resolve().parent / "data" / "konveyor"
REPORT = DATA / "output.yaml"
SOURCE = DATA / "source"
JAVA = "src/main/java/com/redhat/coolstore"
ENTITY = f"{JAVA}/model/InventoryEntity.java"
MDB = f"{JAVA}/service/OrderServiceMDB.java"
PROCESSOR = f"{JAVA}/service/ShoppingCartOrderProcessor.java"
#: (rule, file, line) of every incident of the excerpt whose file is in source/ (the pom.xml one is not).
EXPECTED = [("javax-to-jakarta-import-00001", ENTITY, n) for n in range(5, 11)] + [
    ("jms-to-reactive-quarkus-00010", MDB, 14),
    ("jms-to-reactive-quarkus-00040", PROCESSOR, 8), ("jms-to-reactive-quarkus-00040", PROCESSOR, 24),
    ("jms-to-reactive-quarkus-00050", PROCESSOR, 7), ("jms-to-reactive-quarkus-00050", PROCESSOR, 8)]


def evalkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    env.pop("EVALKIT_RELEASE", None)
    env.pop("EVALKIT_CONFIG", None)
    return evalkit_at(list(args), cwd, env)


def _check_project(root: Path) -> None:
    """`evalkit check` on a project holding only the imported suites."""
    (root / "evalkit.yaml").write_text("release: r1\nbaseline: gold\nsystems:\n  - name: gold\n    adapter: gold\n")
    proc = evalkit("check", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---- the real excerpt as an agentic suite ------------------------------------------------------

def test_real_report_becomes_one_agentic_case(tmp_path: Path) -> None:
    proc = evalkit("import", "konveyor", str(REPORT), "--source", str(SOURCE), "--suite-dir", "cases/coolstore",
                   "--name", "coolstore", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 1 agentic case(s) with 11 incident(s), 4 matcher(s) (1 import, 3 regex)" in proc.stdout
    # the pom.xml incident: its file is not in the source tree -> a warning naming report:line, no crash
    (warning,) = [ln for ln in proc.stderr.splitlines() if "warning" in ln]
    assert re.search(r"output\.yaml:\d+: jms-to-reactive-quarkus-00000: file:///tmp/source-code/pom\.xml not found", warning)

    suite = tmp_path / "cases" / "coolstore"
    spec = plain(load_yaml(suite / "suite.yaml"))
    assert spec["kind"] == "agentic" and spec["language"] == "java" and "output.yaml" in spec["description"]
    project = discover(tmp_path / "cases")
    assert project.problems == []
    (case,) = project.cases
    assert case.ok and case.kind == "agentic" and case.id == "coolstore"
    incidents = case.inputs.incidents
    assert [(i.rule_id, i.file, i.line) for i in incidents] == EXPECTED
    assert [(t.rule_id, t.file, t.line) for t in case.reference.expected_tasks] == EXPECTED
    assert incidents[0].message == "Replace the `javax.persistence` import statement with `jakarta.persistence`"
    assert incidents[0].description == "The package 'javax' has been replaced by 'jakarta'."
    assert incidents[6].message.startswith("Enterprise Java Beans (EJBs) are not supported in Quarkus.")
    # the source tree is copied and every incident points at a real line of it
    src = case.ref_path("inputs.source_dir")
    assert src is not None and src.name == "source"
    for _rule, file, line in EXPECTED:
        assert (src / file).read_bytes() == (SOURCE / file).read_bytes()
        assert len((src / file).read_text().splitlines()) >= line
    assert "javax.persistence.Column" in (src / ENTITY).read_text().splitlines()[4]

    # matchers derived from the incidents (no --rules)
    m = case.inputs.matchers
    assert m["jms-to-reactive-quarkus-00050"] == IncidentMatcher(type="import", pattern="javax.jms")
    assert m["jms-to-reactive-quarkus-00010"] == IncidentMatcher(type="regex", pattern=r"@MessageDriven\b")
    assert m["javax-to-jakarta-import-00001"].type == "regex"
    assert "javax\\.persistence|javax\\.xml\\.bind\\.annotation" in m["javax-to-jakarta-import-00001"].pattern
    for rule, file, _ in EXPECTED:  # each matcher finds its incidents in the legacy file
        assert matcher_hits(m[rule], (SOURCE / file).read_text()), (rule, file)
    migrated = (SOURCE / ENTITY).read_text().replace("import javax.", "import jakarta.")
    assert not matcher_hits(m["javax-to-jakarta-import-00001"], migrated)
    _check_project(tmp_path)


def test_matchers_from_real_rules(tmp_path: Path) -> None:
    # a folder of real rule YAML (only the javax rule): that rule's `when:` gives its matcher, the rest
    # fall back to the incidents
    res = import_konveyor(REPORT, SOURCE, tmp_path / "a", rules=DATA / "rules", name="coolstore")
    assert res.matcher_origin == {"javax-to-jakarta-import-00001": "rule", "jms-to-reactive-quarkus-00010": "incident",
                                  "jms-to-reactive-quarkus-00040": "incident", "jms-to-reactive-quarkus-00050": "incident"}
    javax = res.matchers["javax-to-jakarta-import-00001"]
    assert javax.type == "regex" and javax.pattern.startswith(r"(?m)^\s*import\s+(?:static\s+)?javax\.(activation|")
    # the JSON list of rules (konveyor/rulesets): every rule with an incident has a condition to derive from
    res = import_konveyor(REPORT, SOURCE, tmp_path / "b", rules=DATA / "rules.json", name="coolstore")
    assert set(res.matcher_origin.values()) == {"rule"}
    assert res.matchers["jms-to-reactive-quarkus-00050"].pattern == \
        r"(?m)^\s*import\s+(?:static\s+)?(?:javax\.jms|jakarta\.jms)\b"
    assert res.matchers["jms-to-reactive-quarkus-00040"] == IncidentMatcher(type="regex", pattern=r"\bTopic\b")
    mdb = res.matchers["jms-to-reactive-quarkus-00010"]
    assert matcher_hits(mdb, "@MessageDriven(name = \"x\")") and matcher_hits(mdb, "@jakarta.ejb.MessageDriven")
    assert not matcher_hits(mdb, "@ApplicationScoped")
    assert res.warnings and all("pom.xml" in w for w in res.warnings)
    for rule, file, _ in EXPECTED:
        assert matcher_hits(res.matchers[rule], (SOURCE / file).read_text()), (rule, file)
    assert discover(tmp_path).problems == []


def test_rule_conditions_to_matchers() -> None:
    imp = {"when": {"java.referenced": {"location": "IMPORT", "pattern": "javax.ejb*"}}}
    assert matcher_from_rule(imp) == IncidentMatcher(type="import", pattern="javax.ejb")
    content = {"when": {"builtin.filecontent": {"pattern": r"quarkus\.datasource\.url", "filePattern": r".*\.properties"}}}
    assert matcher_from_rule(content) == IncidentMatcher(type="regex", pattern=r"quarkus\.datasource\.url")
    mixed = {"when": {"or": [{"java.referenced": {"location": "IMPORT", "pattern": "javax.ejb.Stateless"}},
                             {"builtin.filecontent": {"pattern": "@Stateless"}}]}}
    m = matcher_from_rule(mixed)
    assert m is not None and m.type == "regex" and m.pattern.startswith("(?m)")
    assert matcher_hits(m, "import javax.ejb.Stateless;") and matcher_hits(m, "@Stateless")
    dep = {"when": {"java.dependency": {"name": "javax.jms.javax.jms-api", "lowerbound": "0.0.0"}}}
    assert matcher_from_rule(dep) is None
    negated = {"when": {"and": [{"java.referenced": {"location": "IMPORT", "pattern": "javax.ejb*"}},
                                {"not": True, "java.referenced": {"location": "IMPORT", "pattern": "javax.jms*"}}]}}
    assert matcher_from_rule(negated) == IncidentMatcher(type="import", pattern="javax.ejb")


# ---- the real excerpt as a migration suite -----------------------------------------------------

def test_real_report_becomes_migration_cases(tmp_path: Path) -> None:
    proc = evalkit("import", "konveyor", str(REPORT), "--source", str(SOURCE), "--suite-dir", "cases/files",
                   "--kind", "migration", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 3 migration case(s) with 11 incident(s)" in proc.stdout
    assert "pom.xml not found" in proc.stderr
    project = discover(tmp_path / "cases")
    assert project.problems == []
    cases = {c.id: c for c in project.cases}
    assert sorted(cases) == ["InventoryEntity", "OrderServiceMDB", "ShoppingCartOrderProcessor"]
    for cid, file in (("InventoryEntity", ENTITY), ("OrderServiceMDB", MDB), ("ShoppingCartOrderProcessor", PROCESSOR)):
        case = cases[cid]
        assert case.kind == "migration" and case.ok
        assert case.inputs.file_path == file
        assert case.read("inputs.legacy_file") == (SOURCE / file).read_text()
        assert [(i.rule_id, file, i.line) for i in case.inputs.incidents] == \
            [e for e in EXPECTED if e[1] == file]
        assert case.reference.expected_file is None
    _check_project(tmp_path)


# ---- paths -------------------------------------------------------------------------------------

def test_uri_is_matched_by_longest_existing_suffix(tmp_path: Path) -> None:
    assert resolve(f"file:///tmp/source-code/{ENTITY}", SOURCE) == ENTITY
    assert resolve(f"file:///home/someone/apps/coolstore/{ENTITY}", SOURCE) == ENTITY
    assert resolve(f"file:///x/{ENTITY.replace('InventoryEntity', 'Inventory%45ntity')}", SOURCE) == ENTITY  # %-encoded
    assert resolve(ENTITY, SOURCE) == ENTITY
    assert resolve("file:///tmp/source-code/pom.xml", SOURCE) is None
    assert resolve("file:///tmp/source-code/../../etc/passwd", SOURCE) is None
    # the longest suffix wins when a shorter one exists too
    root = tmp_path / "app"
    (root / "a" / "Foo.java").parent.mkdir(parents=True)
    (root / "a" / "Foo.java").write_text("x")
    (root / "Foo.java").write_text("y")
    assert resolve("file:///src/a/Foo.java", root) == "a/Foo.java"


def test_migration_ids_are_short_and_unique() -> None:
    ids = migration_ids(["src/a/model/Order.java", "src/b/model/Order.java", "src/x/Item.java", "src/y/Order.xml"])
    assert ids["src/x/Item.java"] == "Item"
    assert len(set(ids.values())) == 4
    assert all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", i) for i in ids.values())
    assert ids["src/a/model/Order.java"] == "a.model.Order"


def test_source_copy_skips_vcs_and_build_outputs(tmp_path: Path) -> None:
    src = tmp_path / "app"
    for rel in ("src/A.java", ".git/config", "target/classes/A.class", "build/x.txt", "src/B.class", "pom.xml"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("x")
    n, _ = copy_source(src, tmp_path / "dest", 50)
    assert n == 2
    assert sorted(str(p.relative_to(tmp_path / "dest")) for p in (tmp_path / "dest").rglob("*") if p.is_file()) == \
        ["pom.xml", "src/A.java"]
    (src / "big.bin").write_bytes(b"0" * 2_000_000)
    with pytest.raises(InputError, match="source tree too large"):
        copy_source(src, tmp_path / "dest2", 1)


# ---- bad input: file:line, exit 2, no traceback ------------------------------------------------

def _bad(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    report = tmp_path / "output.yaml"
    report.write_text(textwrap.dedent(text))
    return evalkit("import", "konveyor", str(report), "--source", str(SOURCE), "--suite-dir", str(tmp_path / "s"),
                   cwd=tmp_path)


def test_broken_yaml_names_file_and_line(tmp_path: Path) -> None:
    proc = _bad(tmp_path, """\
        - name: kai/quarkus
          violations:
            rule-1:
              incidents:
              - uri: file:///x/A.java
                message: "unterminated
                lineNumber: 3
        """)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert re.search(r"output\.yaml:\d+: malformed YAML", proc.stderr), proc.stderr
    assert not (tmp_path / "s").exists()


def test_wrong_shapes_say_what_was_expected(tmp_path: Path) -> None:
    proc = _bad(tmp_path, "rulesets: []\n")
    assert proc.returncode == 2 and "output.yaml:1: expected a list of rulesets" in proc.stderr
    proc = _bad(tmp_path, """\
        - name: r
          violations:
            rule-1:
              incidents:
              - message: no uri here
                lineNumber: 3
              - uri: file:///x/A.java
                lineNumber: three
        """)
    assert proc.returncode == 2
    assert "output.yaml:5: rule-1: incident 1: expected a mapping with uri" in proc.stderr
    assert "output.yaml:8: rule-1: incident 2: lineNumber: expected a whole number" in proc.stderr
    proc = _bad(tmp_path, "- name: r\n  violations: [1, 2]\n")
    assert proc.returncode == 2 and "output.yaml:2: ruleset r: violations: expected a mapping" in proc.stderr


def test_no_incident_file_under_source_is_an_error(tmp_path: Path) -> None:
    report = tmp_path / "output.yaml"
    report.write_text("- name: r\n  violations:\n    rule-1:\n      incidents:\n      - uri: file:///x/Nope.java\n")
    with pytest.raises(InputError, match="none of the report's 1 incident"):
        import_konveyor(report, SOURCE, tmp_path / "s")
    assert len(load_report(report)) == 1


def test_reimport_replaces_the_source_copy(tmp_path: Path) -> None:
    src = tmp_path / "app"
    shutil.copytree(SOURCE, src)
    import_konveyor(REPORT, src, tmp_path / "s", name="c")
    (src / "extra.txt").write_text("new")
    (tmp_path / "s" / "c" / "source" / "stale.txt").write_text("old")
    import_konveyor(REPORT, src, tmp_path / "s", name="c")
    assert (tmp_path / "s" / "c" / "source" / "extra.txt").exists()
    assert not (tmp_path / "s" / "c" / "source" / "stale.txt").exists()
