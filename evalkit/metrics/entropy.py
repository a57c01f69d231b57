"""Semantic entropy of k samples of one system on one case.

The samples are grouped into clusters of "the same answer" (by test outcomes, by normalised code,
or optionally by embedding similarity); the entropy of the cluster frequencies says how much the
system disagrees with itself: 0 when every sample lands in one cluster, ln k when all differ.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from functools import cache
from typing import Any, Literal

from evalkit.metrics.codebleu import tokenize_source
from evalkit.models import Model

EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""Model used by cluster_by_embedding (only with the optional ``embeddings`` extra)."""

Method = Literal["execution", "normalised-code", "embedding"]


class EntropyResult(Model):
    """How the k samples of one system on one case spread over clusters of equivalent answers."""

    k: int
    """Number of samples."""
    n_clusters: int
    """Number of distinct clusters."""
    largest_cluster: int
    """Size of the largest cluster."""
    largest_cluster_share: float
    """largest_cluster / k."""
    entropy: float
    """Entropy of the cluster frequencies, natural log (0 .. ln k)."""
    normalised_entropy: float
    """entropy / ln k, between 0 and 1; 0 when k == 1."""
    method: Method
    """What made two samples equivalent: test outcomes, normalised code, or embedding similarity."""


def cluster_by_key(keys: Sequence[Hashable]) -> list[int]:
    """Cluster labels: equal keys share a label; labels count up in order of first appearance."""
    labels: dict[Hashable, int] = {}
    return [labels.setdefault(key, len(labels)) for key in keys]


def normalise_code(code: str, language: str) -> str:
    """Code as its tokens joined by single spaces: whitespace and layout differences vanish.

    Comments are dropped for the languages the tokenizer knows (java, python); for others they are
    kept. Python indentation is not kept either, so programs differing only in it count as equal.
    """
    return " ".join(tokenize_source(code, language))


def execution_signature(test_status: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """Per-test outcomes sorted by test name: samples with equal signatures behave the same."""
    return tuple(sorted(test_status.items()))


def semantic_entropy(labels: Sequence[int], method: Method) -> EntropyResult:
    """Entropy of the cluster frequencies of ``labels`` (one label per sample, k >= 1)."""
    k = len(labels)
    if k == 0:
        raise ValueError("semantic_entropy needs at least one sample")
    counts = Counter(labels)
    entropy = -math.fsum((c / k) * math.log(c / k) for c in sorted(counts.values()))
    entropy = 0.0 if entropy == 0 else entropy  # no -0.0 in artifacts
    largest = max(counts.values())
    return EntropyResult(
        k=k,
        n_clusters=len(counts),
        largest_cluster=largest,
        largest_cluster_share=largest / k,
        entropy=entropy,
        normalised_entropy=entropy / math.log(k) if k > 1 else 0.0,
        method=method,
    )


@cache
def _embedding_model() -> Any:
    try:
        from sentence_transformers import SentenceTransformer  # pyright: ignore[reportMissingImports]  # optional extra  # deferred: sentence-transformers (torch), only for embeddings
    except ImportError as exc:
        raise RuntimeError(
            "install evalkit[embeddings] (sentence-transformers) to cluster samples by embedding"
        ) from exc
    return SentenceTransformer(EMBEDDING_MODEL)


def cluster_by_embedding(texts: Sequence[str], threshold: float = 0.9) -> list[int]:
    """Greedy clusters by cosine similarity of sentence embeddings (optional, not the default).

    Each text joins the first cluster whose first member has similarity >= ``threshold`` with it,
    else it starts a new cluster. Needs the ``embeddings`` extra; raises RuntimeError without it.
    """
    model = _embedding_model()
    if not texts:
        return []
    vectors = model.encode(list(texts), normalize_embeddings=True)
    heads: list[int] = []
    labels: list[int] = []
    for i, vec in enumerate(vectors):
        for label, head in enumerate(heads):
            if float(vec @ vectors[head]) >= threshold:
                labels.append(label)
                break
        else:
            heads.append(i)
            labels.append(len(heads) - 1)
    return labels
