"""Case health: partial answers derived from a case's reference must fail the case (ablations), and the tree
handed to a system must not give the reference away (leaks). Patch cases run in real Docker."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

from evalkit.diffsplit import partial_patches, split_diff
from evalkit.stages.health import post_images, tree_leaks
from helpers import evalkit, evalkit_here, executed, without_plugin_autoload

FILLER = "".join(f"\n\ndef helper_{i}():\n    return {i}\n" for i in range(4))
LIB = f"def add(a, b):\n    return a - b\n{FILLER}\n\ndef mul(a, b):\n    return a + b\n"
FIXED = f"def add(a, b):\n    return a + b\n{FILLER}\n\ndef mul(a, b):\n    return a * b\n"
OLD_TESTS = "from calc import helper_1\n\n\ndef test_helper():\n    assert helper_1() == 1\n"


def udiff(path: str, old: str, new: str, tmp: Path) -> str:
    """A real unified diff made by git (two hunks when the changes are far apart)."""
    (tmp / "a").write_text(old)
    (tmp / "b").write_text(new)
    out = subprocess.run(["git", "diff", "--no-index", "--no-prefix", "a", "b"], cwd=tmp, capture_output=True,
                         text=True).stdout
    body = out[out.index("@@"):]
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n{body}"


def new_file(path: str, text: str) -> str:
    lines = text.splitlines(keepends=True)
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n" + "".join("+" + x for x in lines))


def test_partial_patches_of_two_hunks_one_block_and_two_files(tmp_path: Path) -> None:
    gold = udiff("calc/__init__.py", LIB, FIXED, tmp_path)
    assert [len(f.hunks) for f in split_diff(gold)] == [2]
    parts = partial_patches(gold, 8)
    assert [p.name for p in parts] == ["without-hunk-1", "without-hunk-2"]
    assert "return a * b" in parts[0].patch and "return a - b" not in parts[0].patch
    assert "calc/__init__.py, line" in parts[1].description
    assert partial_patches(gold, 1) == parts[:1] and partial_patches(gold, 0) == []
    # a one-line fix: nothing to leave out but the whole (the empty answer validation runs)
    assert partial_patches(udiff("x.py", "a = 1\n", "a = 2\n", tmp_path), 8) == []
    # two files: each hunk left out, then each file alone
    two = gold + new_file("calc/extra.py", "X = 1\n")
    assert [p.name for p in partial_patches(two, 8)] == ["without-hunk-1", "without-hunk-2", "without-hunk-3",
                                                          "only-file-1", "only-file-2"]
    # a removed line reading like a file header stays in its hunk
    tricky = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,1 @@\n--- x\n keep\n"
    (f,) = split_diff(tricky)
    assert f.path == "f" and f.hunks == [["@@ -1,2 +1,1 @@\n", "--- x\n", " keep\n"]]


def write_case(suite: Path, cid: str, gold: str, test_patch: str, f2p: list[str]) -> None:
    d = suite / cid
    d.mkdir(parents=True)
    (d / "gold.patch").write_text(gold)
    (d / "test.patch").write_text(test_patch)
    (d / "case.yaml").write_text(textwrap.dedent(f"""\
        id: {cid}
        inputs:
          problem_statement: add subtracts and mul adds
          test_patch_file: test.patch
        reference:
          patch_file: gold.patch
          fail_to_pass: {json.dumps(f2p)}
          pass_to_pass: ["tests/test_old.py::test_helper"]
        """))


def calc_project(root: Path, ablations: int | None = None) -> Path:
    src = root / "cases" / "calc" / "_src"
    (src / "calc").mkdir(parents=True)
    (src / "tests").mkdir()
    (src / "calc" / "__init__.py").write_text(LIB)
    (src / "tests" / "test_old.py").write_text(OLD_TESTS)
    suite = root / "cases" / "calc"
    (suite / "suite.yaml").write_text(textwrap.dedent("""\
        kind: patch
        language: python
        defaults:
          source_dir: ../_src
          image: evalkit/python-pytest:bookworm
          test_command: python3 -m pytest -rA -p no:cacheprovider tests
          timeout_s: 60
        """))
    scratch = root / "scratch"
    scratch.mkdir()
    gold = udiff("calc/__init__.py", LIB, FIXED, scratch)
    add_test = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    both = add_test.replace("import add", "import add, mul") + "\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
    write_case(suite, "weak", gold, new_file("tests/test_new.py", add_test), ["tests/test_new.py::test_add"])
    write_case(suite, "strong", gold, new_file("tests/test_new.py", both),
               ["tests/test_new.py::test_add", "tests/test_new.py::test_mul"])
    extra = f"validation: {{ablations: {ablations}}}\n" if ablations is not None else ""
    (root / "evalkit.yaml").write_text("release: r1\nsystems:\n  - {name: gold, adapter: gold}\n"
                                       f"sandbox: {{backend: docker}}\n{extra}")
    return root


def health(root: Path, suite: str, cid: str) -> dict:
    return json.loads((root / ".evalkit" / "health" / suite / f"{cid}.json").read_text())


def test_weak_and_strong_patch_cases_in_docker(tmp_path: Path) -> None:
    root = calc_project(tmp_path / "p")
    planned = json.loads(evalkit_here(root, "estimate").stdout.strip().splitlines()[-1])
    assert (planned["ablation_containers"], planned["ablation_containers_pending"]) == (4, 4)
    proc = evalkit(root, "run", "health")
    assert {"health:calc/weak", "health:calc/strong"} <= executed(proc)
    weak, strong = health(root, "calc", "weak"), health(root, "calc", "strong")
    assert weak["strength"] == "weak" and strong["strength"] == "strong", (weak, strong)
    outcomes = {a["name"]: a["outcome"] for a in weak["ablations"]}
    assert outcomes == {"without-hunk-1": "noticed", "without-hunk-2": "passed"}
    (passed,) = [a for a in weak["ablations"] if a["outcome"] == "passed"]
    assert "hunk 2" in passed["description"] and "line 19" in passed["description"]  # mul's hunk
    assert "without its hunk 2" in weak["reason"]
    assert all(a["container"] for a in weak["ablations"] + strong["ablations"])
    assert {a["outcome"] for a in strong["ablations"]} == {"noticed"}
    assert "test_mul" in next(a["detail"] for a in strong["ablations"] if a["name"] == "without-hunk-2")
    assert weak["leaks"] == [] and strong["leaks"] == []
    assert json.loads(evalkit_here(root, "estimate").stdout.strip().splitlines()[-1])["ablation_containers_pending"] == 0
    # the same inputs: nothing reruns; the cap at 0 turns ablations off (a new verdict, no container)
    assert not {t for t in executed(evalkit(root, "run", "health")) if t.startswith("health:")}
    text = (root / "evalkit.yaml").read_text()
    (root / "evalkit.yaml").write_text(text + "validation: {ablations: 0}\n")
    evalkit(root, "run", "health")
    off = health(root, "calc", "weak")
    assert off["strength"] == "skipped" and off["ablations"] == [] and "validation.ablations is 0" in off["reason"]


def test_a_tree_with_git_and_a_fixed_copy_leaks(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "calc").mkdir(parents=True)
    (tree / "calc" / "__init__.py").write_text(LIB)
    gold = udiff("calc/__init__.py", LIB, FIXED, tmp_path)
    after = post_images(tree, gold)
    assert after == {"calc/__init__.py": FIXED.encode()}
    assert tree_leaks(tree, after) == []
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)  # .git left in
    (tree / "backup").mkdir()
    (tree / "backup" / "calc_fixed.py").write_text(FIXED)  # the fix itself, under another name
    found = tree_leaks(tree, after)
    assert len(found) == 2
    assert found[0].startswith(".git: git metadata")
    assert found[1].startswith("backup/calc_fixed.py: holds the reference's calc/__init__.py")


def test_a_case_whose_tree_has_git_reports_the_leak(tmp_path: Path) -> None:
    root = calc_project(tmp_path / "p")
    subprocess.run(["git", "init", "-q"], cwd=root / "cases" / "calc" / "_src", check=True)
    (root / "evalkit.yaml").write_text((root / "evalkit.yaml").read_text().replace("docker", "local")
                                       + "validation: {ablations: 0}\n")
    (root / "cases" / "calc" / "suite.yaml").write_text(
        (root / "cases" / "calc" / "suite.yaml").read_text() + "trusted: true\n")
    without_plugin_autoload(root / "cases" / "calc" / "suite.yaml")  # the host pytest's plug-ins are not the point
    evalkit(root, "run", "health")
    leaks = health(root, "calc", "weak")["leaks"]
    assert leaks and leaks[0].startswith(".git: git metadata")




LEGACY_JAVA = """package com.acme;

import javax.inject.Inject;

public class Prices {

    @Inject
    Rates rates;

    public double net(double gross) {
        return gross / rates.vat();
    }
}
"""
EXPECTED_JAVA = LEGACY_JAVA.replace("javax.", "jakarta.").replace("    }\n}\n", """    }

    public double gross(double net) {
        return net * rates.vat();
    }

    public double vatOf(double gross) {
        return gross - net(gross);
    }

    public double rounded(double amount) {
        return Math.round(amount * 100) / 100.0;
    }
}
""")


def test_a_migration_reference_that_passes_its_checks_with_half_its_methods_gone(tmp_path: Path) -> None:
    root = tmp_path / "p"
    suite = root / "cases" / "mig"
    (suite / "thin" / "legacy").mkdir(parents=True)
    (suite / "thin" / "expected").mkdir()
    (suite / "suite.yaml").write_text("kind: migration\nlanguage: java\n")
    (suite / "thin" / "legacy" / "Prices.java").write_text(LEGACY_JAVA)
    (suite / "thin" / "expected" / "Prices.java").write_text(EXPECTED_JAVA)
    (suite / "thin" / "case.yaml").write_text(textwrap.dedent("""\
        id: thin
        inputs:
          file_path: src/main/java/com/acme/Prices.java
          legacy_file: legacy/Prices.java
          incidents:
            - {rule_id: javax-to-jakarta-import-00001, message: "Replace javax.inject with jakarta.inject", line: 3}
        reference:
          expected_file: expected/Prices.java
        assertions:
          - {type: not_contains, value: "javax."}
        """))
    demo = Path(__file__).resolve().parents[1] / "cases" / "migration" / "cdi-inject"
    shutil.copytree(demo, suite / "cdi-inject")
    (root / "evalkit.yaml").write_text("release: r1\nsystems:\n  - {name: gold, adapter: gold}\n")
    evalkit(root, "run", "health")
    thin, strong = health(root, "mig", "thin"), health(root, "mig", "cdi-inject")
    assert thin["checked_by"] == "reference" and thin["strength"] == "weak", thin
    half = next(a for a in thin["ablations"] if a["name"] == "half-methods")
    assert half["outcome"] == "passed" and "2 of its 4 methods" in half["description"]
    assert "Prices.vatOf" in half["description"] and "Prices.rounded" in half["description"]
    # the legacy method the migration must keep: leaving it out is noticed
    net = next(a for a in thin["ablations"] if "Prices.net" in a["description"])
    assert net["outcome"] == "noticed" and "keeps no method Prices.net" in net["detail"]
    assert strong["strength"] == "strong" and not any(a["container"] for a in strong["ablations"])


def test_duplicates_across_suites_badges_and_the_healthy_line(tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parents[1] / "cases" / "migration"
    root = tmp_path / "p"
    for suite in ("a", "b"):
        (root / "cases" / suite).mkdir(parents=True)
        shutil.copy(demo / "suite.yaml", root / "cases" / suite / "suite.yaml")
    shutil.copytree(demo / "cdi-inject", root / "cases" / "a" / "cdi-inject")
    shutil.copytree(demo / "jpa-entity", root / "cases" / "a" / "jpa-entity")
    copy = root / "cases" / "b" / "cdi-again"
    shutil.copytree(demo / "cdi-inject", copy)  # the same legacy file under another id, in another suite
    (copy / "case.yaml").write_text((copy / "case.yaml").read_text().replace("id: cdi-inject", "id: cdi-again"))
    (root / "evalkit.yaml").write_text(
        "release: r1\nbaseline: naive\nsystems:\n  - {name: naive, adapter: command, command: "
        '["{python}", "-m", "evalkit.demo_systems.naive_rewriter"]}\n  - {name: gold, adapter: gold}\n')
    evalkit(root, "run")
    report = json.loads((root / "site" / "r1" / "report.json").read_text())
    rows = {f"{c['suite']}/{c['case_id']}": c["health"] for c in report["cases"]}
    assert rows["a/cdi-inject"]["healthy"] and "duplicate" not in rows["a/cdi-inject"]["badges"]
    again = rows["b/cdi-again"]
    assert not again["healthy"] and "duplicate" in again["badges"] and "gold passes" in again["badges"]
    assert "duplicate of a/cdi-inject (the same legacy file)" in again["detail"]
    suites = {s["name"]: s["health"] for s in report["suites"]}
    assert suites["a"]["strong"] == 2 and suites["a"]["healthy"] == 2 and suites["b"]["duplicates"] == 1
    assert suites["b"]["healthy"] == 0 and suites["b"]["sensitivity"]["gold"] == {
        "all": 1.0, "healthy": None, "n_all": 1, "n_healthy": 0}
    page = (root / "site" / "r1" / "suites" / "b.html").read_text()
    assert 'id="case-health"' in page and "duplicate of a/cdi-inject" in page
    release = (root / "site" / "r1" / "index.html").read_text()
    assert "100% (all) / — (healthy cases)" in release and "(healthy cases)" in release
    # health of a kind that runs nothing in the sandbox does not depend on the sandbox settings
    (root / "evalkit.yaml").write_text((root / "evalkit.yaml").read_text() + "sandbox: {memory_mb: 2048}\n")
    assert not {t for t in executed(evalkit(root, "run")) if t.startswith("health:")}


def test_agentic_reference_minus_one_task_is_noticed_by_task_matching() -> None:
    from evalkit.kinds import kind
    from evalkit.project import load

    loaded = load(str(Path(__file__).resolve().parents[1] / "evalkit.yaml"))
    case = loaded.project.case("agentic/catalog")
    agentic = kind("agentic")
    ablations = agentic.ablations(case)
    assert [a.name for a in ablations] == ["without-task-1", "without-task-2", "without-task-3"]
    assert all(len(a.sample.tasks) == 2 for a in ablations)
    runs = [agentic.try_ablation(loaded.config, case, a) for a in ablations]
    assert {r.outcome for r in runs} == {"noticed"} and runs[0].detail == "discovery recall 0.67"
    # a discovered task said twice does not stand for the missing one (matching pairs tasks one to one)
    twice = ablations[0].model_copy(update={"sample": ablations[0].sample.model_copy(
        update={"tasks": [*ablations[0].sample.tasks, ablations[0].sample.tasks[0]]})})
    assert agentic.try_ablation(loaded.config, case, twice).outcome == "noticed"


LOSE_ABLATION = '''
import os
import threading

if os.environ.get("EVALKIT_TEST_LOSE_ABLATION"):
    import evalkit.stages.execute as execute

    real = execute.run_patch
    lock = threading.Lock()
    lost = []

    def run_patch(cfg, case, patch, trusted=False):
        ablation = case.id == "strong" and patch and patch != case.read("reference.patch_file")
        with lock:
            lose = ablation and not lost
            lost.append(1) if lose else None
        if lose:
            return {"status": "infra_error", "reason": "injected: the Docker daemon went away", "isolation": "docker"}
        return real(cfg, case, patch, trusted)

    execute.run_patch = run_patch
'''


def test_an_ablation_lost_to_infra_leaves_the_strength_unknown_until_redone(tmp_path: Path) -> None:
    """Was: one of the strong case's two ablations lost to a sandbox failure, the other noticed, and the case
    was 'strong' for good (cached; the lost one might have passed). Now its strength is infra_error: the case
    is unchecked, not healthy, the run exits 5, and the next run checks it again."""
    import os

    root = calc_project(tmp_path / "p")
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(LOSE_ABLATION)
    env = {"PYTHONPATH": os.pathsep.join([str(inject), os.environ.get("PYTHONPATH", "")]),
           "EVALKIT_TEST_LOSE_ABLATION": "1"}
    proc = evalkit(root, "run", env=env, check=False)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    strong = health(root, "calc", "strong")
    assert strong["strength"] == "infra_error", strong
    assert "1 of 2 ablation(s) could not be checked (an infrastructure error)" in strong["reason"], strong
    assert [a["infra"] for a in strong["ablations"]].count(True) == 1, strong["ablations"]
    assert health(root, "calc", "weak")["strength"] == "weak"  # the other case is untouched
    report = json.loads((root / "site/r1/report.json").read_text(encoding="utf-8"))
    row = next(r for r in report["cases"] if r["case_id"] == "strong")
    assert "unchecked" in row["health"]["badges"] and row["health"]["healthy"] is False, row["health"]
    planned = json.loads(evalkit_here(root, "estimate").stdout.strip().splitlines()[-1])
    assert planned["ablation_containers_pending"] == 2, planned  # the strong case's, checked again next run
    again = evalkit(root, "run", check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    healed = health(root, "calc", "strong")
    assert healed["strength"] == "strong" and not any(a["infra"] for a in healed["ablations"]), healed
