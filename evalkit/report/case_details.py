"""The per-case JSON files (site/<release>/cases/<suite>/<case>.json), rewritten only when their inputs change."""

from __future__ import annotations

import json
import os
import pickle
from collections import defaultdict
from pathlib import Path
from typing import Any

from evalkit.artifacts import ARTIFACT_FILES, ScoresArtifact, artifact_path
from evalkit.cases import Case, Project
from evalkit.code_digest import code_digest
from evalkit.config import Config
from evalkit.fsutil import atomic_write_bytes, atomic_write_json, digest, file_digest, remove
from evalkit.names import is_valid_name
from evalkit.report.models import CaseDetail
from evalkit.stat_memo import regular_file_sig
from evalkit.kind_registry import main_file


STAGES = ("generate", "execute", "grade", "score")
ARTIFACT_KEYS = {"generate": "output", "execute": "execution", "grade": "grades", "score": "scores"}


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def read_artifacts(work: Path, system: str, case: Case) -> dict[str, bytes | None]:
    """The bytes of one (system, case)'s four artifacts (None where a stage wrote none), by stage."""
    return {stage: _read_bytes(artifact_path(work, stage, system, case.suite, case.id)) for stage in STAGES}


def case_detail(cfg: Config, case: Case, systems: list[Any],
                raw: dict[str, dict[str, bytes | None]] | None = None) -> CaseDetail:
    """One case with its input and reference files and every system's four artifacts.

    ``raw``: the artifacts' bytes per system (`read_artifacts`), when the caller has read them already."""
    work = cfg.work_path
    input_files: dict[str, str] = {}
    reference_files: dict[str, str] = {}
    for dotted, path in sorted(case.refs.items()):
        if Path(path).is_file():
            text = Path(path).read_text(encoding="utf-8", errors="replace")
            (input_files if dotted.startswith("inputs.") else reference_files)[dotted] = text
    per_system = {}
    for system in systems:
        got = (raw or {}).get(system.name) or read_artifacts(work, system.name, case)
        per_system[system.name] = {ARTIFACT_KEYS[stage]: json.loads(data) if data is not None else None
                                   for stage, data in got.items()}

    return CaseDetail(release=cfg.release, suite=case.suite, kind=case.kind, language=case.language, case_id=case.id,
                      description=case.description, tags=case.tags,
                      problems=[str(p) for p in case.problems], inputs=case.inputs.model_dump(mode="json"),
                      input_files=input_files, reference_files=reference_files, primary_file=main_file(case),
                      systems=per_system, reference=case.reference.model_dump(mode="json"), criteria=case.criteria)


def detail_key(case: Case, raw: dict[str, dict[str, bytes | None]]) -> str:
    """What a case's JSON is a function of: the case (its files and fields, `Case.digest`), the case's input
    and reference files as they are now, and the bytes of every system's artifacts.

    Not the artifacts' provenance: a verdict that heals (an infrastructure error re-graded once the
    judge answers) changes the artifact's content while its inputs, and so its provenance, stay the same."""
    refs = []
    for dotted, path in sorted(case.refs.items()):
        data = _read_bytes(Path(path)) if Path(path).is_file() else None
        refs.append((dotted, digest(data) if data is not None else None))
    return _key(case, refs, {name: {stage: digest(data) if data is not None else None for stage, data in arts.items()}
                             for name, arts in raw.items()})


def _key(case: Case, refs: list[tuple[str, str | None]], arts: dict[str, dict[str, str | None]]) -> str:
    return digest([CASE_DETAIL_VERSION, case.digest, case.key, refs,
                   [(name, sorted(by_stage.items())) for name, by_stage in sorted(arts.items())]])


Digests = dict[str, tuple[tuple[int, int, int], str]]
"""path -> (modification time in ns, size, inode) and the sha256 of its bytes then."""


def _file_digest(path: str, old: Digests, new: Digests) -> str | None:
    """The sha256 of a regular file's bytes (None: no such file), read again only when its modification time,
    size or inode changed since ``old`` was taken (an atomic write makes a new inode); recorded in ``new``."""
    sig = regular_file_sig(path)
    if sig is None:
        return None
    hit = old.get(path)
    value = hit[1] if hit is not None and hit[0] == sig else file_digest(path)
    new[path] = (sig, value)
    return value


def stat_detail_key(cfg: Config, case: Case, systems: list[Any], old: Digests, new: Digests) -> str:
    """`detail_key` without reading the files that did not change since ``old`` (their digests are taken from
    it): the same key, from stats where `detail_key` reads every artifact of every case."""
    work = str(cfg.work_path)
    refs = [(dotted, _file_digest(path, old, new)) for dotted, path in sorted(case.refs.items())]
    arts = {s.name: {stage: _file_digest(f"{work}/artifacts/{s.name}/{case.suite}/{case.id}/{ARTIFACT_FILES[stage]}",
                                         old, new) for stage in STAGES} for s in systems}
    return _key(case, refs, arts)


CASE_DETAIL_VERSION = 2  # bump when case_detail shows something new, so every case JSON is written again


def write_case_details_incrementally(cfg: Config, project: Project, pairs: list[tuple[Any, Case]],
                                     scores: dict[tuple[str, str], ScoresArtifact], out_dir: Path) -> None:
    """Write site/<release>/cases/<suite>/<case>.json, skipping cases whose inputs did not change.

    A case's detail is a function of the case and its systems' artifacts: an index of the digests
    of their content (`detail_key`) lets a one-case edit rewrite one file, not a thousand, and a
    healed verdict rewrite its case. The digests of files whose stat did not change are kept
    (`stat_detail_key`), so a one-case edit reads that case's files, not 12,000 artifacts; a case whose files' stats,
    digest, references and systems are all as recorded (`_signature`) keeps its key without digesting anything
    (``<work>/cache/case-details-<release>.cases.pickle``). ``scores`` is kept for callers; the artifacts are read here.
    """
    index_path = cfg.work_path / "cache" / f"case-details-{cfg.release}.json"
    try:
        old_index = json.loads(index_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        old_index = {}
    systems_of: dict[str, list[Any]] = defaultdict(list)
    for system, case in pairs:
        systems_of[case.key].append(system)
    digests_path = cfg.work_path / "cache" / f"case-details-{cfg.release}.cases.pickle"
    old_cases = _load_case_digests(digests_path)
    new_cases: CaseDigests = {}
    index = {}
    work = str(cfg.work_path)
    cases_dir = f"{out_dir}/cases"
    for case in project.cases:
        sys_here = systems_of[case.key]
        signature = _signature(work, case, sys_here)
        hit = old_cases.get(case.key)
        if hit is not None and hit[0] == signature:  # no file of the case changed: its key is the one recorded
            new_cases[case.key] = hit
            key = hit[1]
        else:
            files: Digests = {}
            key = stat_detail_key(cfg, case, sys_here, hit[2] if hit is not None else {}, files)  # reads changed files
            new_cases[case.key] = (signature, key, files)
        index[case.key] = key
        if old_index.get(case.key) == key and os.path.exists(f"{cases_dir}/{case.suite}/{case.id}.json"):
            continue
        path = out_dir / "cases" / case.suite / f"{case.id}.json"
        atomic_write_json(path, case_detail(cfg, case, sys_here), compact=True)
    for gone in sorted(set(old_index) - set(index)):  # a case no longer in the project: its JSON goes too
        suite, _, case_id = gone.partition("/")
        if is_valid_name(suite) and is_valid_name(case_id):
            remove(out_dir / "cases" / suite / f"{case_id}.json")
    atomic_write_json(index_path, index, compact=True)
    if new_cases != old_cases:
        remove(cfg.work_path / "cache" / f"case-details-{cfg.release}.digests.pickle")  # the file before s30's
        atomic_write_bytes(digests_path, pickle.dumps({"salt": _salt(), "cases": new_cases},
                                                      protocol=pickle.HIGHEST_PROTOCOL))


CASE_DIGESTS_VERSION = 1
CaseDigests = dict[str, tuple[tuple[object, ...], str, Digests]]
"""case key -> (`_signature` of the case when its key was computed, its `detail_key`, the digests of its files)."""


def _signature(work: str, case: Case, systems: list[Any]) -> tuple[object, ...]:
    """Everything `detail_key` is a function of, without reading a file: the version, the work folder, the case's
    digest, its file references and systems, and the stat of each of its files (references, four artifacts per
    system). Equal signatures, equal keys (a file is trusted unchanged while its stat is: as `_file_digest`)."""
    refs = tuple(sorted(case.refs.items()))
    names = tuple(s.name for s in systems)
    stats = [regular_file_sig(path) for _dotted, path in refs]
    for name in names:
        folder = f"{work}/artifacts/{name}/{case.suite}/{case.id}/"
        stats += [regular_file_sig(folder + ARTIFACT_FILES[stage]) for stage in STAGES]
    return (CASE_DETAIL_VERSION, work, case.digest, refs, names, tuple(stats))


def _salt() -> tuple[object, ...]:
    """The file's version and evalkit's code (`code_digest`): a file other code wrote is not used."""
    return CASE_DIGESTS_VERSION, code_digest()


def _load_case_digests(path: Path) -> CaseDigests:
    """The recorded cases, or none: a missing file, one that does not unpickle (pickle raises many kinds of error
    for a truncated or corrupted file), of another salt or shape is not used."""
    try:
        with open(path, "rb") as fh:
            data = pickle.load(fh)
    except Exception:  # noqa: BLE001 - any unreadable cache is a cold cache
        return {}
    cases = data.get("cases") if isinstance(data, dict) and data.get("salt") == _salt() else None
    if not isinstance(cases, dict) or not all(
            isinstance(k, str) and isinstance(v, tuple) and len(v) == 3 and isinstance(v[0], tuple)
            and isinstance(v[1], str) and isinstance(v[2], dict) for k, v in cases.items()):
        return {}
    return cases
