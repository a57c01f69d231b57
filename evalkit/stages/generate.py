"""generate: run the system under test on a case (k samples), content-addressed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalkit.artifacts import OutputArtifact, Provenance, Sample
from evalkit.cases import Case
from evalkit.config import Config, System
from evalkit.fsutil import digest, file_digest
from evalkit.stages.slices import generate_slice
from evalkit.store import ContentStore
from evalkit.systems.base import RunContext, run_system
from evalkit.systems.command import PROTOCOL_VERSION
from evalkit.systems.recorded import recorded_sources


def generate_key(cfg: Config, system: System, case: Case, sample_index: int) -> dict[str, Any]:
    """Everything a system's answer depends on: its settings, its program's files, the case."""
    watched = [(w, file_digest(cfg.resolve(w))) for w in getattr(system, "watch", []) if cfg.resolve(w).exists()]
    key = {"protocol": PROTOCOL_VERSION, "system": generate_slice(cfg, system), "watch": watched,
           "case": case.digest, "sample": sample_index}
    if getattr(system, "adapter", None) == "recorded":  # the recording is the answer: its content is an input

        key["recorded"] = [(p.name, file_digest(p) if p.is_file() else None)
                           for p in recorded_sources(system, case, Path(cfg.root), sample_index)]
    return key


def generate(cfg: Config, system: System, case: Case) -> OutputArtifact:
    """The system's answers to one case; each sample is looked up in the cache before it is paid for."""
    base: dict[str, Any] = {"system": system.name, "suite": case.suite, "case_id": case.id}
    keys = [generate_key(cfg, system, case, i) for i in range(system.samples)]
    prov = Provenance(inputs=digest(keys), config=digest(generate_slice(cfg, system)))
    if not case.ok:
        reason = "; ".join(str(p) for p in case.problems)
        return OutputArtifact(**base, status="error", reason=f"broken case: {reason}", provenance=prov)
    store = ContentStore(cfg.work_path / "cache", "generate")
    ctx = RunContext(root=Path(cfg.root), work=cfg.work_path, judge=cfg.judge)
    samples: list[Sample] = []
    for i, key_inputs in enumerate(keys):
        key = store.key(key_inputs)
        with store.claim(key):
            hit = store.get(key)
            if hit is not None:
                samples.append(Sample.model_validate(hit))
                continue
            sample = run_system(system, case, i, ctx)
            # the system's own failures are final; ours are retried, and a missing recorded output is looked for again
            if sample.status not in ("infra_error", "not_attempted"):
                store.put(key, sample.model_dump(mode="json"))
            samples.append(sample)
    first = samples[0]
    status = first.status if first.status in ("error", "timeout", "infra_error", "not_attempted") else "ok"
    return OutputArtifact(**base, status=status, reason=first.reason, samples=samples, provenance=prov)
