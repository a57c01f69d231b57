"""Issue 16 item 4: solved examples looked up in a solved-incident store (Kai's index format).

On the real store and the 39 real Kai cases: which cases get an example, and that it is the best
one by the documented scoring (a brute-force oracle over the raw JSON). On a small project: the
command system's case JSON, the model system's prompt and the judge's input all carry it; a
changed store regenerates only the cases whose example changed; a broken store names its file
and line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import REALDATA, REPO, evalkit, evalkit_here, make_project

from evalkit.cases import discover
from evalkit.solved_store import file_similarity, message_similarity

DATA = REALDATA
STORE = DATA / "kai_migration_cases" / "kai_solved_incidents_index.json"
needs_data = pytest.mark.realdata("kai_migration_cases", "kai_solved_incidents_index.json")


def _same_file(a: str, b: str) -> bool:
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


@pytest.fixture(scope="module")
def kai_cases(tmp_path_factory: pytest.TempPathFactory) -> list:
    dest = tmp_path_factory.mktemp("kai-store")
    subprocess.run([sys.executable, str(REPO / "scripts" / "kai-real-project.py"), str(dest), "--data", str(DATA)],
                   check=True, capture_output=True, timeout=300)
    for suite in ("coolstore", "quickstarts"):
        p = dest / "cases" / suite / "suite.yaml"
        p.write_text(p.read_text().replace("kind: migration\n", f"kind: migration\nsolved_store: {STORE}\n"))
    return discover(dest / "cases").cases


@needs_data
def test_every_real_case_gets_the_most_similar_solved_incident_of_its_rules(kai_cases: list) -> None:
    raw = json.loads(STORE.read_text())["incidents"]
    assert len(kai_cases) == 39 and not [c.key for c in kai_cases if c.problems]
    with_example = [c for c in kai_cases if c.inputs.solved_example]
    assert len(with_example) == 39  # every real case has a rule the store solved elsewhere
    for case in with_example:
        src = case.inputs.solved_example.source
        mine = {(i.rule_id, i.message) for i in case.inputs.incidents}
        assert src["rule_id"] in {r for r, _ in mine}
        assert not _same_file(src["file"], case.inputs.file_path)  # never the case's own answer
        # oracle: every raw incident of the case's rules, scored one by one
        scores = [(file_similarity(case.inputs.file_path, r["file"]) + message_similarity(m, r["message"])) / 2
                  for r in raw for rule, m in mine
                  if r["rule_id"] == rule and not _same_file(r["file"], case.inputs.file_path)]
        assert src["score"] == pytest.approx(max(scores), abs=0.01), case.key
        text = case.inputs.solved_example.text
        assert src["file"] in text and src["rule_id"] in text
    cart = next(c for c in kai_cases if c.key == "coolstore/CartEndpoint")
    print(cart.inputs.solved_example.text)


@needs_data
def test_a_case_with_its_own_example_keeps_it(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", cases=["ejb-stateless", "jpa-entity"])
    suite = root / "cases" / "migration" / "suite.yaml"
    suite.write_text(suite.read_text().replace("kind: migration\n", f"kind: migration\nsolved_store: {STORE}\n"))
    cases = {c.id: c for c in discover(root / "cases").cases}
    assert cases["ejb-stateless"].inputs.solved_example.before_file  # written by hand: kept
    assert cases["ejb-stateless"].inputs.solved_example.text is None
    assert cases["jpa-entity"].inputs.solved_example.source["rule_id"] == "javax-to-jakarta-import-00001"


# ---- a small store on the demo cases: system, prompt, judge, regeneration, errors ----------------

def _store(entries: list[dict]) -> str:
    return json.dumps({"source": "test", "note": "", "incidents": entries}, indent=1)


def _incident(file: str, message: str, app: str = "shop", line: int = 3) -> dict:
    return {"ruleset": "eap8/eap7", "rule_id": "javax-to-jakarta-import-00001", "app": app, "file": file,
            "line_number": line, "repo": "https://example.invalid/shop.git", "initial_branch": 7.1,
            "solved_branch": "quarkus", "message": message}


ECHO = textwrap.dedent("""\
    import json, sys
    case = json.load(sys.stdin)
    with open(case["system"]["settings"]["log"], "a") as fh:
        fh.write(case["case_id"] + "\\n")
    print(json.dumps({"text": (case["inputs"].get("solved_example") or {}).get("text") or "none"}))
    """)


def _small_project(tmp_path: Path) -> Path:
    log = tmp_path / "calls.log"
    root = make_project(tmp_path / "p", cases=["jpa-entity", "cdi-inject"], systems=textwrap.dedent(f"""\
        systems:
          - name: echo
            adapter: command
            command: ["{{python}}", "echo.py"]
            settings: {{log: "{log}"}}
        """))
    cfg = root / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("baseline: naive\n", ""))
    (root / "echo.py").write_text(ECHO)
    (root / "store.json").write_text(_store([
        _incident("src/main/java/com/acme/orders/Order.java", "Replace the `javax.persistence` import statement with "
                  "`jakarta.persistence`"),  # jpa-entity's own file: never its example
        _incident("src/main/java/com/shop/orders/OrderLine.java", "Replace the `javax.persistence` import statement "
                  "with `jakarta.persistence`"),
        _incident("src/main/java/com/shop/web/Greeter.java", "Replace the `javax.inject` import statement with "
                  "`jakarta.inject`"),
    ]))
    suite = root / "cases" / "migration" / "suite.yaml"
    suite.write_text(suite.read_text().replace("kind: migration\n", "kind: migration\nsolved_store: ../../store.json\n"))
    return root


def _answer(root: Path, case: str) -> str:
    out = json.loads((root / ".evalkit" / "artifacts" / "echo" / "migration" / case / "output.json").read_text())
    return out["samples"][0]["text"]


def test_the_system_and_the_judge_see_the_example_and_a_changed_store_regenerates_only_what_changed(tmp_path: Path) -> None:
    root = _small_project(tmp_path)
    evalkit(root, "run", "-q")
    assert "OrderLine.java" in _answer(root, "jpa-entity")  # not Order.java: that is the case's own file
    # cdi-inject (OrderService.java, javax.enterprise and javax.inject): a file beside it with another
    # message (82.3) beats a file elsewhere with the very same javax.inject message (80.3)
    assert "acme/orders/Order.java" in _answer(root, "cdi-inject")
    assert "branch 7.1 -> quarkus" in _answer(root, "jpa-entity")  # Kai's numeric branch names read as text
    log = tmp_path / "calls.log"
    assert sorted(log.read_text().split()) == ["cdi-inject", "jpa-entity"]

    # the judge's input and a model system's prompt carry the same text
    from evalkit.artifacts import Sample
    from evalkit.graders.judge_dispatch import migration_input
    from evalkit.systems.anthropic_adapter import render_prompt
    from evalkit.systems.base import RunContext

    case = next(c for c in discover(root / "cases").cases if c.id == "jpa-entity")
    judged = migration_input(case, Sample(files={}), case.inputs.file_path)
    assert judged.solved_example == case.inputs.solved_example.text == _answer(root, "jpa-entity")
    system = type("S", (), {"prompt": "templates/prompts/system_migration.md.j2"})()
    prompt = render_prompt(system, case, RunContext(root=root, work=root / ".evalkit"))
    assert "Solved example of the same rule" in prompt and "OrderLine.java" in prompt

    # a better match for cdi-inject only: cdi-inject is generated again, jpa-entity comes from the cache
    store = json.loads((root / "store.json").read_text())
    store["incidents"].append(_incident("src/main/java/com/acme/orders/OrderServiceBean.java",
                                        "Replace the `javax.enterprise` import statement with `jakarta.enterprise`",
                                        app="acme"))
    (root / "store.json").write_text(json.dumps(store, indent=1))
    log.write_text("")
    evalkit(root, "run", "-q")
    assert "OrderServiceBean.java" in _answer(root, "cdi-inject")
    assert "OrderLine.java" in _answer(root, "jpa-entity")
    assert log.read_text().split() == ["cdi-inject"]


def test_a_broken_store_names_its_file_and_line(tmp_path: Path) -> None:
    root = _small_project(tmp_path)
    store = json.loads((root / "store.json").read_text())
    del store["incidents"][1]["rule_id"]
    (root / "store.json").write_text(json.dumps(store, indent=1))
    proc = evalkit_here(root, "check", check=False)
    assert proc.returncode == 2
    line = [n for n, text in enumerate((root / "store.json").read_text().splitlines(), 1) if text == "  {"][1]
    assert f"store.json:{line}: solved_store (named in " in proc.stderr
    assert "incidents.1.rule_id: Field required" in proc.stderr
    (root / "store.json").write_text('{"incidents": [')
    proc = evalkit_here(root, "check", check=False)
    assert proc.returncode == 2 and "store.json:1: solved_store" in proc.stderr and "malformed JSON" in proc.stderr
