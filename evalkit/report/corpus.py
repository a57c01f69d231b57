"""Corpus-level metrics of one system on one suite (pooled over its cases, cached by provenance)."""

from __future__ import annotations

from evalkit.artifacts import OutputArtifact, ScoresArtifact, artifact_path
from evalkit.cases import Case, Project
from evalkit.config import Config
from evalkit.kind_registry import main_file
from evalkit.metrics.codebleu import corpus_codebleu
from evalkit.stages.score import expected_code
from evalkit.store import ContentStore


def corpus_metrics(cfg: Config, project: Project, system: str, cases: list[Case],
                   scores: dict[tuple[str, str], ScoresArtifact]) -> dict[str, float]:
    """Corpus-level metrics of one system on one suite: corpus_codebleu over the main files.

    Uses the same cases as the per-case `codebleu` mean (scored, not excluded, with a reference), but
    pools n-gram, syntax and dataflow counts over them before dividing, so the two numbers differ.
    """

    used = [(case.key, s.provenance.model_dump() if s.provenance else None) for case in cases
            if (s := scores.get((system, case.key))) is not None and not s.excluded
            and s.metrics.get("codebleu") is not None]
    if not used or len(used) > cfg.metrics.corpus_codebleu_max_cases:
        return {}
    # Pooling a corpus costs seconds at 1,000 cases: cache it by the provenance of what it pools.
    store = ContentStore(cfg.work_path / "cache", "corpus")
    key = store.key(["corpus_codebleu", system, list(cfg.metrics.codebleu_weights), used])
    cached = store.get(key)
    if cached is not None:
        return cached
    predictions, references, language = [], [], None
    for case in cases:
        s = scores.get((system, case.key))
        if s is None or s.excluded or s.metrics.get("codebleu") is None:
            continue
        mf, ref = main_file(case), expected_code(case)
        p = artifact_path(cfg.work_path, "generate", system, case.suite, case.id)
        if mf is None or ref is None or not p.exists():
            continue
        output = OutputArtifact.model_validate_json(p.read_bytes())
        predictions.append(output.first.files.get(mf, ""))
        references.append(ref)
        language = case.language
    if not predictions or language is None:
        return {}

    result = corpus_codebleu(predictions, references, language, weights=cfg.metrics.codebleu_weights)
    out = {} if result is None else {"corpus_codebleu": result.codebleu}
    store.put(key, out)
    return out
