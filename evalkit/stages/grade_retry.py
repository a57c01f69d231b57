"""Which grade artifacts are asked again, and when.

- An API or transport failure of the judge (``infra_error``) is retried on the next run: the grade
  task that recorded it leaves a ``.retry`` marker beside ``grades.json`` (``mark_after_grade``).
- A ``judge_error`` (the answer stayed unusable after the repair request) is *not* re-asked by a
  plain rerun: the same question would most often get the same answer. ``evalkit run
  --retry-judge-errors`` marks those grade artifacts for retry (``mark_grades``) and drops their
  unusable answers, which were set aside rather than cached (``evalkit.llm.structured.ask_structured``),
  so the model is asked anew. A plain rerun of such a grading (a killed run, a lost doit database)
  gets the set-aside answers back and pays nothing.
- Changing how the judge is reached (``judge.base_url``, ``judge.use_cache``) does not touch a
  verdict already given; it reruns the grading of every output that has none (``endpoint_changed``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.artifacts import ARTIFACT_FILES, RETRY_SUFFIX, artifact_path, marked_for_retry, read_optional
from evalkit.fsutil import atomic_write_text, digest, pretty_json, touch
from evalkit.llm.cache import ResponseCache

if TYPE_CHECKING:
    from evalkit.artifacts import GradesArtifact
    from evalkit.cases import Case
    from evalkit.config import Config, System

NO_VERDICT = frozenset({"infra_error", "not_judged_budget", "judge_error", "not_configured"})
"""Judge statuses of an output that has no model-graded verdict."""
RETRIED_NEXT_RUN = frozenset({"infra_error"})
"""Judge statuses retried by a plain rerun (API and transport failures)."""


def judge_status(grades: dict[str, Any]) -> str | None:
    """The model-graded status of a grades.json (rubric for generation, else judge), or None."""
    judged = grades.get("rubric") or grades.get("judge") or {}
    return judged.get("status")


def mark_after_grade(path: str | Path, grades: GradesArtifact) -> None:
    """Leave a ``.retry`` marker beside a just-written grades.json whose judge call failed on the API, or
    whose verdict is the fallback judge's (the primary is asked again next run; while it still fails, the
    fallback's answer comes from the response cache)."""
    judged = grades.rubric or grades.judge
    if judged is not None and (judged.status in RETRIED_NEXT_RUN or judged.fallback):
        touch(f"{path}{RETRY_SUFFIX}")  # via the write guard


def grade_files(work: Path) -> Iterable[Path]:
    return sorted((work / "artifacts").glob(f"*/*/*/{ARTIFACT_FILES['grade']}"))


def mark_grades(work: Path, statuses: Iterable[str]) -> int:
    """Mark for retry every grades.json whose judge status is one of ``statuses``; how many were marked."""
    wanted = set(statuses)
    marked = 0
    for path in grade_files(work):
        try:
            grades = json.loads(path.read_text(encoding="utf-8"))
            status = judge_status(grades)
        except (OSError, json.JSONDecodeError):
            continue  # a missing or broken artifact is rebuilt by doit anyway
        if status in wanted:
            touch(f"{path}{RETRY_SUFFIX}")  # via the write guard
            marked += 1
            keys = [k for part in ("rubric", "judge") if isinstance(judged := grades.get(part), dict)
                    for k in judged.get("request_keys") or []]
            ResponseCache(work / "cache").drop_unusable(keys)  # asked anew, not answered from what was set aside
    return marked


def grade_current(cfg: Config, system: System, case: Case, grade_config: str) -> bool:
    """The (system, case)'s grades.json is current: the next run's grade task will not run (same
    inputs and grade slice as recorded, no retry marker), so it asks no model.

    ``grade_config`` is ``digest(grade_slice(cfg))``, computed once by the caller.
    """

    work = cfg.work_path
    path = artifact_path(work, "grade", system.name, case.suite, case.id)
    if not path.exists() or marked_for_retry(path):
        return False
    try:
        output = read_optional(artifact_path(work, "generate", system.name, case.suite, case.id), "generate")
        execution = read_optional(artifact_path(work, "execute", system.name, case.suite, case.id), "execute")
        grades = read_optional(path, "grade")
    except (OSError, ValueError):
        return False
    if output is None or grades is None or grades.provenance is None:
        return False
    inputs = digest([output.provenance, execution.provenance if execution else None, case.digest])
    return grades.provenance.inputs == inputs and grades.provenance.config == grade_config


def endpoint_slice(cfg: Config) -> dict[str, Any]:
    """How the judge is reached: outside the grade slice (a verdict stays valid), watched apart."""
    judge = cfg.judge
    return {"base_url": judge.base_url, "use_cache": judge.use_cache}


def endpoint_changed(cfg: Config) -> int:
    """When ``endpoint_slice`` differs from the last run's, mark every output without a verdict for
    regrading; how many were marked (0 on the first run or when nothing changed)."""

    path = cfg.work_path / "slices" / "grade-endpoint.json"
    text = pretty_json(endpoint_slice(cfg))
    try:
        before: str | None = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = None
    if before == text:
        return 0
    atomic_write_text(path, text)
    return 0 if before is None else mark_grades(cfg.work_path, NO_VERDICT)
