"""Degenerate outputs (empty, unchanged, incomplete) on real-shaped Java and Python files, the expected
files of the demo and of the real Kai data, and the judge deciding them without a call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.artifacts import Sample
from evalkit.casemodels import AssertionSpec
from evalkit.cases import discover
from evalkit.graders.assertions import run_assertions
from evalkit.graders.degenerate import assess, elisions, empty_answer, is_unchanged
from evalkit.graders.migration_judge import SCORE_NAMES, MigrationJudgeInput, judge_many, judge_migration
from evalkit.llm.client import ModelClient
from fake_server import FakeAnthropic, Reply
from evalkit.llm.settings import JudgeSettings
from tests.fake_anthropic import fake_anthropic, judge_env  # noqa: F401 - fixtures
from helpers import REALDATA

REPO = Path(__file__).resolve().parents[2]
KAI = REALDATA / "kai_migration_cases" / "cases.json"  # real public data, outside the project
needs_kai = pytest.mark.realdata("kai_migration_cases", "cases.json")

LEGACY_JAVA = """package com.acme.orders;

import javax.ejb.Stateless;
import javax.persistence.EntityManager;
import javax.persistence.PersistenceContext;

@Stateless
public class OrderService {

    @PersistenceContext
    EntityManager em;

    public Order find(long id) {
        return em.find(Order.class, id);
    }

    public void save(Order order) {
        em.persist(order);
    }

    public String describe(String... parts) {
        return String.join(", ", parts);
    }
}
"""

MIGRATED_JAVA = LEGACY_JAVA.replace("javax.ejb.Stateless", "jakarta.enterprise.context.ApplicationScoped") \
    .replace("javax.persistence", "jakarta.persistence").replace("@Stateless", "@ApplicationScoped")

LEGACY_PY = '''"""Orders repository."""

from typing import Protocol


class Store(Protocol):
    def get(self, key: str) -> dict: ...


class Orders:
    def __init__(self, store: Store) -> None:
        self.store = store

    def find(self, order_id: str) -> dict:
        """One order."""
        row = self.store.get(order_id)
        return {"id": order_id, **row}

    def total(self, order_id: str) -> float:
        return sum(line["price"] for line in self.find(order_id)["lines"])
'''


def java_with(body_marker: str, replacement: str) -> str:
    assert body_marker in MIGRATED_JAVA
    return MIGRATED_JAVA.replace(body_marker, replacement)


# --- the classes --------------------------------------------------------------------------------

def test_a_real_migration_is_complete_and_changed() -> None:
    found = assess(MIGRATED_JAVA, LEGACY_JAVA, "java")
    assert found.decided is None and found.complete and found.unchanged is False and not found.empty
    # varargs (`String... parts`) and ... inside a string are not elisions
    assert elisions('class A { String s = "{ ... }"; void f(int... xs) { } }\n', "java") == []


@pytest.mark.parametrize("text", [None, "", "   \n\t\n"])
def test_empty_is_not_an_answer_and_not_complete(text: str | None) -> None:
    found = assess(text, LEGACY_JAVA, "java")
    assert found.empty and not found.complete and found.decided == "empty"
    files = {} if text is None else {"src/OrderService.java": text}
    assert empty_answer(Sample(files=files), "src/OrderService.java")
    assert not empty_answer(Sample(files={"src/OrderService.java": MIGRATED_JAVA}), "src/OrderService.java")
    # answers without files: a patch or a text is an answer, nothing at all is not
    assert empty_answer(Sample(patch="  "), None) and not empty_answer(Sample(patch="--- a\n+++ b\n"), None)
    # deleting the main file is an answer (a case whose file is deleted in the target)
    assert not empty_answer(Sample(deleted_files=["src/OrderService.java"]), "src/OrderService.java")


def test_unchanged_ignores_line_endings_and_trailing_whitespace() -> None:
    crlf = "\r\n".join(line + "  " for line in LEGACY_JAVA.split("\n")) + "\r\n\r\n"
    assert is_unchanged(crlf, LEGACY_JAVA)
    found = assess(crlf, LEGACY_JAVA, "java")
    assert found.unchanged and found.decided == "unchanged"
    # one changed character is a change
    assert not is_unchanged(LEGACY_JAVA.replace("em.persist", "em.merge"), LEGACY_JAVA)
    # no legacy file (generation suites): unchanged does not apply
    assert assess(MIGRATED_JAVA, None, "java").unchanged is None


@pytest.mark.parametrize("placeholder", [
    "    // ... rest of the file remains unchanged ...",
    "    // ... rest of the code remains the same ...",
    "    // Other methods remain unchanged",
    "    // ... existing code ...",
    "    /* ... */",
    "    // getters and setters omitted for brevity",
    "    // ...",
])
def test_java_placeholder_comments_are_incomplete(placeholder: str) -> None:
    text = java_with("""    public Order find(long id) {
        return em.find(Order.class, id);
    }

    public void save(Order order) {
        em.persist(order);
    }
""", placeholder + "\n")
    found = assess(text, LEGACY_JAVA, "java")
    assert not found.complete and found.decided == "incomplete", found
    assert any("placeholder comment" in e for e in found.elisions)


def test_java_comments_that_only_mention_words_are_complete() -> None:
    text = java_with("    @PersistenceContext\n",
                     "    // @Inject remains the same\n    // the rest of the request is validated by the caller\n"
                     "    @PersistenceContext\n")
    assert assess(text, LEGACY_JAVA, "java").complete


@pytest.mark.parametrize("elided,expected", [
    ("""    public Order find(long id) { ... }\n""", "'...' in place of code"),
    ("""    public Order find(long id) {\n        ...\n    }\n""", "'...' in place of code"),
    ("""    public Order find(long id) {\n        return em.find(...);\n    }\n""", "'...' in place of code"),
])
def test_java_dots_bodies_are_incomplete(elided: str, expected: str) -> None:
    text = java_with("""    public Order find(long id) {
        return em.find(Order.class, id);
    }
""", elided)
    found = assess(text, LEGACY_JAVA, "java")
    assert not found.complete and any(expected in e for e in found.elisions), found.elisions


def test_a_java_file_cut_off_in_a_method_is_incomplete() -> None:
    cut = MIGRATED_JAVA[: MIGRATED_JAVA.index("em.persist(order);")]
    found = assess(cut, LEGACY_JAVA, "java")
    assert not found.complete
    assert found.elisions[-1] == "end of file: 2 unclosed braces (cut off)"


def test_python_placeholders_cut_off_files_and_emptied_functions() -> None:
    complete = LEGACY_PY.replace('return {"id": order_id, **row}', 'return {"id": order_id, **(row or {})}')
    assert assess(complete, LEGACY_PY, "python").decided is None
    # a Protocol's `...` stub that the legacy file has too is not an elision
    assert assess(LEGACY_PY, None, "python").complete
    placeholder = complete.replace('''    def total(self, order_id: str) -> float:
        return sum(line["price"] for line in self.find(order_id)["lines"])
''', "    # ... existing code ...\n")
    assert "placeholder comment" in assess(placeholder, LEGACY_PY, "python").elisions[0]
    emptied = complete.replace('return sum(line["price"] for line in self.find(order_id)["lines"])', "...")
    found = assess(emptied, LEGACY_PY, "python")
    assert found.elisions == ["line 19: Orders.total() reduced to ... (the legacy file has its body)"]
    cut = complete[: complete.index('for line in')]
    assert "cut off" in assess(cut, LEGACY_PY, "python").elisions[-1]
    open_block = complete + "\n    def refund(self, order_id: str) -> None:\n"
    assert "has no body" in assess(open_block, LEGACY_PY, "python").elisions[-1]
    # a docstring example with "# ..." is text, not a comment
    docstring = 'def f():\n    """Example:\n\n        # ...\n    """\n    return 1\n'
    assert assess(docstring, None, "python").complete


# --- assertions about a missing file fail, negative ones included ------------------------------

def test_assertions_about_a_missing_or_empty_file_fail() -> None:
    specs = [AssertionSpec(type="not_contains", value="javax."), AssertionSpec(type="not_regex", value=r"@Stateless"),
             AssertionSpec(type="contains", value="jakarta"),
             AssertionSpec(type="not_contains", value="javax.", file="src/Other.java")]
    for sample in (Sample(), Sample(files={"src/OrderService.java": "  \n"}),
                   Sample(files={"src/Wrong.java": MIGRATED_JAVA})):
        results, score = run_assertions(specs, sample, "java", "src/OrderService.java")
        assert score == 0.0 and not any(r.passed for r in results)
        assert all("no output to check" in r.detail for r in results)
    # a file the answer deletes is gone: nothing forbidden is in it, nothing required either
    results, _ = run_assertions(specs[:3], Sample(deleted_files=["src/OrderService.java"]), "java", "src/OrderService.java")
    assert [r.passed for r in results] == [True, True, False]
    good = Sample(files={"src/OrderService.java": MIGRATED_JAVA, "src/Other.java": "class Other {}\n"})
    results, score = run_assertions(specs, good, "java", "src/OrderService.java")
    assert score == 1.0, [r.detail for r in results]


# --- the expected files of the demo and of the real Kai data ----------------------------------

def test_every_demo_expected_file_is_complete_and_changed() -> None:
    project = discover(REPO / "cases")
    seen = 0
    for case in project.cases:
        for dotted, path in case.refs.items():
            suffix = Path(path).suffix
            language = {".java": "java", ".py": "python", ".ts": "typescript"}.get(suffix)
            if not dotted.startswith("reference.") or language is None or not Path(path).is_file():
                continue
            legacy = case.read("inputs.legacy_file") if case.kind == "migration" else None
            found = assess(Path(path).read_text(encoding="utf-8"), legacy, language)
            assert found.complete and not found.empty, (case.key, dotted, found.elisions)
            assert found.unchanged in (None, False), (case.key, dotted)
            seen += 1
    # every demo source file an expected patch applies to is complete too
    for path in (REPO / "cases").rglob("*.py"):
        assert assess(path.read_text(encoding="utf-8"), None, "python").complete, path
    assert seen >= 12


def kai_cases() -> list[dict]:
    return json.loads(KAI.read_text(encoding="utf-8"))


@needs_kai
def test_every_real_kai_expected_file_is_complete_and_changed_unless_really_unchanged() -> None:
    cases = kai_cases()
    assert len(cases) == 39
    for case in cases:
        if case["expected_missing"]:
            continue
        found = assess(case["expected_code"], case["legacy_code"], "java")
        assert found.complete and not found.empty, (case["case_id"], found.elisions)
        # unchanged only where the target branch really kept the file (same non-blank lines)
        same = [ln.rstrip() for ln in case["expected_code"].splitlines() if ln.strip()] == \
               [ln.rstrip() for ln in case["legacy_code"].splitlines() if ln.strip()]
        assert found.unchanged == same, case["case_id"]
        assert case["legacy_code"] != "" and assess(case["legacy_code"], None, "java").complete


@needs_kai
def test_real_kai_outputs_unchanged_and_incomplete_per_model() -> None:
    unchanged: dict[str, int] = {}
    incomplete: dict[str, list[str]] = {}
    for case in kai_cases():
        for cand in case.get("generated_candidates") or []:
            found = assess(cand["generated_code"], case["legacy_code"], "java")
            branch = cand["branch"]
            unchanged[branch] = unchanged.get(branch, 0) + bool(found.unchanged)
            if found.decided == "incomplete":
                incomplete.setdefault(branch, []).append(case["file_path"].rsplit("/", 1)[1])
            # byte-identical to the legacy file is always unchanged
            if cand["generated_code"] == case["legacy_code"]:
                assert found.unchanged
    assert len(unchanged) == 8
    assert unchanged["RHOAI-granite-30-8b-instruct"] == 22  # changed nothing in any of its 22 files
    assert unchanged["granite20b_javaent_may08"] >= 8
    assert sorted(incomplete["RHOAI-meta-llama-3-70b-instruct"]) == ["CartEndpoint.java", "Order.java"]
    assert incomplete["gpt35_May08_2024"] == ["InventoryNotificationMDB.java"]
    assert set(incomplete) == {"RHOAI-meta-llama-3-70b-instruct", "gpt35_May08_2024"}


# --- the judge decides them without a model -----------------------------------------------------

def judge_item(generated: str, n: int = 0) -> MigrationJudgeInput:
    return MigrationJudgeInput(item_id=f"s/case-{n}/OrderService.java", source_technology="Java EE",
                               target_technology="Quarkus", language="java", legacy_code=LEGACY_JAVA,
                               generated_code=generated)


def test_the_judge_is_never_called_for_degenerate_outputs(fake_anthropic: FakeAnthropic, judge_env: str,  # noqa: F811
                                                          tmp_path: Path) -> None:
    good = ('{"semantic_equivalence_score": 5, "rule_adherence_score": 5, "faithfulness_score": 5, '
            '"code_quality_score": 5, "is_compilable": true}')
    fake_anthropic.responder = lambda body: Reply(text="fine\n```json\n" + good + "\n```")
    settings = JudgeSettings(base_url=fake_anthropic.base_url, timeout_s=5, max_retries=0, batch_poll_s=1)
    client = ModelClient(settings, tmp_path / "cache", sleep=lambda s: None)
    elided = java_with("""    public void save(Order order) {
        em.persist(order);
    }
""", "    // ... rest of the file remains unchanged ...\n")
    cases = {"empty": "", "unchanged": LEGACY_JAVA.replace("\n", "\r\n"), "incomplete": elided}
    for decided, text in cases.items():
        for with_client in (client, None):
            outcome = judge_migration(judge_item(text), with_client, settings)
            assert outcome.status == "parser" and outcome.decided == decided
            assert outcome.scores == {name: 0.0 for name in SCORE_NAMES} and outcome.is_compilable is False
            assert outcome.error.startswith("decided without a model") and outcome.cost_usd == 0
    assert fake_anthropic.message_calls() == 0
    # in batch mode too: only the real migration goes out
    outcomes = judge_many([judge_item(t, i) for i, t in enumerate([*cases.values(), MIGRATED_JAVA])], client,
                          settings.model_copy(update={"mode": "batch"}))
    assert [o.status for o in outcomes] == ["parser", "parser", "parser", "judged"]
    assert fake_anthropic.message_calls() == 1


def _scan_reference(text: str) -> str:
    """The character-by-character scanner strip_comments_and_literals replaced (kept as the oracle)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            out.append("\n" * text[i: n if j < 0 else j + 2].count("\n"))
            i = n if j < 0 else j + 2
        elif text.startswith('"""', i):
            j = text.find('"""', i + 3)
            out.append('""' + "\n" * text[i: n if j < 0 else j + 3].count("\n"))
            i = n if j < 0 else j + 3
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1 if j < n and text[j] == c else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def test_comment_and_literal_blanking_matches_the_reference_scanner() -> None:
    import random

    from evalkit.graders.degenerate import strip_comments_and_literals

    rng = random.Random(11)
    pieces = ["/", "*", '"', "'", "\\", "\n", "x", " ", "{", "}", '"""', "//", "/*", "*/"]
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 24)))
        assert strip_comments_and_literals(text) == _scan_reference(text), repr(text)
    java = 'class A { /* a\n b */ String s = "x // y"; char c = \'{\'; // }\n}\n'
    assert strip_comments_and_literals(java) == 'class A { \n String s = ""; char c = \'\'; \n}\n'
