"""The no-op fast path of `evalkit run`: skip doit when it has provably nothing to do.

doit decides what to run from three things only: the task dicts the generators yield (names, file_deps,
targets, task_deps, `uptodate` values), the files those dicts name (a file_dep's timestamp, size and
MD5; a target's existence) and its database of saved states (`doit.sqlite3`). After a run in which doit
found **every** task up to date (none executed, none failed, none ignored, exit status 0), this module
saves a manifest: the digest of the task dicts (and of the run's doit settings, `EVALKIT_*` environment
and `--strict`), and the (mtime_ns, ctime_ns, size, inode) of every file_dep, every target and the
database, taken before doit ran and checked unchanged after it. On the next run the generators run as
usual (so discovery, slices, retry markers and redo-bugs are all computed again) and their dicts are
digested; when the digest and every stat match, doit would check 14,000 tasks to find nothing to do, so
evalkit skips it (its `load_tasks` and `run_all`, ≈ 0.8 s of CPU on 1,000 cases × 4 systems).

Anything else takes the full path: another task list or task order, a changed file_dep or target (by any
of the four stat fields: doit compares the timestamp alone before hashing), a deleted or new file, a
`.retry` marker or a bug to redo (`uptodate: [False]` in the dicts), an `uptodate` that is not a plain
`True` (a callable is doit's to call), a dict key this module does not know, a task selection on the
command line (`evalkit run TASK`), a changed `EVALKIT_*` variable or `--strict`. The manifest is deleted
before every full run, so a run that fails or is killed leaves none. The first no-op after any change
pays doit's check once (that is what proves there is nothing to do) and saves the manifest.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from evalkit.fsutil import atomic_write_bytes, remove

if TYPE_CHECKING:
    from doit.task import Task

MANIFEST = Path("cache") / "uptodate-manifest.pickle"
"""Below the work folder."""
VERSION = 1
KNOWN_KEYS = frozenset({"name", "basename", "actions", "file_dep", "targets", "task_dep", "uptodate", "clean", "io",
                        "doc", "verbosity", "meta"})
"""Task dict keys whose meaning for doit's decision is known: file_dep, targets, task_dep and uptodate are
digested and stat'ed; the rest do not change whether a task runs (``meta`` holds the dispatch priority,
evalkit.doitplus.PriorityReady: the order, not the choice). Any other key (setup, calc_dep, getargs...)
turns the fast path off."""
UNDIGESTED_ENV = frozenset({"EVALKIT_RUN_ID", "EVALKIT_PROGRESS"})
"""`EVALKIT_*` variables that change neither the graph nor the run's outcome (the run's id, the display)."""

Stat = tuple[int, int, int, int]


def stat_of(path: str) -> Stat | None:
    """(mtime_ns, ctime_ns, size, inode) of ``path``, or None when it is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


@dataclass
class Tally:
    """What doit's reporter saw: tasks with actions that ran, failed or were ignored."""

    executed: int = 0
    failed: int = 0
    ignored: int = 0

    def nothing_ran(self) -> bool:
        return self.executed == 0 and self.failed == 0 and self.ignored == 0


def counting_reporter(base: type[Any], tally: Tally) -> type:
    """``base`` (a doit reporter class) that also counts into ``tally``."""

    def execute_task(self: Any, task: Task) -> None:
        if task.actions:
            tally.executed += 1
        base.execute_task(self, task)

    def add_success(self: Any, task: Task) -> None:  # in doit's main thread, whichever runner ran the task
        if task.actions:
            tally.executed += 1
        base.add_success(self, task)

    def add_failure(self: Any, task: Task, fail: Any) -> None:
        tally.failed += 1
        base.add_failure(self, task, fail)

    def skip_ignore(self: Any, task: Task) -> None:
        tally.ignored += 1
        base.skip_ignore(self, task)

    def runtime_error(self: Any, msg: str) -> None:
        tally.failed += 1
        base.runtime_error(self, msg)

    return type(base.__name__, (base,), {"execute_task": execute_task, "add_success": add_success, "add_failure": add_failure,
                                         "skip_ignore": skip_ignore, "runtime_error": runtime_error})


@dataclass
class Plan:
    """The task dicts of one run, generated once: digested, stat'ed, and handed to doit unchanged."""

    module: dict[str, Any]
    """doit's namespace: DOIT_CONFIG and a `task_*` creator per group that yields the generated dicts."""
    digest: str | None
    """None: the fast path is off for this graph (see the module doc)."""
    paths: list[str] = field(default_factory=list)
    """Every file_dep and target, once each, in the order the dicts name them; then doit's database (last)."""

    def stats(self) -> list[Stat | None]:
        return [stat_of(p) for p in self.paths]

    def unchanged_since_last_noop(self, work: Path) -> bool:
        """A saved manifest with this digest and every stat equal: doit would find nothing to do."""
        if self.digest is None:
            return False
        try:
            with open(work / MANIFEST, "rb") as fh:
                saved = pickle.load(fh)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError):
            return False
        if not isinstance(saved, dict) or saved.get("version") != VERSION or saved.get("digest") != self.digest:
            return False
        return saved.get("stats") == self.stats()

    def save(self, work: Path, before: list[Stat | None]) -> bool:
        """Save the manifest when every file_dep and target is as it was before doit ran (no edit raced the
        run). doit's database is taken as doit left it: doit commits on every run, even one that changes no row."""
        after = self.stats()
        if self.digest is None or None in after or after[:-1] != before[:-1]:
            return False
        atomic_write_bytes(work / MANIFEST, pickle.dumps({"version": VERSION, "digest": self.digest, "stats": after},
                                                         protocol=pickle.HIGHEST_PROTOCOL))
        return True


def forget(work: Path) -> None:
    """Drop the manifest (before a full run: a run that fails or is killed leaves none)."""
    remove(work / MANIFEST)


def _creators(namespace: dict[str, Any]) -> list[tuple[str, Callable[[], Any]]]:
    """The `task_*` creators in the order doit calls them (by their source line, as doit.loader sorts)."""
    found = [(name, fn) for name, fn in namespace.items() if name.startswith("task_") and callable(fn)]
    return sorted(found, key=lambda item: inspect.getsourcelines(item[1])[1])


def _replay(fn: Callable[[], Any], result: Any) -> Callable[[], Any]:
    """A creator that hands doit what ``fn`` already generated (same name, doc and source line for doit)."""
    if isinstance(result, dict):
        @functools.wraps(fn)
        def single() -> Any:
            return result
        return single

    @functools.wraps(fn)
    def many() -> Iterator[dict[str, Any]]:
        yield from result
    return many


def _eligible(task: dict[str, Any]) -> bool:
    if not KNOWN_KEYS.issuperset(task):
        return False
    return all(u is True for u in task.get("uptodate", ()))


def plan(namespace: dict[str, Any], dep_file: str, run_key: object) -> Plan:
    """Run every task creator of ``namespace`` once and digest what they yield with ``run_key`` (the run's
    settings that are not in the dicts) and DOIT_CONFIG (its reporter aside: display only)."""
    generated: list[tuple[str, Any]] = []
    module: dict[str, Any] = {k: v for k, v in namespace.items() if not k.startswith("task_")}
    eligible = True
    seen: dict[str, None] = {}
    for name, fn in _creators(namespace):
        result = fn()
        tasks = [result] if isinstance(result, dict) else ([] if result is None else list(result))
        module[name] = _replay(fn, result if isinstance(result, dict) else tasks)
        generated.append((name, tasks))
        for task in tasks:
            eligible = eligible and _eligible(task)
            seen.update(dict.fromkeys(task.get("file_dep", ())))
            seen.update(dict.fromkeys(task.get("targets", ())))
    config = {k: v for k, v in namespace.get("DOIT_CONFIG", {}).items() if k != "reporter"}
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("EVALKIT_") and k not in UNDIGESTED_ENV)
    digest = None
    if eligible:
        try:
            digest = hashlib.sha256(pickle.dumps((VERSION, run_key, env, config, generated),
                                                 protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
        except (pickle.PicklingError, TypeError, AttributeError):  # a lambda or a local function in a dict
            digest = None
    seen[dep_file] = None
    return Plan(module=module, digest=digest, paths=list(seen))
