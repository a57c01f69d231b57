"""RAG hint metrics through ragas 0.4.3, with a deterministic offline LLM (no network)."""

from __future__ import annotations

import json
import types

import pytest


def rm() -> types.ModuleType:
    """evalkit.metrics.ragas_metrics, imported when a test of this file runs: at the top of the file every xdist
    worker paid ragas' import (3.3 s of CPU) while collecting, though one worker runs these tests."""
    from evalkit.metrics import ragas_metrics

    return ragas_metrics


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
    from evalkit.metrics.rag_offline import non_llm_metrics

    m = non_llm_metrics("abcd", "abce", CONTEXTS, [CONTEXTS[0]])
    assert m["rag_answer_similarity"] == pytest.approx(0.75)  # one substitution in four characters
    assert m["rag_context_recall"] == 1.0  # the reference context is retrieved verbatim
    assert non_llm_metrics("x", None, CONTEXTS, None) == {}
    assert non_llm_metrics("x", None, ["unrelated words"], ["jakarta persistence moved"])["rag_context_recall"] == 0.0
    assert non_llm_metrics("", "abc", [], ["abc"]) == {"rag_answer_similarity": 0.0, "rag_context_recall": 0.0}


def test_non_llm_metrics_equal_ragas_own() -> None:
    """evalkit.metrics.rag_offline computes ragas' NonLLMStringSimilarity and NonLLMContextRecall without importing
    ragas: on random texts (ties at the 0.5 threshold, empty strings, unicode, no retrieved context) its values are
    ragas' own, exactly."""
    import random

    from ragas.dataset_schema import SingleTurnSample
    from ragas.metrics._context_recall import NonLLMContextRecall
    from ragas.metrics._string import NonLLMStringSimilarity

    from evalkit.metrics.rag_offline import non_llm_metrics

    rng = random.Random(20261127)
    alphabet = "ab cé\n"

    def text() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.choice((0, 1, 2, 4, 8, 20))))

    similarity, recall = NonLLMStringSimilarity(), NonLLMContextRecall()
    at_threshold = 0
    for _ in range(300):
        answer, reference = text(), text() or "x"
        retrieved = [text() for _ in range(rng.randrange(0, 4))]
        references = [text() for _ in range(rng.randrange(1, 4))]
        ours = non_llm_metrics(answer, reference, retrieved, references)
        theirs_similarity = similarity.single_turn_score(SingleTurnSample(response=answer, reference=reference))
        theirs_recall = recall.single_turn_score(
            SingleTurnSample(retrieved_contexts=retrieved or [""], reference_contexts=references))
        assert ours == {"rag_answer_similarity": theirs_similarity, "rag_context_recall": theirs_recall}, \
            (answer, reference, retrieved, references)
        at_threshold += any(similarity.single_turn_score(SingleTurnSample(response=ref, reference=r)) == 0.5
                            for ref in references for r in retrieved)
    assert at_threshold > 0  # the strict "above 0.5" was exercised


def test_llm_metrics_through_fixed_answers() -> None:
    llm = rm().EvalkitRagasLLM(fixed)
    m = rm().llm_metrics(llm, QUESTION, CONTEXTS, ANSWER)
    assert m["rag_faithfulness"] == pytest.approx(0.5)  # 1 of 2 statements supported
    assert m["rag_context_relevance"] == pytest.approx(0.5)  # both judges rate 1 of 2
    assert m["rag_answer_relevancy"] == pytest.approx(1.0)  # generated question == the question
    assert m["rag_faithfulness_5"] == pytest.approx(3.0)
    # faithfulness 2 calls, context relevance 2 judges, answer relevancy 3 (strictness)
    assert llm.calls == 7 and llm.cost_usd == pytest.approx(0.007) and llm.input_tokens == 70


def test_hashed_embedding_is_deterministic_and_normalised() -> None:
    e = rm().HashedEmbedding()
    a, b = e.embed_text("Jakarta persistence"), e.embed_text("jakarta  PERSISTENCE")
    assert a == b and sum(v * v for v in a) == pytest.approx(1.0)
    assert rm().to_five(0.0) == 1.0 and rm().to_five(1.0) == 5.0 and rm().to_five(None) is None


def test_demo_rag_suite_scores_hint_bot(tmp_path) -> None:
    import shutil

    from helpers import REPO, evalkit

    root = tmp_path / "p"
    shutil.copytree(REPO / "cases" / "rag", root / "cases" / "rag")
    shutil.copytree(REPO / "templates", root / "templates")
    (root / "evalkit.yaml").write_text(
        "release: r1\ntemplates_dir: templates\nsystems:\n  - name: hint-bot\n    adapter: command\n"
        '    command: ["{python}", "-m", "evalkit.demo_systems.hint_bot"]\n', encoding="utf-8")
    # -X importtime's report (stderr) names every module the run's process imported
    proc = evalkit(root, "run", env={"PYTHONPROFILEIMPORTTIME": "1"})
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "rapidfuzz" in imported  # the rag cases were scored in this process
    assert not {m for m in imported if m.split(".")[0] in ("ragas", "instructor", "anthropic", "langchain_core")}, \
        "scoring a rag suite without a judge imports ragas (6 s of CPU): evalkit.metrics.rag_offline is enough"
    report = json.loads((root / "site/r1/report.json").read_text())
    aggs = report["systems"][0]["metrics"]
    assert aggs["rag_answer_similarity"]["n"] == 3 and 0 < aggs["rag_answer_similarity"]["value"] < 1
    assert aggs["rag_context_recall"]["n"] == 3
    scores = json.loads((root / ".evalkit/artifacts/hint-bot/rag/javax-persistence-import/scores.json").read_text())
    assert scores["metrics"]["rag_context_recall"] == 1.0


# --- failures are per metric; the model client path ---------------------------------------------

def test_one_unusable_answer_fails_only_its_metric() -> None:
    from evalkit.metrics.ragas_metrics import judge_rag

    def bad_statements(prompt: str) -> tuple[str, dict[str, float]]:
        if "StatementGeneratorOutput" in prompt:
            return "no JSON here", {"cost_usd": 0.001}
        return fixed(prompt)

    llm = rm().EvalkitRagasLLM(bad_statements)
    out = judge_rag(llm, QUESTION, CONTEXTS, ANSWER)
    assert out["faithfulness"]["status"] == "judge_error" and out["faithfulness"]["value"] is None
    assert "no JSON object" in out["faithfulness"]["error"]
    assert out["context_relevance"]["status"] == out["answer_relevancy"]["status"] == "judged"
    assert out["context_relevance"]["value"] == pytest.approx(0.5)
    assert out["faithfulness"]["cost_usd"] == pytest.approx(0.001)  # the unusable answer still cost


def test_empty_hint_scores_zero_without_a_call() -> None:
    from evalkit.metrics.ragas_metrics import judge_rag

    llm = rm().EvalkitRagasLLM(fixed)
    out = judge_rag(llm, QUESTION, CONTEXTS, "  ")
    assert out["faithfulness"]["value"] == out["answer_relevancy"]["value"] == 0.0
    assert out["faithfulness"]["value_5"] == 1.0 and out["faithfulness"]["calls"] == 0
    assert out["context_relevance"]["calls"] == 2 and llm.calls == 2


@pytest.fixture
def client_for_server(tmp_path, monkeypatch):
    """A ModelClient on a loopback server answering ragas' prompts (fake_server.ragas_reply)."""
    from evalkit.llm.client import Budget, make_client
    from fake_server import FakeAnthropic
    from evalkit.llm.settings import JudgeSettings

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-ragas")
    monkeypatch.delenv("EVALKIT_JUDGE_MODEL", raising=False)
    with FakeAnthropic() as server:
        def make(budget_usd: float | None = None):
            settings = JudgeSettings(model="claude-test-judge", base_url=server.base_url, max_retries=0,
                                     budget_usd=budget_usd)
            return make_client(settings, tmp_path / "cache", budget=Budget(budget_usd)), settings

        yield server, make


def test_through_the_model_client_cache_and_samples(client_for_server) -> None:
    from evalkit.metrics.ragas_metrics import judge_rag

    server, make = client_for_server
    client, settings = make()
    llm = rm().EvalkitRagasLLM.from_client(client, settings)
    out = judge_rag(llm, QUESTION, CONTEXTS, ANSWER)
    assert {m["status"] for m in out.values()} == {"judged"}
    assert all(0.0 <= m["value"] <= 1.0 for m in out.values())
    # 2 + 2 + 3 prompts; answer relevancy's three identical prompts are samples 0, 1, 2 (three real calls)
    assert server.message_calls() == llm.calls == llm.api_calls == 7
    bodies = [r["body"] for r in server.requests if r["endpoint"] == "messages"]
    assert not any(k in b for b in bodies for k in ("temperature", "top_p", "top_k"))
    assert llm.cost_usd > 0 and llm.input_tokens > 0
    again = rm().EvalkitRagasLLM.from_client(client, settings)
    assert judge_rag(again, QUESTION, CONTEXTS, ANSWER) == out  # all from the cache, recorded the same
    assert server.message_calls() == 7 and again.api_calls == 0 and again.cost_usd == pytest.approx(llm.cost_usd)


def test_api_error_and_budget_are_per_metric(client_for_server) -> None:
    from fake_server import error
    from evalkit.metrics.ragas_metrics import judge_rag

    server, make = client_for_server
    client, settings = make()
    server.push(error(400, message="scripted refusal"))  # the first call: faithfulness' statements
    out = judge_rag(rm().EvalkitRagasLLM.from_client(client, settings), QUESTION, CONTEXTS, ANSWER)
    assert out["faithfulness"]["status"] == "infra_error" and "scripted refusal" in out["faithfulness"]["error"]
    assert out["context_relevance"]["status"] == out["answer_relevancy"]["status"] == "judged"

    client, settings = make(budget_usd=1e-9)  # the first uncached call spends it all
    out = judge_rag(rm().EvalkitRagasLLM.from_client(client, settings), "Another incident about jakarta", CONTEXTS,
                    "Another hint.")
    statuses = {name: m["status"] for name, m in out.items()}
    assert set(statuses.values()) == {"not_judged_budget"}  # faithfulness' second call already stops
    assert out["context_relevance"]["value"] is None  # ragas swallows the error; we still see it


def test_fake_server_ragas_replies_are_backward_compatible() -> None:
    from fake_server import ok, ragas_reply, with_ragas

    plain = {"messages": [{"role": "user", "content": "hello"}]}
    assert ragas_reply(plain) is None
    assert with_ragas(lambda body: ok("mine"))(plain).text == "mine"
