"""RAG hint metrics through ragas 0.4.3, with a deterministic offline LLM (no network)."""

from __future__ import annotations

import json

import pytest


from evalkit.metrics.ragas_metrics import (EvalkitRagasLLM, HashedEmbedding, llm_metrics, non_llm_metrics,
                                           to_five)

QUESTION = "Replace the javax.persistence import with jakarta.persistence in Order.java"
CONTEXTS = ["Quarkus 3 uses Jakarta EE 10: javax.persistence moved to jakarta.persistence.",
            "The release notes of Hibernate ORM 6."]
ANSWER = "Change import javax.persistence.Entity to import jakarta.persistence.Entity."


def fixed(prompt: str) -> tuple[str, dict[str, float]]:
    """Fixed structured answers keyed by the schema the prompt asks for."""
    if '"NLIStatementOutput"' in prompt or "'NLIStatementOutput'" in prompt:
        body = {"statements": [{"statement": "s1", "reason": "in context", "verdict": 1},
                               {"statement": "s2", "reason": "not in context", "verdict": 0}]}
    elif "StatementGeneratorOutput" in prompt:
        body = {"statements": ["s1", "s2"]}
    elif "ContextRelevanceOutput" in prompt:
        body = {"rating": 1}
    elif "AnswerRelevanceOutput" in prompt:
        body = {"question": QUESTION, "noncommittal": 0}
    else:
        raise AssertionError(f"unexpected prompt: {prompt[-300:]}")
    return "Reasoning first.\n" + json.dumps(body), {"cost_usd": 0.001, "input_tokens": 10, "output_tokens": 5}


def test_non_llm_metrics_hand_values() -> None:
    m = non_llm_metrics("abcd", "abce", CONTEXTS, [CONTEXTS[0]])
    assert m["rag_answer_similarity"] == pytest.approx(0.75)  # one substitution in four characters
    assert m["rag_context_recall"] == 1.0  # the reference context is retrieved verbatim
    assert non_llm_metrics("x", None, CONTEXTS, None) == {}
    assert non_llm_metrics("x", None, ["unrelated words"], ["jakarta persistence moved"])["rag_context_recall"] == 0.0


def test_llm_metrics_through_fixed_answers() -> None:
    llm = EvalkitRagasLLM(fixed)
    m = llm_metrics(llm, QUESTION, CONTEXTS, ANSWER)
    assert m["rag_faithfulness"] == pytest.approx(0.5)  # 1 of 2 statements supported
    assert m["rag_context_relevance"] == pytest.approx(0.5)  # both judges rate 1 of 2
    assert m["rag_answer_relevancy"] == pytest.approx(1.0)  # generated question == the question
    assert m["rag_faithfulness_5"] == pytest.approx(3.0)
    # faithfulness 2 calls, context relevance 2 judges, answer relevancy 3 (strictness)
    assert llm.calls == 7 and llm.cost_usd == pytest.approx(0.007) and llm.input_tokens == 70


def test_hashed_embedding_is_deterministic_and_normalised() -> None:
    e = HashedEmbedding()
    a, b = e.embed_text("Jakarta persistence"), e.embed_text("jakarta  PERSISTENCE")
    assert a == b and sum(v * v for v in a) == pytest.approx(1.0)
    assert to_five(0.0) == 1.0 and to_five(1.0) == 5.0 and to_five(None) is None


def test_demo_rag_suite_scores_hint_bot(tmp_path) -> None:
    import shutil

    from helpers import REPO, evalkit

    root = tmp_path / "p"
    shutil.copytree(REPO / "cases" / "rag", root / "cases" / "rag")
    shutil.copytree(REPO / "templates", root / "templates")
    (root / "evalkit.yaml").write_text(
        "release: r1\ntemplates_dir: templates\nsystems:\n  - name: hint-bot\n    adapter: command\n"
        '    command: ["{python}", "-m", "evalkit.demo_systems.hint_bot"]\n', encoding="utf-8")
    evalkit(root, "run")
    report = json.loads((root / "site/r1/report.json").read_text())
    aggs = report["systems"][0]["metrics"]
    assert aggs["rag_answer_similarity"]["n"] == 3 and 0 < aggs["rag_answer_similarity"]["value"] < 1
    assert aggs["rag_context_recall"]["n"] == 3
    scores = json.loads((root / ".evalkit/artifacts/hint-bot/rag/javax-persistence-import/scores.json").read_text())
    assert scores["metrics"]["rag_context_recall"] == 1.0
