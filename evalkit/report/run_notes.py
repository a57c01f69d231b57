"""What the report says about how the run ran: judge notes, where tests executed, isolation notes, the container
budget, cluster workers."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any, Iterable

from evalkit.artifacts import ARTIFACT_FILES, ScoresArtifact
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.executors.cluster_record import RECORD, ClusterRun
from evalkit.isolation import IsolationDecision, for_run
from evalkit.kind_registry import kind
from evalkit.fsutil import atomic_write_json
from evalkit.llm.settings import JudgeSettings, missing_key
from evalkit.report.models import WorkerRow
from evalkit.sandbox.budget import BudgetRecord, ran as budget_ran
from evalkit.stat_memo import StatMemo

#: What the container budget did in the last run that started containers (evalkit.sandbox.budget).
BUDGET_RECORD = "sandbox-run.json"


def judge_notes(scores: Iterable[ScoresArtifact], settings: JudgeSettings | None = None) -> set[str]:
    """Say plainly when model-graded metrics are missing, and why (``settings``: the judge's, for its key's name)."""

    counts = Counter(s.judge_status for s in scores if s.judge_status)
    notes = set()
    if counts.get("not_configured"):
        notes.add(f"LLM judge not configured ({missing_key(settings)}): {counts['not_configured']} outputs "
                  "have no model-graded scores; the deterministic graders still score them.")
    if counts.get("not_judged_budget"):
        notes.add(f"Not judged: budget reached for {counts['not_judged_budget']} outputs (judge.budget_usd).")
    if counts.get("infra_error"):
        notes.add(f"{counts['infra_error']} outputs have no judge verdict: the judge API failed "
                  "(retried on the next run).")
    if counts.get("judge_error"):
        notes.add(f"{counts['judge_error']} outputs have no judge verdict: the judge's answer stayed unusable "
                  "after one repair request (judge_error, raw answer kept; not cached, re-asked only by "
                  "`evalkit run --retry-judge-errors`).")
    notes.update(f"Judge provider notice: {n}" for s in scores for n in s.judge_notices)
    return notes


def run_isolation(cfg: Config, pairs: list[tuple[Any, Case]]) -> IsolationDecision | None:
    """Where this run's tests executed, as decided when it started (the execute slice records it);
    None when no suite of the run executes tests."""

    if not any(kind(case.kind).execution.executed for _, case in pairs):
        return None
    try:
        data = json.loads((cfg.work_path / "slices" / "execute.json").read_text(encoding="utf-8"))
        return IsolationDecision.model_validate(data["isolation"])
    except (FileNotFoundError, KeyError, TypeError, ValueError):
        return for_run(cfg.sandbox.backend)


def budget_notes(cfg: Config, pairs: list[tuple[Any, Case]]) -> set[str]:
    """The container budget's line (its limit, the containers started, its back-offs): this process's when it
    started containers (then kept in ``<work>/sandbox-run.json``), else the last such run's; none when no
    suite of the run executes tests or no container ever ran here."""

    if not any(kind(case.kind).execution.executed for _, case in pairs):
        return set()
    path = cfg.work_path / BUDGET_RECORD
    rec = budget_ran()
    if rec is not None:
        atomic_write_json(path, rec)
    else:
        try:
            rec = BudgetRecord.model_validate_json(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return set()
    return {rec.note()}


def isolation_notes(cfg: Config, pairs: list[tuple[Any, Case]]) -> dict[str, list[str]]:
    """Suite name -> notes on tests that ran without container isolation (read from the execute artifacts of the
    kinds that execute tests: a kind that does not has none to open, 4,000 failed opens in a 1,000 x 4 run; each
    artifact's `isolation` kept from the last run while its stat is the same, `evalkit.stat_memo`)."""
    notes: dict[str, set[str]] = defaultdict(set)
    work, name = str(cfg.work_path), ARTIFACT_FILES["execute"]
    executes = {k: kind(k).execution.executed for k in {case.kind for _, case in pairs}}
    memo: StatMemo[object] = StatMemo(cfg.work_path / "cache" / "facts-isolation.pickle")
    for system, case in pairs:
        if not executes[case.kind]:
            continue
        if memo.get(f"{work}/artifacts/{system.name}/{case.suite}/{case.id}/{name}", _isolation) == "local":
            notes[case.suite].add("Tests ran in the local sandbox (subprocesses on the build host), without container isolation.")
    memo.save()
    return {k: sorted(v) for k, v in notes.items()}


def _isolation(data: bytes) -> object:
    """An execute artifact's `isolation` field."""
    return json.loads(data).get("isolation")


def _worker(data: bytes) -> object:
    """An artifact's `provenance.worker` (None for a file that is not an artifact's JSON)."""
    try:
        return (json.loads(data).get("provenance") or {}).get("worker")
    except ValueError:
        return None


def cluster_workers(cfg: Config, pairs: list[tuple[Any, Case]]) -> list[WorkerRow]:
    """Each cluster worker that made artifacts of this report: its calls (generate, execute, grade: counted
    from the artifacts' ``provenance.worker``) and, from the last cluster run's record
    (``<work>/cluster-run.json``), the calls and time it spent there. Empty when no cluster run ever wrote
    here (a local run opens no artifact to find that out)."""

    if not (cfg.work_path / RECORD).exists():
        return []
    calls: Counter[str] = Counter()
    work = str(cfg.work_path)
    memo: StatMemo[object] = StatMemo(cfg.work_path / "cache" / "facts-worker.pickle")
    for system, case in pairs:
        for stage in ("generate", "execute", "grade"):
            worker = memo.get(f"{work}/artifacts/{system.name}/{case.suite}/{case.id}/{ARTIFACT_FILES[stage]}", _worker)
            if worker and isinstance(worker, str):
                calls[worker] += 1
    memo.save()
    try:
        record: ClusterRun | None = ClusterRun.model_validate_json((cfg.work_path / RECORD).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        record = None
    rows = []
    for worker, n in sorted(calls.items()):
        stats = record.workers.get(worker) if record is not None else None
        rows.append(WorkerRow(address=worker, calls=n, last_run_calls=stats.calls if stats else None,
                              last_run_seconds=round(stats.seconds, 3) if stats else None))
    return rows
