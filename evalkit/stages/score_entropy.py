"""Semantic entropy of a system's k samples on one case (systems with `samples: k > 1`).

Samples are clustered by execution signature (per-test outcomes of execution.json `runs[i]`) when
tests ran for every answered sample, else by normalised code of the main file (or the patch, or
the free-text answer). Samples that failed (error, timeout) share one "no answer" cluster.
"""

from __future__ import annotations

from collections.abc import Hashable

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact, Sample
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.kind_registry import main_file
from evalkit.metrics.entropy import cluster_by_key, execution_signature, normalise_code, semantic_entropy
from evalkit.metrics.metric_info import Metrics

NO_ANSWER: tuple[str] = ("<no answer>",)


def _code_key(sample: Sample, main: str | None, language: str) -> Hashable:
    if sample.status != "ok":
        return NO_ANSWER
    if main is not None and main in sample.files:
        return ("code", normalise_code(sample.files[main], language))
    if sample.patch is not None:
        return ("patch", normalise_code(sample.patch, language))
    if sample.files:
        return ("files", tuple((p, normalise_code(c, language)) for p, c in sorted(sample.files.items())))
    if sample.text is not None:
        return ("text", " ".join(sample.text.split()))
    return NO_ANSWER


def cluster_keys(case: Case, output: OutputArtifact, execution: ExecutionArtifact | None) -> tuple[list[Hashable], str]:
    """One key per sample and the clustering method ("execution" or "normalised-code")."""

    samples = output.samples
    runs = execution.runs if execution is not None else []
    answered = [i for i, s in enumerate(samples) if s.status == "ok"]
    if answered and len(runs) >= len(samples) and all(runs[i].tests for i in answered):
        keys: list[Hashable] = [("tests", execution_signature(runs[i].tests)) if s.status == "ok" else NO_ANSWER
                                for i, s in enumerate(samples)]
        return keys, "execution"
    mf = main_file(case)
    return [_code_key(s, mf, case.language) for s in samples], "normalised-code"


def entropy_metrics(cfg: Config, case: Case, output: OutputArtifact, execution: ExecutionArtifact | None,
                    grades: GradesArtifact) -> Metrics:
    if len(output.samples) < 2:
        return {}

    keys, method = cluster_keys(case, output, execution)
    r = semantic_entropy(cluster_by_key(keys), method)  # type: ignore[arg-type]
    return {"semantic_entropy": r.entropy, "semantic_entropy_norm": r.normalised_entropy,
            "entropy_clusters": float(r.n_clusters), "largest_cluster_share": r.largest_cluster_share}
