"""The rag kind's metrics: ragas' offline and LLM-judged scores of a hint. Registered when the kind loads (its
__init__ imports this module), with the public ``metric(...)`` an outside kind uses."""

from __future__ import annotations

from evalkit.metrics.registry import metric

metric(name="rag_answer_similarity", display="Hint similarity", aggregate="mean", headline=True, primary=35,
       kinds=("rag",), description="1 - normalised Levenshtein distance between the hint and the reference hint "
                                   "(ragas NonLLMStringSimilarity).")

metric(name="rag_context_recall", display="Context recall", aggregate="mean", kinds=("rag",),
       description="Share of reference contexts matched (string similarity > 0.5) by a retrieved context "
                   "(ragas NonLLMContextRecall).")

for _name, _display, _text in [
        ("rag_faithfulness", "Faithfulness", "Share of the hint's statements the retrieved contexts support"),
        ("rag_context_relevance", "Context relevance", "How relevant the retrieved contexts are to the incident"),
        ("rag_answer_relevancy", "Answer relevancy", "How well the hint addresses the incident")]:
    metric(name=_name, display=_display, aggregate="mean", kinds=("rag",),
           description=f"{_text} (ragas, LLM judge), 0-1.")
    metric(name=f"{_name}_5", display=f"{_display} (1-5)", aggregate="mean", kinds=("rag",), scale="1-5",
           description=f"{_text} (ragas, LLM judge), on the 1-5 scale: 1 + 4 x the 0-1 score.")
