"""`gold`, `empty` and `canary`: the case's reference answer, no answer at all, and answers doing no real work."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from evalkit.artifacts import Sample
from evalkit.cases import Case
from evalkit.kind_registry import kind
from evalkit.systems.base import RunContext, adapter

if TYPE_CHECKING:
    from evalkit.config import CanarySystem, System


@adapter("gold", free=True)
def gold(system: System, case: Case, sample_index: int, ctx: RunContext) -> Sample:
    """What a perfect system would answer, built from the case's reference."""
    return gold_sample(case)


def gold_sample(case: Case) -> Sample:
    """The case's reference as an answer (also what validation checks against the case): the kind's."""

    return kind(case.kind).gold(case)


def reference_sample(case: Case, **extra: object) -> Sample:
    """The reference's answer parts as a sample (patch, text or `answer`, files, tasks, contexts); ``extra``
    adds the kind's own (e.g. agentic's expected tasks)."""
    ref = case.reference  # any kind's reference model: the parts named alike are read alike
    sample: dict[str, Any] = {}
    if getattr(ref, "patch_file", None):
        sample["patch"] = case.read("reference.patch_file")
    sample.update(extra)
    for key in ("text", "answer"):  # rag cases keep their reference hint under `answer`
        if isinstance(value := getattr(ref, key, None), str):
            sample["text"] = value
            break
    files = {k.split(".", 2)[-1]: case.read(k) or "" for k in case.refs if k.startswith("reference.files.")}
    if isinstance(named := getattr(ref, "files", None), dict):
        files.update({name: case.read(f"reference.files.{name}") or "" for name in named})
    if files:
        sample["files"] = files
    for key in ("tasks", "context_files", "context_functions"):
        if (value := getattr(ref, key, None)) is not None:
            sample[key] = value
    return Sample(**sample)


@adapter("empty", free=True)
def empty(system: System, case: Case, sample_index: int, ctx: RunContext) -> Sample:
    """No output: every metric's floor."""
    return Sample()


@adapter("canary", free=True)
def canary(system: System, case: Case, sample_index: int, ctx: RunContext) -> Sample:
    """An answer that does no real work, made by the case's kind from the case (evalkit.graders.canaries);
    a variant that means nothing for the kind skips the case (not attempted)."""

    variant = cast("CanarySystem", system).variant  # its `adapter: canary` tag made it one (evalkit.config.System)
    found = kind(case.kind).canary(case, variant)
    if found is None:
        return Sample(status="not_attempted", reason=f"canary {variant} does not apply to a {case.kind} case")
    return found
