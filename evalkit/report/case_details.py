"""The per-case JSON files (site/<release>/cases/<suite>/<case>.json), rewritten only when their inputs change."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from evalkit.artifacts import ScoresArtifact, artifact_path
from evalkit.cases import Case, Project
from evalkit.config import Config
from evalkit.fsutil import atomic_write_json, digest
from evalkit.report.models import CaseDetail


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def case_detail(cfg: Config, case: Case, systems: list[Any]) -> CaseDetail:
    """One case with its input and reference files and every system's four artifacts."""
    work = cfg.work_path
    input_files, reference_files = {}, {}
    for dotted, path in sorted(case.refs.items()):
        if Path(path).is_file():
            text = Path(path).read_text(encoding="utf-8", errors="replace")
            (input_files if dotted.startswith("inputs.") else reference_files)[dotted] = text
    per_system = {}
    for system in systems:
        arts = {stage: _read_json(artifact_path(work, stage, system.name, case.suite, case.id))
                for stage in ("generate", "execute", "grade", "score")}
        per_system[system.name] = {"output": arts["generate"], "execution": arts["execute"],
                                   "grades": arts["grade"], "scores": arts["score"]}
    from evalkit.stages.grade import main_file

    return CaseDetail(release=cfg.release, suite=case.suite, kind=case.kind, language=case.language, case_id=case.id,
                      description=case.description, tags=case.tags,
                      problems=[str(p) for p in case.problems], inputs=case.inputs.model_dump(mode="json"),
                      input_files=input_files, reference_files=reference_files, primary_file=main_file(case),
                      systems=per_system, reference=case.reference.model_dump(mode="json"), criteria=case.criteria)


def write_case_details_incrementally(cfg: Config, project: Project, pairs: list[tuple[Any, Case]],
                                     scores: dict[tuple[str, str], ScoresArtifact], out_dir: Path) -> None:
    """Write site/<release>/cases/<suite>/<case>.json, skipping cases whose inputs did not change.

    A case's detail is a function of the case and its systems' artifacts, whose provenance the
    scores carry; an index of those digests lets a one-case edit rewrite one file, not a thousand.
    """
    index_path = cfg.work_path / "cache" / f"case-details-{cfg.release}.json"
    try:
        old_index = json.loads(index_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        old_index = {}
    systems_of: dict[str, list[Any]] = defaultdict(list)
    for system, case in pairs:
        systems_of[case.key].append(system)
    index = {}
    for case in project.cases:
        sys_here = systems_of[case.key]
        key = digest([case.digest, [(s.name, prov.model_dump() if (sc := scores.get((s.name, case.key))) is not None
                                     and (prov := sc.provenance) is not None else None)
                                    for s in sys_here]])
        index[case.key] = key
        path = out_dir / "cases" / case.suite / f"{case.id}.json"
        if old_index.get(case.key) == key and path.exists():
            continue
        atomic_write_json(path, case_detail(cfg, case, sys_here), compact=True)
    atomic_write_json(index_path, index, compact=True)
