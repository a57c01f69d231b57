"""The bad-input table: one small project, one mutation per input, `evalkit check` (or the importer)
in its own process. Every input error must exit 2 and name the file and line of the fault with a
phrase saying what was expected, never a traceback. A few inputs only show at run time: the run
records that case's error with the reason, and the other cases complete.

Complements tests/test_bad_input.py (which holds the first single cases; none is repeated here).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from fake_docker import FAILURE, failing_daemon
from helpers import REPO, both, evalkit, evalkit_here, in_process, make_project

KONVEYOR = REPO / "tests" / "importers" / "data" / "konveyor"

SYSTEMS = textwrap.dedent("""\
    systems:
      - name: rules
        adapter: command
        command: ["{python}", "-m", "evalkit.demo_systems.rule_rewriter"]
        suites: [migration]
      - name: gold
        adapter: gold
      - name: preds
        adapter: recorded
        path: preds.jsonl
        suites: [patch]
      - name: rec
        adapter: recorded
        path: recorded
        suites: [migration]
    """)

MIG = "cases/migration/jpa-entity/case.yaml"
MIG2 = "cases/migration/cdi-inject/case.yaml"
PATCH = "cases/patch/slug-lowercase/case.yaml"
PATCH_SUITE = "cases/patch/suite.yaml"
AGENTIC = "cases/agentic/catalog/case.yaml"
GEN = "cases/generation/petstore-model/case.yaml"
MIG_SUITE = "cases/migration/suite.yaml"
CFG = "evalkit.yaml"


def build(root: Path) -> Path:
    """A tiny project: two migration cases, one patch, one agentic and one generation case; a command
    system, gold, a predictions JSONL and a folder of recorded outputs."""
    make_project(root, cases=["jpa-entity", "cdi-inject"], systems=SYSTEMS)
    cfg = root / CFG
    cfg.write_text(cfg.read_text().replace("baseline: naive", "baseline: gold"))
    src = REPO / "cases"
    for suite, case in (("patch", "slug-lowercase"), ("agentic", "catalog"), ("generation", "petstore-model")):
        (root / "cases" / suite).mkdir(parents=True)
        shutil.copy(src / suite / "suite.yaml", root / "cases" / suite / "suite.yaml")
        shutil.copytree(src / suite / case, root / "cases" / suite / case)
    shutil.copytree(src / "patch" / "_src", root / "cases" / "patch" / "_src")
    gold = (src / "patch" / "slug-lowercase" / "gold.patch").read_text()
    (root / "preds.jsonl").write_text(json.dumps({"instance_id": "slug-lowercase", "model_name_or_path": "m",
                                                  "model_patch": gold}) + "\n")
    rec = root / "recorded" / "migration"
    rec.mkdir(parents=True)
    for case in ("jpa-entity", "cdi-inject"):
        (rec / f"{case}.json").write_text(json.dumps({"text": f"answer for {case}"}, indent=1) + "\n")
    return root


# ---------------------------------------------------------------- mutations


def edit(rel: str, old: str, new: str, count: int = 1) -> Callable[[Path], None]:
    def go(root: Path) -> None:
        p = root / rel
        text = p.read_text()
        assert old in text, (rel, old)
        p.write_text(text.replace(old, new, count))
    return go


def append(rel: str, text: str) -> Callable[[Path], None]:
    def go(root: Path) -> None:
        p = root / rel
        p.write_text(p.read_text() + text)
    return go


def write(rel: str, data: str | bytes) -> Callable[[Path], None]:
    def go(root: Path) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return go


def latin1(rel: str, after: str) -> Callable[[Path], None]:
    """Put a Latin-1 byte (not UTF-8) on the line holding ``after``, just after it."""
    def go(root: Path) -> None:
        p = root / rel
        data = p.read_bytes()
        assert after.encode() in data, (rel, after)
        p.write_bytes(data.replace(after.encode(), after.encode() + b" caf\xe9", 1))
    return go


def with_assertion(rel: str, spec: str) -> Callable[[Path], None]:
    """Add one assertion (a YAML flow mapping) to a case that has an `assertions:` list."""
    return edit(rel, "assertions:\n", f"assertions:\n  - {spec}\n")


@dataclass
class Bad:
    """One bad input: how to make it, where the fault is, and what the message must say."""

    mutate: Callable[[Path], None]
    file: str
    """The file the message must name (relative to the project, or to the test folder for imports)."""
    marker: str | int
    """The fault's line: its number, or a text that first appears on that line of the mutated file."""
    expect: str
    """A phrase of the message saying what is wrong or expected."""
    command: str = "check"
    """`check`, `konveyor` or `swebench`."""
    env: dict[str, str] = field(default_factory=dict)


def line_in(path: Path, marker: str | int) -> int:
    if isinstance(marker, int):
        return marker
    for n, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        if marker in raw.decode("utf-8", errors="replace"):
            return n
    raise AssertionError(f"{marker!r} not in {path}")


def preds_row(**change: object) -> str:
    row = {"instance_id": "slug-lowercase", "model_name_or_path": "m", "model_patch": ""}
    return json.dumps({**row, **change})


SWE_GOOD = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "patch": "p", "test_patch": "t",
            "FAIL_TO_PASS": "[\"a::b\"]", "PASS_TO_PASS": "[]"}


def swe_rows(*rows: object) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


KONVEYOR_GOOD = """\
- name: kai/quarkus
  violations:
    javax-to-jakarta-import-00001:
      description: "javax to jakarta"
      incidents:
      - uri: file:///x/src/main/java/com/redhat/coolstore/model/Order.java
        message: "Replace javax"
        lineNumber: 5
"""

def repo_at_unknown_commit(root: Path) -> None:
    """The patch case's tree as a local git repository at a commit it does not have."""
    repo = root / "repo"
    shutil.copytree(root / "cases/patch/_src/invlib", repo)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(git + args, check=True, capture_output=True)
    edit(PATCH, "  test_patch_file: test.patch", f"  test_patch_file: test.patch\n  source_dir: null\n  repo: {repo}\n"
                                                 f"  base_commit: 0123456789abcdef0123456789abcdef01234567")(root)


TABLE: list = [
    # ---- evalkit.yaml
    pytest.param(Bad(edit(CFG, "release: r1", "release: r1: again"), CFG, "r1: again", "malformed YAML"), id="config-malformed-yaml"),
    pytest.param(Bad(write(CFG, "- release\n- systems\n"), CFG, 1, "expected a mapping"), id="config-not-a-mapping"),
    pytest.param(Bad(append(CFG, "colour: blue\n"), CFG, "colour:", "unknown key"), id="config-unknown-key"),
    pytest.param(Bad(edit(CFG, "release: r1\n", "title: t\n"), CFG, 1, "release: required key is missing"),
                 id="config-missing-release"),
    pytest.param(Bad(edit(CFG, "release: r1", "release: ../../r1"), CFG, "release:", "is not a valid name"),
                 id="config-release-label-traversal"),
    pytest.param(Bad(edit(CFG, "release: r1", "release: r1\nrelease: r2"), CFG, "release: r2", "duplicate key"),
                 id="config-duplicate-key"),
    pytest.param(Bad(latin1(CFG, "baseline: gold"), CFG, "baseline: gold", "not UTF-8"), id="config-not-utf8"),
    pytest.param(Bad(edit(CFG, '["{python}", "-m", "evalkit.demo_systems.rule_rewriter"]', '["bin/no-such-system"]'),
                     CFG, "bin/no-such-system", "not found or not executable"), id="config-relative-command-missing"),
    pytest.param(Bad(both(write("bin/sys", "#!/bin/sh\necho {}\n"),
                          edit(CFG, '["{python}", "-m", "evalkit.demo_systems.rule_rewriter"]', '["bin/sys"]')),
                     CFG, "bin/sys", "not found or not executable"), id="config-command-not-executable"),
    pytest.param(Bad(edit(CFG, "evalkit.demo_systems.rule_rewriter", "evalkit.demo_systems.no_such_bot"),
                     CFG, "no_such_bot", "expected an importable module"), id="config-python-module-missing"),
    pytest.param(Bad(edit(CFG, "suites: [migration]\n  - name: gold", "suites: [migration]\n    timeout_s: -1\n  - name: gold"),
                     CFG, "timeout_s", "greater than 0"), id="config-timeout-negative"),
    pytest.param(Bad(edit(CFG, "adapter: gold\n", "adapter: gold\n    samples: 0\n"), CFG, "samples", "greater than or equal to 1"),
                 id="config-samples-zero"),
    pytest.param(Bad(edit(CFG, "baseline: gold", "baseline: nobody"), CFG, 1, "baseline 'nobody' is not one of"),
                 id="config-baseline-unknown"),
    pytest.param(Bad(edit(CFG, "name: rules", "name: gold"), CFG, 1, "duplicate system name"), id="config-duplicate-system"),
    pytest.param(Bad(edit(CFG, "suites: [migration]\n  - name: gold", "suites: [migraton]\n  - name: gold"),
                     CFG, "migraton", "unknown suite 'migraton'"), id="config-system-unknown-suite"),
    pytest.param(Bad(edit(CFG, "path: recorded", "path: recorded-nowhere"), CFG, "recorded-nowhere", "does not exist"),
                 id="config-recorded-path-missing"),
    pytest.param(Bad(append(CFG, "sandbox: {backend: podman}\n"), CFG, "podman", "expected one of auto, docker, local"),
                 id="config-sandbox-backend-unknown"),
    pytest.param(Bad(edit(CFG, "suites: [migration]\n  - name: gold", "suites: [migration]\n    env: {A: [1]}\n  - name: gold"),
                     CFG, "env:", "valid string"),
                 id="config-env-not-a-mapping-of-strings"),
    pytest.param(Bad(edit(CFG, "name: gold", "name: ../../gold-x"), CFG, "../../gold-x", "is not a valid name"),
                 id="config-system-name-traversal"),
    pytest.param(Bad(append(CFG, "sandbox: {memory_mb: lots}\n"), CFG, "memory_mb", "valid integer"),
                 id="config-sandbox-memory-not-a-number"),
    # ---- suite.yaml
    pytest.param(Bad(edit(MIG_SUITE, "kind: migration", "kind: migration: patch"), MIG_SUITE, "kind:", "malformed YAML"),
                 id="suite-malformed-yaml"),
    pytest.param(Bad(append(MIG_SUITE, "colour: red\n"), MIG_SUITE, "colour", "unknown key"), id="suite-unknown-key"),
    pytest.param(Bad(write(MIG_SUITE, "just some text\n"), MIG_SUITE, 1, "expected a mapping"), id="suite-not-a-mapping"),
    pytest.param(Bad(edit(MIG_SUITE, "kind: migration\n", ""), MIG_SUITE, "language:", "kind: required key is missing"),
                 id="suite-missing-kind"),
    pytest.param(Bad(edit(MIG_SUITE, "defaults:\n", "defaults: [1, 2]\nold_defaults:\n"), MIG_SUITE, "defaults", "valid dictionary"),
                 id="suite-defaults-not-a-mapping"),
    pytest.param(Bad(latin1(MIG_SUITE, "kind: migration"), MIG_SUITE, "kind: migration", "not UTF-8"), id="suite-not-utf8"),
    pytest.param(Bad(edit(PATCH_SUITE, "image: evalkit/python-pytest:bookworm", "image: evalkit/no-such-image:0"),
                     PATCH_SUITE, "no-such-image", "neither present nor buildable"), id="suite-default-image-missing"),
    pytest.param(Bad(edit(PATCH_SUITE, "image: evalkit/python-pytest:bookworm", "image: evalkit/Not A Name:0"),
                     PATCH_SUITE, "Not A Name", "Docker cannot look it up"), id="suite-image-not-a-name"),
    pytest.param(Bad(edit(PATCH_SUITE, "source_dir: ../_src/invlib", "source_dir: ../_src/nowhere"),
                     PATCH, "inputs:", "does not exist"), id="suite-default-source-dir-missing"),
    # ---- case.yaml (migration)
    pytest.param(Bad(edit(MIG, "tags: [javax-to-jakarta, jpa]", "tags:\n\t- jpa"), MIG, "\t- jpa", "malformed YAML"),
                 id="case-tab-indent"),
    pytest.param(Bad(write(MIG, "- id\n- inputs\n"), MIG, 1, "expected a mapping"), id="case-not-a-mapping"),
    pytest.param(Bad(edit(MIG, "id: jpa-entity", "id: jpa entity!"), MIG, "id:", "is not a valid name"),
                 id="case-id-bad-characters"),
    pytest.param(Bad(edit(MIG, "id: jpa-entity", "id: ../../../x/PWNED"), MIG, "id:", "is not a valid name"),
                 id="case-id-traversal"),
    pytest.param(Bad(edit(MIG, "id: jpa-entity", "id: jpa-entity\nid: again"), MIG, "id: again", "duplicate key"),
                 id="case-duplicate-key"),
    pytest.param(Bad(edit(MIG, "  legacy_file:", "  colour: red\n  legacy_file:"), MIG, "colour", "inputs.colour: unknown key"),
                 id="case-inputs-unknown-key"),
    pytest.param(Bad(edit(MIG, "tags: [javax-to-jakarta, jpa]", "tags: 5"), MIG, "tags:", "valid list"),
                 id="case-tags-not-a-list"),
    pytest.param(Bad(write(MIG, "id: jpa-entity\ninputs:\n  file_path: a.java\n  legacy_file: legacy/Order.java\n"
                                "  incidents: []\n"), MIG, "incidents", "at least 1 item"), id="case-incidents-empty"),
    pytest.param(Bad(edit(MIG, "      line: 6", "      line: 0"), MIG, "line: 0", "greater than or equal to 1"),
                 id="case-incident-line-zero"),
    pytest.param(Bad(edit(MIG, "    - rule_id: javax-to-jakarta-import-00001\n      description",
                          "    - description"), MIG, "- description", "rule_id: required key is missing"),
                 id="case-incident-without-rule-id"),
    pytest.param(Bad(edit(MIG, "  legacy_file: legacy/Order.java\n",
                          "  legacy_file: legacy/Order.java\n  solved_example: {before_file: legacy/Order.java}\n"),
                     MIG, "solved_example", "after_file: required key is missing"), id="case-solved-example-incomplete"),
    pytest.param(Bad(latin1(MIG, "description: JPA"), MIG, "description: JPA", "not UTF-8"), id="case-not-utf8"),
    pytest.param(Bad(latin1("cases/migration/jpa-entity/legacy/Order.java", "package"), MIG, "legacy_file",
                     "is not UTF-8 text"), id="case-legacy-file-not-utf8"),
    pytest.param(Bad(latin1("cases/migration/jpa-entity/expected/Order.java", "package"), MIG, "expected_file",
                     "is not UTF-8 text"), id="case-expected-file-not-utf8"),
    pytest.param(Bad(with_assertion(MIG, '{type: regex, value: "import (jakarta"}'), MIG, "import (jakarta",
                     "does not compile"), id="assertion-regex-does-not-compile"),
    pytest.param(Bad(with_assertion(MIG, '{type: not_regex, value: "*javax"}'), MIG, "*javax", "does not compile"),
                 id="assertion-not-regex-does-not-compile"),
    pytest.param(Bad(with_assertion(MIG, "{type: regexp, value: x}"), MIG, "regexp", "unknown assertion type 'regexp'; expected one of contains, file_set"),
                 id="assertion-unknown-type"),
    pytest.param(Bad(with_assertion(MIG, "{type: contains, value: x, weight: -1}"), MIG, "weight: -1",
                     "greater than or equal to 0"), id="assertion-negative-weight"),
    pytest.param(Bad(with_assertion(MIG, "{type: contains}"), MIG, "{type: contains}", "expected a non-empty string"),
                 id="assertion-contains-without-value"),
    pytest.param(Bad(with_assertion(MIG, "{type: icontains, value: {a: 1}}"), MIG, "icontains", "expected a non-empty string"),
                 id="assertion-icontains-value-a-mapping"),
    pytest.param(Bad(with_assertion(MIG, "{type: python, value: no_such_module_xyz:check}"), MIG, "no_such_module_xyz",
                     "cannot import"), id="assertion-python-module-missing"),
    pytest.param(Bad(with_assertion(MIG, "{type: python, value: 'json:no_such_function'}"), MIG, "no_such_function",
                     "cannot import"), id="assertion-python-function-missing"),
    pytest.param(Bad(with_assertion(MIG, "{type: python, value: json}"), MIG, "value: json", "expected module:function"),
                 id="assertion-python-not-module-function"),
    pytest.param(Bad(both(write("../boom_at_import.py", "raise RuntimeError('boom at import')\n"),
                          with_assertion(MIG, "{type: python, value: 'boom_at_import:check'}")),
                     MIG, "boom_at_import", "RuntimeError: boom at import"), id="assertion-python-module-raises"),
    pytest.param(Bad(with_assertion(MIG, "{type: is_json, schema: {type: 12}}"), MIG, "is_json", "not a valid JSON Schema"),
                 id="assertion-is-json-bad-schema"),
    pytest.param(Bad(with_assertion(MIG, "{type: file_set, value: Order.java}"), MIG, "file_set", "expected a list"),
                 id="assertion-file-set-not-a-list"),
    # ---- generation case
    pytest.param(Bad(edit(GEN, "  instructions: >-", "  instruction: >-"), GEN, "instruction:", "unknown key"),
                 id="generation-instructions-misspelt"),
    pytest.param(Bad(edit(GEN, "input_files: [petstore.yaml]", "input_files: [petstore.yml]"), GEN, "input_files",
                     "does not exist"), id="generation-input-file-missing"),
    pytest.param(Bad(latin1("cases/generation/petstore-model/expected_models.ts", "export"), GEN, "src/models.ts:",
                     "is not UTF-8 text"), id="generation-reference-file-not-utf8"),
    pytest.param(Bad(edit(GEN, '  - {id: required, text:', '  - {id: required, txt:'), GEN, "txt:", "text: required key"),
                 id="generation-criterion-without-text"),
    # ---- patch case
    pytest.param(Bad(write(PATCH, (REPO / "cases/patch/slug-lowercase/case.yaml").read_text().split("  fail_to_pass:")[0]
                           + "  fail_to_pass: []\n"), PATCH, "fail_to_pass", "fail_to_pass is empty"),
                 id="patch-fail-to-pass-empty"),
    pytest.param(Bad(edit("cases/patch/slug-lowercase/gold.patch", '-    return re.sub(r"[^A-Za-z0-9]+"', '-    return re.sub(r"[^A-Z]+"'),
                     PATCH, "  patch_file:", "gold patch does not apply"), id="patch-gold-does-not-apply"),
    pytest.param(Bad(edit("cases/patch/slug-lowercase/test.patch", "new file mode 100644\n--- /dev/null",
                          "--- a/tests/test_slug.py"), PATCH, "test_patch_file", "test patch does not apply"),
                 id="patch-test-patch-does-not-apply"),
    pytest.param(Bad(write("cases/patch/slug-lowercase/gold.patch", "please fix the slug bug\n"), PATCH, "  patch_file:",
                     "not a unified diff"), id="patch-gold-not-a-diff"),
    pytest.param(Bad(edit("cases/patch/slug-lowercase/gold.patch", "+++ b/invlib/text.py", "+++ b/../../etc/text.py"),
                     PATCH, "  patch_file:", "outside the tree"), id="patch-gold-escapes-the-tree"),
    pytest.param(Bad(latin1("cases/patch/slug-lowercase/test.patch", "+def test_slug_lower_case():"), PATCH,
                     "test_patch_file", "not UTF-8"), id="patch-test-patch-not-utf8"),
    pytest.param(Bad(edit(PATCH, "  test_patch_file: test.patch", "  test_patch_file: test.patch\n"
                                                                 "  image: evalkit/absent-image:1"),
                     PATCH, "absent-image", "neither present nor buildable"), id="patch-image-missing"),
    pytest.param(Bad(both(write("cases/patch/slug-lowercase/docker/README", "no Dockerfile here\n"),
                          edit(PATCH, "  test_patch_file: test.patch", "  test_patch_file: test.patch\n"
                                                                       "  dockerfile_dir: docker")),
                     PATCH, "dockerfile_dir", "no Dockerfile"), id="patch-dockerfile-dir-without-dockerfile"),
    pytest.param(Bad(edit(PATCH, "  test_patch_file: test.patch", "  test_patch_file: test.patch\n  timeout_s: 0"),
                     PATCH, "timeout_s", "greater than 0"), id="patch-timeout-zero"),
    pytest.param(Bad(edit(PATCH, "  patch_file: gold.patch\n", ""), PATCH, "reference:", "patch_file: required key"),
                 id="patch-without-gold-patch"),
    pytest.param(Bad(repo_at_unknown_commit, PATCH, "base_commit", "cannot check out"), id="patch-base-commit-unknown"),
    pytest.param(Bad(edit(PATCH, "  test_patch_file: test.patch", "  test_patch_file: test.patch\n"
                                                                 "  junit_paths: report.xml"),
                     PATCH, "junit_paths", "valid list"), id="patch-junit-paths-not-a-list"),
    # ---- agentic case
    pytest.param(Bad(edit(AGENTIC, '"pattern": "\\\\bgetdefaultlocale\\\\("', '"pattern": "getdefaultlocale("'),
                     AGENTIC, "getdefaultlocale(", "does not compile"), id="agentic-matcher-regex-does-not-compile"),
    pytest.param(Bad(edit(AGENTIC, '{"type": "import", "pattern": "distutils"}', '{"type": "glob", "pattern": "distutils"}'),
                     AGENTIC, '"glob"', "'regex' or 'import'"), id="agentic-matcher-unknown-type"),
    pytest.param(Bad(edit(AGENTIC, "  expected_tasks:\n", "  expected_tasks: []\n  old_tasks:\n"), AGENTIC,
                     "expected_tasks", "at least 1 item"), id="agentic-no-expected-tasks"),
    pytest.param(Bad(edit("cases/agentic/catalog/gold.patch", "-    lang, _encoding = locale.getdefaultlocale()",
                          "-    lang, encoding = locale.getdefaultlocale()"), AGENTIC, "patch_file",
                     "gold patch does not apply"), id="agentic-gold-does-not-apply"),
    pytest.param(Bad(edit(AGENTIC, "  source_dir: source", "  source_dir: ../../../outside"), AGENTIC, "source_dir",
                     "outside the suite folder"), id="agentic-source-dir-escapes"),
    # ---- predictions JSONL of a recorded system
    pytest.param(Bad(append("preds.jsonl", '{"instance_id": "x",\n'), "preds.jsonl", 2, "malformed JSON"),
                 id="predictions-malformed-line"),
    pytest.param(Bad(append("preds.jsonl", json.dumps({"model_patch": ""}) + "\n"), "preds.jsonl", 2, "instance_id missing"),
                 id="predictions-without-instance-id"),
    pytest.param(Bad(append("preds.jsonl", preds_row(instance_id="b", model_patch=7) + "\n"), "preds.jsonl", 2,
                     "model_patch must be a string"), id="predictions-patch-a-number"),
    pytest.param(Bad(append("preds.jsonl", "[1, 2]\n"), "preds.jsonl", 2, "expected a JSON object"),
                 id="predictions-row-not-an-object"),
    pytest.param(Bad(write("preds.jsonl", (preds_row() + "\n").encode() + b'{"instance_id": "caf\xe9"}\n'),
                     "preds.jsonl", 2, "not UTF-8"), id="predictions-not-utf8"),
    # ---- recorded outputs folder <suite>/<case>.json
    pytest.param(Bad(write("recorded/migration/jpa-entity.json", '{\n "text": "a",\n "files": \n}\n'),
                     "recorded/migration/jpa-entity.json", 4, "malformed JSON"), id="recorded-output-malformed"),
    pytest.param(Bad(write("recorded/migration/jpa-entity.json", b'{\n "text": "caf\xe9"\n}\n'),
                     "recorded/migration/jpa-entity.json", 2, "not UTF-8"), id="recorded-output-not-utf8"),
    pytest.param(Bad(write("recorded/migration/jpa-entity.json", '{\n "text": "a",\n "files": ["A.java"]\n}\n'),
                     "recorded/migration/jpa-entity.json", 3, "valid dictionary"), id="recorded-output-files-a-list"),
    pytest.param(Bad(write("recorded/migration/jpa-entity.json", '[\n "just a list"\n]\n'),
                     "recorded/migration/jpa-entity.json", 1, "expected a JSON object"), id="recorded-output-not-an-object"),
    pytest.param(Bad(write("recorded/migration/cdi-inject.json", '{\n "text": "a",\n "status": "exploded"\n}\n'),
                     "recorded/migration/cdi-inject.json", 3, "status"), id="recorded-output-unknown-status"),
    # ---- Konveyor analyzer report (`evalkit import konveyor`)
    pytest.param(Bad(write("output.yaml", KONVEYOR_GOOD.replace("        lineNumber: 5", "        lineNumber: 5: 6")),
                     "output.yaml", "lineNumber", "malformed YAML", command="konveyor"), id="konveyor-malformed-yaml"),
    pytest.param(Bad(write("output.yaml", KONVEYOR_GOOD.replace("      incidents:\n", "      incidents: many\n      x:\n")),
                     "output.yaml", "incidents: many", "incidents: expected a list", command="konveyor"),
                 id="konveyor-incidents-not-a-list"),
    pytest.param(Bad(write("output.yaml", "- just a name\n" + KONVEYOR_GOOD), "output.yaml", 1,
                     "ruleset 1: expected a list of rulesets", command="konveyor"), id="konveyor-ruleset-not-a-mapping"),
    pytest.param(Bad(write("output.yaml", KONVEYOR_GOOD.replace("    javax-to-jakarta-import-00001:\n",
                                                                "    other-rule: 3\n    javax-to-jakarta-import-00001:\n")),
                     "output.yaml", "other-rule", "expected a mapping with description and incidents", command="konveyor"),
                 id="konveyor-violation-not-a-mapping"),
    pytest.param(Bad(write("output.yaml", KONVEYOR_GOOD.encode().replace(b"Replace javax", b"Replace caf\xe9")),
                     "output.yaml", "Replace caf", "not UTF-8", command="konveyor"), id="konveyor-report-not-utf8"),
    pytest.param(Bad(write("output.yaml", KONVEYOR_GOOD.replace("lineNumber: 5", "lineNumber: 5.5")),
                     "output.yaml", "lineNumber", "expected a whole number", command="konveyor"),
                 id="konveyor-line-number-fractional"),
    # ---- SWE-bench rows (`evalkit import swebench`)
    pytest.param(Bad(write("rows.jsonl", swe_rows(SWE_GOOD, [SWE_GOOD])), "rows.jsonl", 2, "expected a JSON object",
                     command="swebench"), id="swebench-row-a-list"),
    pytest.param(Bad(write("rows.jsonl", swe_rows(SWE_GOOD, {**SWE_GOOD, "instance_id": "o__r-2", "patch": 5})),
                     "rows.jsonl", 2, "patch must be a non-empty string", command="swebench"), id="swebench-patch-a-number"),
    pytest.param(Bad(write("rows.jsonl", swe_rows({**SWE_GOOD, "PASS_TO_PASS": "{\"a\": 1}"})), "rows.jsonl", 1,
                     "PASS_TO_PASS must be a list of test ids", command="swebench"), id="swebench-pass-to-pass-a-mapping"),
    pytest.param(Bad(write("rows.jsonl", swe_rows(SWE_GOOD, {**SWE_GOOD, "instance_id": "o r/1"})), "rows.jsonl", 2,
                     "cannot be a case id", command="swebench"), id="swebench-instance-id-with-slash"),
    pytest.param(Bad(write("rows.jsonl", swe_rows(SWE_GOOD, {**SWE_GOOD, "FAIL_TO_PASS": []})), "rows.jsonl", 2,
                     "FAIL_TO_PASS is empty", command="swebench"), id="swebench-fail-to-pass-empty-list"),
]


def _run_input(tmp_path: Path, bad: Bad) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **bad.env}
    env.pop("EVALKIT_RELEASE", None)
    if bad.command == "check":
        root = build(tmp_path / "p")
        bad.mutate(root)
        env["EVALKIT_CONFIG"] = str(root / CFG)
        argv = ["check"]
        base = root
    elif bad.command == "konveyor":
        bad.mutate(tmp_path)
        argv = ["import", "konveyor", str(tmp_path / "output.yaml"), "--source", str(KONVEYOR / "source"),
                "--suite-dir", str(tmp_path / "s")]
        base = tmp_path
    else:
        bad.mutate(tmp_path)
        argv = ["import", "swebench", str(tmp_path / "rows.jsonl"), "--repo", f"o/r={tmp_path}",
                "--suite-dir", str(tmp_path / "s")]
        base = tmp_path
    proc = in_process(argv, cwd=tmp_path, env=env)  # as `python -m evalkit ARGV` gives it, without the process
    proc.base = base  # type: ignore[attr-defined]
    return proc


@pytest.mark.parametrize("bad", TABLE)
def test_bad_input(tmp_path: Path, bad: Bad) -> None:
    proc = _run_input(tmp_path, bad)
    err = proc.stderr
    assert "Traceback" not in err and "Traceback" not in proc.stdout, err
    assert proc.returncode == 2, (proc.returncode, proc.stdout, err)
    line = line_in(proc.base / bad.file, bad.marker)  # type: ignore[attr-defined]
    assert f"{bad.file}:{line}:" in err, (f"expected {bad.file}:{line}:", err)
    assert bad.expect in err, (bad.expect, err)
    if bad.command != "check":
        assert not (tmp_path / "s").exists(), "nothing is written from a bad file"


def test_table_size() -> None:
    """The issue asks for at least 60 distinct inputs; ids are unique."""
    ids = [p.id for p in TABLE]
    assert len(ids) == len(set(ids)) and len(ids) >= 60, len(ids)


def test_clean_table_project_checks_ok(tmp_path: Path) -> None:
    """The unmutated project passes, so each failure above is its mutation's."""
    root = build(tmp_path / "p")
    proc = evalkit_here(root, "check", check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "ok (4 suites, 5 cases, 4 systems)" in proc.stdout


def test_docker_not_answering_is_a_warning(tmp_path: Path) -> None:
    """Images cannot be checked without a daemon: a warning naming the image's line, exit 0."""
    root = build(tmp_path / "p")
    proc = evalkit(root, "check", env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}, check=False)
    assert proc.returncode == 0, proc.stderr
    line = line_in(root / PATCH_SUITE, "image:")
    assert f"{PATCH_SUITE}:{line}: warning: Docker does not answer" in proc.stderr
    assert "image evalkit/python-pytest:bookworm was not checked" in proc.stderr and "warning(s)" in proc.stdout


def test_docker_failing_is_a_warning(tmp_path: Path) -> None:
    """A daemon that answers its ping and fails when asked for the image (HTTP 500): the machine, not the project,
    so a warning naming the image's line and the daemon's answer, exit 0, as when no daemon answers."""
    root = build(tmp_path / "p")
    with failing_daemon() as host:
        proc = evalkit(root, "check", env={"DOCKER_HOST": host}, check=False)
    assert proc.returncode == 0, proc.stderr
    line = line_in(root / PATCH_SUITE, "image:")
    assert f"{PATCH_SUITE}:{line}: warning: Docker failed when asked for the sandbox image" in proc.stderr
    assert FAILURE in proc.stderr and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- seen only at run time

RUN_TIME = {
    # case -> (what its recorded output / assertion holds, phrase the case's reason must carry)
    "jpa-entity": "recorded/migration/jpa-entity.json:2: not UTF-8 text",
    "cdi-inject": "recorded/migration/cdi-inject.json:4: malformed JSON",
    "ejb-stateless": "raiser_mod:check raised KeyError",
}


def test_run_records_each_bad_input_and_completes_the_others(tmp_path: Path) -> None:
    """A recorded output that is not UTF-8 or not JSON, and a `python` assertion whose function raises
    when called: each is that case's error with the reason; the other cases and systems complete."""
    systems = "systems:\n  - name: rec\n    adapter: recorded\n    path: recorded\n  - name: gold\n    adapter: gold\n"
    root = make_project(tmp_path / "p", cases=["jpa-entity", "cdi-inject", "ejb-stateless", "servlet-filter"],
                        systems=systems)
    cfg = root / CFG
    cfg.write_text(cfg.read_text().replace("baseline: naive", "baseline: gold"))
    rec = root / "recorded" / "migration"
    rec.mkdir(parents=True)
    write("recorded/migration/jpa-entity.json", b'{\n "text": "caf\xe9"\n}\n')(root)
    write("recorded/migration/cdi-inject.json", '{\n "text": "a",\n "files": \n}\n')(root)
    for case in ("ejb-stateless", "servlet-filter"):
        expected = next((root / "cases/migration" / case / "expected").iterdir())
        (rec / f"{case}.json").write_text(json.dumps({"text": expected.read_text()}))
    (tmp_path / "raiser_mod.py").write_text("def check(text, sample, spec):\n    return {}['missing']\n")
    with_assertion("cases/migration/ejb-stateless/case.yaml", "{type: python, value: 'raiser_mod:check'}")(root)
    proc = evalkit(root, "run", check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    report = json.loads((root / "site/r1/report.json").read_text())
    cells = {r["case_id"]: r["systems"] for r in report["cases"]}
    for case in ("jpa-entity", "cdi-inject"):
        assert cells[case]["rec"]["status"] == "error" and RUN_TIME[case] in cells[case]["rec"]["reason"], cells[case]
        assert cells[case]["gold"]["status"] == "ok"
    assert RUN_TIME["ejb-stateless"] in cells["ejb-stateless"]["gold"]["reason"], cells["ejb-stateless"]
    assert cells["servlet-filter"]["rec"]["status"] == "ok" and cells["servlet-filter"]["gold"]["status"] == "ok"


def test_relative_command_resolves_against_the_config_folder(tmp_path: Path) -> None:
    """What check accepts the run finds: `bin/sys` is the config folder's, from any working directory."""
    systems = 'systems:\n  - name: sys\n    adapter: command\n    command: ["bin/sys"]\n  - name: gold\n    adapter: gold\n'
    root = make_project(tmp_path / "p", cases=["jpa-entity"], systems=systems)
    cfg = root / CFG
    cfg.write_text(cfg.read_text().replace("baseline: naive", "baseline: gold"))
    write("bin/sys", "#!/bin/sh\necho '{\"text\": \"from bin/sys\"}'\n")(root)
    (root / "bin" / "sys").chmod(0o755)
    assert "ok (1 suites, 1 cases, 2 systems)" in evalkit_here(root, "check").stdout
    evalkit(root, "run")
    cells = json.loads((root / "site/r1/report.json").read_text())["cases"][0]["systems"]
    assert cells["sys"]["status"] == "ok", cells["sys"]


def test_the_demo_project_passes_the_deeper_checks() -> None:
    """No false alarm on the 27 demo cases: every gold and test patch applies, every regex compiles,
    every image is present (CI builds it), every command and module is found."""
    env = {**os.environ, "EVALKIT_CONFIG": str(REPO / CFG)}
    env.pop("EVALKIT_RELEASE", None)
    proc = subprocess.run([sys.executable, "-m", "evalkit", "check"], cwd=str(REPO.parent), env=env,
                          capture_output=True, text=True, timeout=300)
    warnings = [ln for ln in proc.stderr.splitlines() if "warning" in ln
                and (os.environ.get("EVALKIT_REQUIRE_DOCKER") or "Docker does not answer" not in ln)]
    assert proc.returncode == 0 and not warnings, proc.stderr
    assert "evalkit check: ok (" in proc.stdout
