"""What evalkit adds to doit so that checking a graph of 12,000 tasks stays cheap.

doit 0.37 does per-task work that is fine for a build of fifty files and adds up on an
evaluation of 1,000 cases x 4 systems x 3 stages. Three replacements, each doing what doit does:

- `BulkSqliteDB`: doit's sqlite3 backend, except that every task's saved state is read in one
  query once a run asks for more than a few (doit issues one `select` per task). Same file, table and JSON: either backend reads what
  the other wrote. Registered as the doit backend `evalkit-sqlite3` (entry point group
  `doit.BACKEND` in pyproject.toml); `backend_name()` falls back to doit's `sqlite3` when the
  package was installed before that entry point existed.
- `MD5Checker`: doit's MD5Checker with a stat memo for the run: a file is stat'ed once, not once
  per task that lists it (a case file by every system, an artifact as a target and by every later
  stage). An atomic write (`evalkit.fsutil`) drops the path from the memo, so a task always sees
  the artifact an earlier task of the same run wrote.
- `add_implicit_task_dep`: doit links a file_dep to the task that makes it with a list
  membership test per file, quadratic for summarize's 4,000 score files (0.09 s per run); the
  same links, in the same order, with a set.
- `PriorityReady`: doit's queue of tasks ready to dispatch, served by the ``priority`` in a task's ``meta``
  (lower first, doit's own order among equals; a task without one is `DEFAULT_PRIORITY`). doit dispatches in
  the order it meets tasks, stage by stage; evalkit puts the sandbox's tasks (and the answers they wait on)
  first, so that its containers, the longest tasks of a first run, start while the cheap tasks fill the other
  jobs (evalkit.tasks `FIRST` and `EARLY`, docs/operations/performance.md).
- `ExecutedOnlyReporter`: doit's reporter of that name, which also freezes the heap
  (`gc.freeze()`) when the run starts. The task graph is a few hundred thousand objects that live
  until the end; Python's full garbage collections would scan all of them again and again while
  the actions run (0.5-0.7 s of a one-case rerun on 12,000 tasks). Frozen objects are never
  scanned; what the actions create is collected as usual. Frozen again before summarize and render
  (`FREEZE_BEFORE`), the last and most allocating actions.
"""

from __future__ import annotations

import gc
import os
from collections import deque
from typing import TYPE_CHECKING, Any, Iterable, Protocol, Sequence

from doit.control import ExecNode, TaskControl, TaskDispatcher
from doit.dependency import MD5Checker as _DoitMD5Checker
from doit.dependency import get_file_md5
from doit.dependency import SqliteDB
from doit.reporter import ExecutedOnlyReporter as _DoitExecutedOnlyReporter

from evalkit import fsutil
from evalkit.plugins import installed_entry_points

if TYPE_CHECKING:
    from doit.task import Task

BACKEND_NAME = "evalkit-sqlite3"


def backend_name() -> str:
    """`evalkit-sqlite3` when its entry point is installed, else doit's `sqlite3` (same database)."""

    return BACKEND_NAME if any(ep.name == BACKEND_NAME for ep in installed_entry_points().select(group="doit.BACKEND")) else "sqlite3"


class TaskCodec(Protocol):
    """How doit's backends turn a task's saved state into text and back (doit.dependency.JSONCodec)."""

    def encode(self, data: dict[str, Any]) -> str: ...

    def decode(self, data: str) -> dict[str, Any]: ...


class BulkSqliteDB(SqliteDB):
    """doit's SqliteDB with every saved row loaded in one query once a run asks for many, decoded on first use.

    A run limited to the tasks a change reaches (evalkit.uptodate_manifest: a one-case edit loads ~20 of 14,000)
    asks for a few rows: those are read one query each, as doit does, and the 14,000 are not read at all (0.04 s).
    Past `ONE_BY_ONE` lookups the rest are read in one query."""

    desc = "sqlite3 (doit's format), all task states read in one query"

    ONE_BY_ONE = 64
    """Rows read one query each before the whole table is read in one."""

    def __init__(self, name: str, codec: TaskCodec, *, module_name: str | None = None) -> None:
        super().__init__(name, codec, module_name=module_name)
        self._raw: dict[str, str] | None = None
        self._lookups = 0

    def _rows(self) -> dict[str, str]:
        if self._raw is None:
            # An expression has no declared type, so doit's registered json converter does not
            # run: rows stay undecoded until a task is asked for (`doit list` asks for none).
            cur = self._conn.execute("select task_id, task_data || '' as raw from doit")
            self._raw = {row["task_id"]: row["raw"] for row in cur}
        return self._raw

    def _row(self, task_id: str) -> str | None:
        """One task's saved state as text (None: none saved), from the whole table once `ONE_BY_ONE` were asked."""
        if self._raw is None and self._lookups < self.ONE_BY_ONE:
            self._lookups += 1
            found = self._conn.execute("select task_data || '' as raw from doit where task_id=?", (task_id,)).fetchone()
            return found["raw"] if found else None
        return self._rows().get(task_id)

    def _get_task_data(self, task_id: str) -> dict[str, Any]:
        raw = self._row(task_id)
        return self.codec.decode(raw) if raw is not None else {}

    def in_(self, task_id: str) -> bool:
        return task_id in self._cache or self._row(task_id) is not None

    def remove(self, task_id: str) -> None:
        super().remove(task_id)
        if self._raw is not None:
            self._raw.pop(task_id, None)

    def remove_all(self) -> None:
        super().remove_all()
        self._raw = {}


class MD5Checker(_DoitMD5Checker):
    """doit's MD5Checker with a per-run stat memo that atomic writes invalidate.

    Same class name as doit's, so the states doit saved stay valid (doit drops a task's state
    when the checker's name changes).
    """

    def __init__(self) -> None:
        self._stats: dict[str, os.stat_result] = {}
        fsutil.on_replace(self._forget)

    def _forget(self, path: str) -> None:
        self._stats.pop(path, None)

    def info(self, file_path: str) -> os.stat_result:
        st = self._stats.get(file_path)
        if st is None:
            st = self._stats[file_path] = os.stat(file_path)
        return st

    def exists(self, file_path: str) -> bool:
        try:
            self.info(file_path)
        except OSError:
            return False
        return True

    def get_state(self, dep: str, current_state: Sequence[object] | None) -> tuple[float, int, str] | None:
        """doit's state of a file_dep after its task ran, from the stat its check took (doit stats it twice more, for
        the time and the size: 8,000 calls after summarize's 4,000 scores). A task does not write its own file_deps,
        and a task of this run that wrote one dropped it from the memo; an edit from outside between the check and
        now is seen by the next run, whose stat then differs from the time saved here."""
        st = self.info(dep)
        if current_state and current_state[0] == st.st_mtime:  # unchanged: doit keeps the saved state
            return None
        return st.st_mtime, st.st_size, get_file_md5(dep)


class ExecutedOnlyReporter(_DoitExecutedOnlyReporter):
    """doit's `executed-only` reporter; freezes the heap when the run starts (see the module doc)."""

    def initialize(self, tasks: dict[str, Task], selected_tasks: list[str]) -> None:
        super().initialize(tasks, selected_tasks)
        gc.freeze()

    def execute_task(self, task: Task) -> None:
        super().execute_task(task)
        if task.name.partition(":")[0] in FREEZE_BEFORE:
            gc.freeze()  # what the run built since it started (doit's decoded states of every task checked) lives on too


FREEZE_BEFORE = ("summarize", "render")
"""Tasks before which the heap is frozen again: by then doit has checked every task and holds the states it decoded
(~250,000 objects on 1,000 cases x 4 systems), which the full collections while summarize and render allocate
would otherwise scan again and again (~0.1-0.2 s of a one-case rerun)."""


def add_implicit_task_dep(targets: dict[str, str], task: Task, deps_list: Iterable[str]) -> None:
    """doit's TaskControl.add_implicit_task_dep with a set for the membership test."""
    have = set(task.task_dep)
    for dep in deps_list:
        name = targets.get(dep)
        if name is not None and name not in have:
            task.task_dep.append(name)
            have.add(name)


TaskControl.add_implicit_task_dep = staticmethod(add_implicit_task_dep)  # type: ignore[method-assign]

DEFAULT_PRIORITY = 2
"""The priority of a task whose ``meta`` gives none (lower is dispatched first)."""


def priority(task: Task) -> int:
    """A task's ``meta["priority"]``, else `DEFAULT_PRIORITY`."""
    meta = task.meta
    return DEFAULT_PRIORITY if not meta else int(meta.get("priority", DEFAULT_PRIORITY))


class PriorityReady:
    """doit's ready queue (a deque of ExecNode: `append`, `popleft`, truth) served by priority, first in first
    out among equals: with every task at one priority, doit's own order."""

    def __init__(self) -> None:
        self._queues: dict[int, deque[ExecNode]] = {}
        self._order: list[int] = []  # the priorities seen, ascending
        self._size = 0

    def append(self, node: ExecNode) -> None:
        meta = node.task.meta  # `priority`, inlined: a no-op rerun queues every one of its 13,000 tasks
        p = DEFAULT_PRIORITY if not meta else meta.get("priority", DEFAULT_PRIORITY)
        queue = self._queues.get(p)
        if queue is None:
            queue = self._queues[p] = deque()
            self._order = sorted(self._queues)
        queue.append(node)
        self._size += 1

    def popleft(self) -> ExecNode:
        if self._size == 0:
            raise IndexError("pop from an empty PriorityReady")
        self._size -= 1
        for p in self._order:
            queue = self._queues[p]
            if queue:
                return queue.popleft()
        raise AssertionError("PriorityReady lost count of its nodes")

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0


_doit_task_dispatcher = TaskControl.task_dispatcher


def task_dispatcher(self: TaskControl) -> TaskDispatcher:
    """doit's TaskControl.task_dispatcher with a `PriorityReady` queue."""
    dispatcher = _doit_task_dispatcher(self)
    dispatcher.ready = PriorityReady()  # type: ignore[assignment]
    return dispatcher


TaskControl.task_dispatcher = task_dispatcher  # type: ignore[method-assign]
