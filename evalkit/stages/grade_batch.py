"""``judge.mode: batch``: the grade stage's model calls go out as Message Batches, before any grade task.

Grade tasks run one per (system, case); a batch needs every request of the run at once. So the
doit graph has one more task, ``judge_batch:run`` (only in batch mode with an API key):

- ``file_dep``: the generate artifacts of every selected (system, case) whose grading asks a model
  (migration, generation, rag) and the grade stage's config slice; ``target``:
  ``<work>/batches/grade.json`` (a record of what was sent). Every grade task has it as
  ``task_dep``, so it runs first; an unchanged run skips it (doit incrementality), and after one
  changed output only that output's uncached requests go out.
- Its action plans the grade calls (``evalkit.llm.plan``: the same plan ``evalkit estimate``
  prices), keeps those not in the response cache and sends them as one batch
  (``evalkit.llm.batch.run_batch``: the batch id is saved under ``<work>/cache/llm-batches/``
  right after creation, so a run killed while it is processing resumes polling the same batch
  and pays nothing twice). Results fill the response cache; then it plans again, because some
  prompts are known only once earlier answers are (ragas' faithfulness verifies the statements
  it extracted first), up to ``MAX_ROUNDS`` batches.
- Grade tasks then read their answers from the cache. Requests a batch could not answer and
  repair requests (after an unusable answer) are sent one by one, at the full price.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from evalkit.fsutil import atomic_write_json
from evalkit.kind_registry import kind
from evalkit.llm.calls import LLMError
from evalkit.llm.settings import configured
from evalkit.project import Loaded, load
from evalkit.stages.batch_record import AskerSpend, BatchRound, GradeBatchRecord, record_path
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.llm import batch as batch_code
    from evalkit.graders import judge_dispatch as judge_dispatch_code
    from evalkit import run_plan as run_plan_code
    from evalkit.tasks import Graph
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    batch_code = later("evalkit.llm.batch")
    judge_dispatch_code = later("evalkit.graders.judge_dispatch")
    run_plan_code = later("evalkit.run_plan")

MAX_ROUNDS = 3
"""Batches per run at most (ragas needs two: statements first, then their verification)."""


def grade_batch(loaded: Loaded, selected: Callable[[str], bool] | None = None) -> GradeBatchRecord:
    """Send the run's uncached grade requests as Message Batches, until none is left to send."""


    cfg = loaded.config
    client = judge_dispatch_code.client_for(cfg)
    record = GradeBatchRecord()
    if client is None:
        return record
    sent: set[str] = set()
    for _ in range(MAX_ROUNDS):
        plan = run_plan_code.plan_run(loaded, stages=("grade",), selected=selected)
        todo: dict[str, Any] = {}
        asker: dict[str, str] = {}
        for call in plan.calls:
            key = client.key(call.request)
            if call.exact and key not in sent and key not in todo and client.cached(call.request) is None:
                todo[key] = call.request
                asker[key] = call.asker
        if not todo:
            break
        sent.update(todo)
        print(f"evalkit: judge.mode batch: sending {len(todo)} grade request(s) as one Message Batch", flush=True)
        answers = batch_code.run_batch(client, list(todo.values()))
        for key, answer in zip(todo, answers):
            spend = record.by_asker.setdefault(asker[key], AskerSpend())
            spend.requests += 1
            if not isinstance(answer, LLMError):
                spend.answered += 1
                spend.cost_usd += answer.cost_usd
        failed = {key: str(a) for key, a in zip(todo, answers) if isinstance(a, LLMError)}
        record.rounds.append(BatchRound(requests=len(todo), answered=len(todo) - len(failed), failed=failed))
    return record


def run_grade_batch(config: str) -> bool:
    """doit action of ``judge_batch:run``: the record is written only when every batch completed."""


    loaded = load(config)
    try:
        record = grade_batch(loaded, run_plan_code.key_selection())
    except LLMError as exc:  # no record: the step runs again next time; grade tasks go one by one now
        print(f"evalkit: judge batch failed ({exc}); grade tasks send their requests one by one", flush=True)
        return True
    atomic_write_json(record_path(loaded.config.work_path), record)
    return True


def batch_task(graph: Graph) -> dict[str, Any] | None:
    """The ``judge_batch:run`` task of ``graph`` (an evalkit.tasks.Graph), or None when not batching."""

    cfg = graph.cfg
    if cfg.judge.mode != "batch" or not configured():
        return None
    deps = [folder + "output.json" for _system, case, folder, _chain, chosen in graph.stage_rows()
            if chosen and kind(case.kind).judging.graded_by_model]
    return {"name": "run", "actions": [(run_grade_batch, [graph.config])],
            "file_dep": deps + [graph.slice_files["grade"]], "targets": [str(record_path(cfg.work_path))],
            "clean": True, "io": {"capture": False}}
