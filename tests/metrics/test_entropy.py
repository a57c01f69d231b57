"""Semantic entropy with hand-computed values."""

from __future__ import annotations

import importlib.util
import math

import pytest

from evalkit.metrics.entropy import (
    cluster_by_embedding,
    cluster_by_key,
    execution_signature,
    normalise_code,
    semantic_entropy,
)


def test_cluster_by_key_labels_in_first_seen_order():
    assert cluster_by_key(["b", "a", "b", "c", "a"]) == [0, 1, 0, 2, 1]
    assert cluster_by_key([]) == []


def test_two_equal_clusters():
    r = semantic_entropy([0, 0, 1, 1], "execution")
    assert r.entropy == pytest.approx(math.log(2))
    assert r.normalised_entropy == pytest.approx(0.5)  # ln 2 / ln 4
    assert (r.k, r.n_clusters, r.largest_cluster, r.largest_cluster_share) == (4, 2, 2, 0.5)


def test_uneven_clusters_hand_computed():
    # shares 3/5, 1/5, 1/5: H = -(0.6 ln 0.6 + 2 * 0.2 ln 0.2) = 0.9502705392...
    r = semantic_entropy([2, 0, 2, 1, 2], "normalised-code")
    assert r.entropy == pytest.approx(0.950270539233, abs=1e-9)
    assert r.normalised_entropy == pytest.approx(0.950270539233 / math.log(5), abs=1e-9)
    assert (r.n_clusters, r.largest_cluster, r.largest_cluster_share) == (3, 3, 0.6)


def test_extremes():
    one = semantic_entropy([0, 0, 0], "execution")
    assert one.entropy == 0.0 and one.normalised_entropy == 0.0
    assert "-0.0" not in one.model_dump_json()
    all_differ = semantic_entropy([0, 1, 2], "execution")
    assert all_differ.entropy == pytest.approx(math.log(3))
    assert all_differ.normalised_entropy == pytest.approx(1.0)
    single = semantic_entropy([0], "execution")
    assert (single.entropy, single.normalised_entropy, single.largest_cluster_share) == (0.0, 0.0, 1.0)
    with pytest.raises(ValueError):
        semantic_entropy([], "execution")


def test_normalise_code_ignores_comments_and_layout():
    a = "def f(x):\n    # double it\n    return x*2\n"
    b = "def f( x ):\n    return x * 2   # twice\n\n"
    c = "def f(x):\n    return x*3\n"
    assert normalise_code(a, "python") == normalise_code(b, "python") == "def f ( x ) : return x * 2"
    assert normalise_code(c, "python") != normalise_code(a, "python")
    j1 = "int f(int x) { /* twice */ return x << 1; }"
    j2 = "int f(int x) {\n  return x<<1; // shift\n}"
    assert normalise_code(j1, "java") == normalise_code(j2, "java")


def test_execution_signature_clusters_by_outcomes():
    s1 = execution_signature({"t_b": "failed", "t_a": "passed"})
    s2 = execution_signature({"t_a": "passed", "t_b": "failed"})
    s3 = execution_signature({"t_a": "passed", "t_b": "passed"})
    assert s1 == s2 == (("t_a", "passed"), ("t_b", "failed"))
    assert cluster_by_key([s1, s2, s3]) == [0, 0, 1]


def test_cluster_by_embedding_without_package_says_what_to_install():
    if importlib.util.find_spec("sentence_transformers") is not None:
        # the package is present: the real path must cluster identical texts together
        labels = cluster_by_embedding(["return x", "return x", "open the file"])
        assert labels[0] == labels[1]
        return
    with pytest.raises(RuntimeError, match=r"install evalkit\[embeddings\]"):
        cluster_by_embedding(["a", "b"])
