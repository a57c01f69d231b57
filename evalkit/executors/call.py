"""A stage call: one (stage, system, case) as a picklable value, and the pure function that runs it.

The coordinator (the doit action, `evalkit.tasks.run_stage`) builds a `StageCall` holding
everything the stage reads, by content: the config, the system, the case with every file it
depends on as a `FileRef` (sha256), the source tree of a repository case as a manifest of
`FileRef`s, and the earlier stages' artifacts as models. `run_call` runs it anywhere: host files
are used where they are, with the same content (in-process: always); otherwise they are
materialized from a blob source into a scratch folder, and the config, system and case are
re-rooted there, so the stage functions keep their signatures ``(cfg, system, case, artifacts...)``.

The config travels whole: stages and the helpers they call read `sandbox`, `judge`, `metrics` and
`resolve()` together, so its slices are not separable; what a stage's *result* depends on is still
the stage's slice (`evalkit.stages.slices`), digested into the artifact's provenance.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, TypeAlias

from evalkit import __version__
from evalkit.artifacts import ArtifactBase
from evalkit.casemodels import PatchInputs
from evalkit.cases import Case
from evalkit.config import Config, PACKAGE_DIR, System
from evalkit.executors.blobs import BlobStore, FileRef, MissingBlob, file_ref, matches
from evalkit.fsutil import atomic_write_text, confine_writes, digest
from evalkit.health_models import CaseHealth
from evalkit.graders.rubric_config import resolved_ref
from evalkit.stages.execute import RepoUnmapped, TreeUnavailable, execute, source_tree, tree_in_image
from evalkit.stages.generate import generate
from evalkit.stages.grade import grade
from evalkit.stages.handed_trees import HANDED, TreeRef
from evalkit.stages.health import case_health
from evalkit.stages.score import score
from evalkit.stages.validate import Validation, validate_case, validation_path
from evalkit.systems.recorded import recorded_sources

STAGES = ("generate", "execute", "grade", "score", "validate", "health")
"""The stages a call runs (validate: a case's reference checked against the case, no system; health: the
reference against its own ablations, no system)."""
INPUTS = {"generate": (), "execute": ("generate",), "grade": ("generate", "execute"),
          "score": ("generate", "execute", "grade"), "validate": (), "health": ()}
"""The earlier artifacts each stage is handed."""
CallResult: TypeAlias = ArtifactBase | Validation | CaseHealth
"""What a stage call returns: its artifact (a validate call: its `Validation`; a health call: its `CaseHealth`)."""


@dataclass(frozen=True)
class StageCall:
    """One stage of one (system, case), by content: picklable, run by `run_call` wherever an executor puts it."""

    stage: str
    """generate, execute, grade, score or validate."""
    config: Config
    """The project's config (whole: its slices are not separable, see the module docstring)."""
    system: System | None
    """The system under test (a `config.System` model); None for validate."""
    case: Case
    """The loaded case; its host paths are re-rooted where the call runs."""
    inputs: dict[str, ArtifactBase | None]
    """Earlier stages' artifacts (stage -> artifact; None when that stage does not apply)."""
    files: dict[str, FileRef]
    """Host path -> content: every file of the project the stage reads (the case's files, rubric files, the
    system's own files and recordings)."""
    work_files: dict[str, FileRef] = field(default_factory=dict)
    """Path relative to the work folder -> content: work-folder files the stage reads (the case's validation)."""
    trees: dict[str, TreeRef] = field(default_factory=dict)
    """``repo@commit`` -> the case's source tree (execute stage of repository cases)."""
    evalkit_version: str = ""
    """The coordinator's evalkit version (an executor running other code may refuse the call)."""

    def host_files(self) -> Iterator[tuple[str, FileRef]]:
        """Every (host path, content) the call refers to, trees included: what a blob source must hold."""
        yield from self.files.items()
        work = self.config.work_path
        for rel, ref in self.work_files.items():
            yield str(work / rel), ref
        for tree in self.trees.values():
            for rel, ref in tree.files.items():
                yield f"{tree.host}/{rel}", ref


# ---- coordinator side ---------------------------------------------------------------------------

def _system_files(cfg: Config, system: System, case: Case) -> list[str]:
    """The system's own files below the project (watched program files, command arguments naming project
    files, recordings and a recorded judge's verdicts); files of the evalkit package are not carried."""
    out = [str(cfg.resolve(w)) for w in getattr(system, "watch", [])]
    root = Path(cfg.root)
    for arg in getattr(system, "command", [])[:]:
        if arg and not arg.startswith("-") and "{" not in arg:
            p = Path(arg) if os.path.isabs(arg) else root / arg
            if p.is_file():
                out.append(str(p))
    if getattr(system, "adapter", None) == "recorded":
        for i in range(system.samples):
            out += [str(p) for p in recorded_sources(system, case, root, i)]
    package = str(PACKAGE_DIR) + os.sep
    return [p for p in out if not p.startswith(package)]


def _rubric_files(cfg: Config, case: Case) -> list[str]:
    out = [case.rubric] if case.rubric and os.path.isabs(case.rubric) else []
    if cfg.judge.rubric:
        ref = resolved_ref(cfg.judge.rubric, cfg.root or ".")
        if ref and os.path.isabs(ref):
            out.append(ref)
    return out


def _tree_key(case: Case) -> str | None:
    """``repo@commit`` of a case whose tree the execute stage makes from a repository, else None."""

    inputs = case.inputs
    if not isinstance(inputs, PatchInputs) or tree_in_image(case) or case.ref_path("inputs.source_dir") is not None:
        return None
    return f"{inputs.repo}@{inputs.base_commit}" if inputs.repo and inputs.base_commit else None


def tree_manifest(folder: Path) -> dict[str, FileRef]:
    """Every file below ``folder`` by content (kept beside a completed tree of the tree cache, which never changes)."""
    saved = folder.parent / f"{folder.name}.files.json"
    if saved.is_file():
        try:
            return {k: FileRef(**v) for k, v in json.loads(saved.read_text(encoding="utf-8")).items()}
        except (ValueError, TypeError):
            pass
    out: dict[str, FileRef] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, folder).replace(os.sep, "/")
            if rel == ".evalkit-complete":
                continue
            out[rel] = file_ref(path)
    if (folder / ".evalkit-complete").exists():
        atomic_write_text(saved, json.dumps({k: dataclasses.asdict(v) for k, v in out.items()}, sort_keys=True))
    return out


def _tree(cfg: Config, case: Case) -> TreeRef:
    try:
        folder = source_tree(cfg, case)
    except RepoUnmapped as exc:
        return TreeRef(error=str(exc), unmapped=True)
    except TreeUnavailable as exc:
        return TreeRef(error=str(exc))
    return TreeRef(files=tree_manifest(folder), host=str(folder))


def build_call(cfg: Config, stage: str, system: System | None, case: Case, inputs: dict[str, ArtifactBase | None]) -> StageCall:
    """The call for one stage of one (system, case) (validate: system None): files by content, the repository
    tree made here."""

    paths = list(case.files) + _rubric_files(cfg, case) + (_system_files(cfg, system, case) if system is not None and stage != "score" else [])
    files = {p: file_ref(p) for p in dict.fromkeys(paths) if os.path.isfile(p)}
    work = cfg.work_path
    work_files = {}
    valid = validation_path(work, case)
    if stage in ("execute", "score", "health") and valid.is_file():
        work_files[str(valid.relative_to(work))] = file_ref(str(valid))
    trees = {}
    generated = inputs.get("generate")
    if case.ok and (stage in ("validate", "health") or (stage == "execute" and generated is not None and generated.status == "ok")):
        key = _tree_key(case)
        if key is not None:
            trees[key] = _tree(cfg, case)
    return StageCall(stage=stage, config=cfg, system=system, case=case, inputs=inputs, files=files,
                     work_files=work_files, trees=trees, evalkit_version=__version__)


def publish(call: StageCall, blobs: BlobStore) -> int:
    """Put every file the call refers to into ``blobs`` (what a remote executor sends); returns how many were new."""
    return blobs.put_all(call.host_files())


# ---- executing side -----------------------------------------------------------------------------

@dataclass
class View:
    cfg: Config
    system: System | None
    case: Case
    trees: dict[str, TreeRef | Path]


def _on_host(call: StageCall) -> bool:
    work = call.config.work_path
    return (all(matches(p, ref) for p, ref in call.files.items())
            and all(matches(str(work / rel), ref) for rel, ref in call.work_files.items())
            and all(matches(f"{t.host}/{rel}", ref) for t in call.trees.values() for rel, ref in t.files.items()))


def materialized(call: StageCall, blobs: BlobStore, scratch: Path) -> View:
    """The call re-rooted below ``scratch``: project files at ``scratch/snap/<digest>/<host path>``, the work
    folder ``scratch/work`` (caches made there stay there), trees under ``scratch/trees``."""
    scratch = Path(os.path.abspath(scratch))
    confine_writes(scratch)
    base = scratch / "snap" / digest(sorted((p, r.sha256) for p, r in call.files.items()))[:24]
    for p, ref in call.files.items():
        blobs.materialize(ref, Path(f"{base}{p}"))
    work = scratch / "work"
    for rel, ref in call.work_files.items():
        blobs.materialize(ref, work / rel)

    def r(p: str) -> str:
        return f"{base}{p}" if os.path.isabs(p) else p

    trees: dict[str, TreeRef | Path] = {}
    for key, tree in call.trees.items():
        if not tree.files:
            trees[key] = tree
            continue
        dest = scratch / "trees" / digest(sorted((k, v.sha256, v.executable, v.link) for k, v in tree.files.items()))[:24]
        if not (dest / ".evalkit-complete").exists():
            for rel, ref in tree.files.items():
                blobs.materialize(ref, dest / rel)
            atomic_write_text(dest / ".evalkit-complete", key)
        trees[key] = dest
    case = dataclasses.replace(call.case, path=r(call.case.path), dir=r(call.case.dir),
                               files=[r(f) for f in call.case.files], refs={k: r(v) for k, v in call.case.refs.items()},
                               shared_files=[r(f) for f in call.case.shared_files],
                               rubric=r(call.case.rubric) if call.case.rubric else call.case.rubric)
    cfg = call.config
    cfg = cfg.model_copy(update={"root": r(cfg.root), "path": r(cfg.path), "work_dir": str(work),
                                 "cases_dir": r(cfg.cases_dir)})
    system = call.system
    moved = {k: r(getattr(system, k)) for k in ("path", "grades") if isinstance(getattr(system, k, None), str)}
    if moved and system is not None:
        system = system.model_copy(update=moved)
    return View(cfg, system, case, trees)


def view(call: StageCall, blobs: BlobStore | None = None, scratch: Path | None = None) -> View:
    """What the stage function is handed: the host's own files when they are all there with the call's content,
    else the call materialized from ``blobs`` below ``scratch``."""
    if _on_host(call):
        trees: dict[str, TreeRef | Path] = {k: Path(t.host) if t.files else t for k, t in call.trees.items()}
        return View(call.config, call.system, call.case, trees)
    if blobs is None or scratch is None:
        raise MissingBlob(f"{call.case.key}: files of the case changed or are missing on this host since the "
                          f"{call.stage} call was built, and the executor has no blob source")
    return materialized(call, blobs, scratch)


def run_call(call: StageCall, blobs: BlobStore | None = None, scratch: Path | None = None) -> CallResult:
    """Run one stage call and return its artifact (validate: its `Validation`; nothing is written but the
    caches'); an exception the stage raises is passed on (the coordinator records it as an evalkit bug)."""
    v = view(call, blobs, scratch)
    token = HANDED.set(v.trees)
    try:
        return dispatch(call.stage, v, call.inputs)
    finally:
        HANDED.reset(token)


def dispatch(stage: str, v: View, inputs: dict[str, ArtifactBase | None]) -> CallResult:
    cfg, system, case = v.cfg, v.system, v.case
    if stage == "validate":
        return validate_case(cfg, case)
    if stage == "health":
        return case_health(cfg, case)
    if system is None:
        raise ValueError(f"{stage} call without a system (only validate and health calls have none)")
    if stage == "generate":
        return generate(cfg, system, case)
    if stage == "execute":
        return execute(cfg, system, case, inputs["generate"])  # type: ignore[arg-type]
    if stage == "grade":
        return grade(cfg, system, case, inputs["generate"], inputs.get("execute"))  # type: ignore[arg-type]
    if stage == "score":
        return score(cfg, system, case, inputs["generate"], inputs.get("execute"), inputs["grade"])  # type: ignore[arg-type]
    raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")
