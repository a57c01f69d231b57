"""The no-op fast path of `evalkit run` and its limited doit run: doit checks only what a change reaches.

doit decides what to run from three things only: the task dicts the generators yield (names, file_deps,
targets, task_deps, `uptodate` values), the files those dicts name (a file_dep's timestamp, size and
MD5; a target's existence) and its database of saved states (`doit.sqlite3`).

After every successful run this module records, per task, what makes doit find it up to date
(`uptodate-tasks.pickle`): the digest of its dict, with the (mtime_ns, ctime_ns, size, inode) of every file_dep
and target and of the database. A task is recorded when doit decides it from those alone (known keys, every
`uptodate` a plain `True`, a file_dep or an `uptodate`) and: it was not given to doit and none of its files
changed; or doit found it up to date and none of its files changed; or doit ran it and doit's own check
(`Dependency.get_status` on the database, asked after the run) finds it up to date.

The next run generates the dicts as usual (so discovery, slices, retry markers and redo-bugs are all computed
again). When every task was recorded, the graph's digest is unchanged and every stat matches, doit would
check 14,000 tasks to find nothing to do, so evalkit skips it (`unchanged_since_last_noop`), and says again how the
run that saved the manifest ended (`RunEnd`: its summary table and exit status). Otherwise, with
the same settings (`EVALKIT_*`, `--strict`, DOIT_CONFIG) and an unchanged database, doit is given only the
tasks not known up to date (a new or changed dict, a task doit must decide itself, a file whose stat changed)
and everything downstream of them (a file_dep another of them makes, a task_dep, a group): `affected` and
`limited_module`. A task left out is one doit would skip; a file it made is a plain file to doit; doit keeps
the database rows of tasks it did not load (it writes back only the tasks it ran). Anything else runs doit on
every task: other settings, `doit forget` or `doit ignore` (the database changed), a dict key naming other
tasks (setup, calc_dep, getargs), a task selection on the command line, a creator that raises. The manifests are deleted before every run of doit, so a run that fails
or is killed leaves none.
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

from evalkit.code_digest import code_digest
from evalkit.fsutil import atomic_write_bytes, remove
from evalkit.noop_gate import Stat, stat_of

if TYPE_CHECKING:
    from doit.task import Task

MANIFEST = Path("cache") / "uptodate-manifest.pickle"
"""Below the work folder: the no-op manifest (the whole graph's digest and every stat)."""
TASKS_MANIFEST = Path("cache") / "uptodate-tasks.pickle"
"""Below the work folder: which tasks doit would find up to date, each by its dict's digest, and every stat."""
END = Path("cache") / "run-end.pickle"
"""Below the work folder: how the run that left the no-op manifest ended (`RunEnd`), for a no-op to say again."""
VERSION = 2
KNOWN_KEYS = frozenset({"name", "basename", "actions", "file_dep", "targets", "task_dep", "uptodate", "clean", "io",
                        "doc", "verbosity", "meta"})
"""Task dict keys whose meaning for doit's decision is known: file_dep, targets, task_dep and uptodate are
digested and stat'ed; the rest do not change whether a task runs (``meta`` holds the dispatch priority,
evalkit.doitplus.PriorityReady: the order, not the choice). Any other key (setup, calc_dep, getargs...)
turns the fast path off."""
UNDIGESTED_ENV = frozenset({"EVALKIT_RUN_ID", "EVALKIT_PROGRESS"})
"""`EVALKIT_*` variables that change neither the graph nor the run's outcome (the run's id, the display)."""

@dataclass
class Tally:
    """What doit's reporter saw: tasks with actions that ran, failed or were ignored, and each task by name."""

    executed: int = 0
    failed: int = 0
    ignored: int = 0
    uptodate: dict[str, Task] = field(default_factory=dict)
    """Tasks doit checked and found up to date, as doit's objects."""
    succeeded: dict[str, Task] = field(default_factory=dict)
    """Tasks doit ran (actions done, state saved), as doit's objects: checked again after the run."""
    not_done: set[str] = field(default_factory=set)
    """Tasks that failed or were ignored."""


def counting_reporter(base: type[Any], tally: Tally) -> type:
    """``base`` (a doit reporter class) that also counts into ``tally``."""

    def execute_task(self: Any, task: Task) -> None:
        if task.actions:
            tally.executed += 1
        base.execute_task(self, task)

    def add_success(self: Any, task: Task) -> None:  # in doit's main thread, whichever runner ran the task
        if task.actions:
            tally.executed += 1
        tally.succeeded[task.name] = task
        base.add_success(self, task)

    def skip_uptodate(self: Any, task: Task) -> None:
        tally.uptodate[task.name] = task
        base.skip_uptodate(self, task)

    def add_failure(self: Any, task: Task, fail: Any) -> None:
        tally.failed += 1
        tally.not_done.add(task.name)
        base.add_failure(self, task, fail)

    def skip_ignore(self: Any, task: Task) -> None:
        tally.ignored += 1
        tally.not_done.add(task.name)
        base.skip_ignore(self, task)

    def runtime_error(self: Any, msg: str) -> None:
        tally.failed += 1
        base.runtime_error(self, msg)

    return type(base.__name__, (base,), {"execute_task": execute_task, "add_success": add_success,
                                         "skip_uptodate": skip_uptodate, "add_failure": add_failure,
                                         "skip_ignore": skip_ignore, "runtime_error": runtime_error})


@dataclass
class Entry:
    """One task dict a creator yielded, with doit's full name for it."""

    name: str
    task: dict[str, Any]
    group: bool
    """A group's header (``{"basename": ..., "name": None}``): loaded on every run, its subtasks are its task_deps."""
    subtask_of: str | None
    checkable: bool
    """Whether doit decides it from its file_deps, targets and database alone (see `_checkable`)."""
    file_dep: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    task_dep: tuple[str, ...] = ()


@dataclass
class Plan:
    """The task dicts of one run, generated once: digested, stat'ed, and handed to doit unchanged (or only the
    tasks a change reaches, `limited_module`)."""

    module: dict[str, Any]
    """doit's namespace: DOIT_CONFIG and a `task_*` creator per group that yields the generated dicts."""
    digest: str | None
    """None: the fast path is off for this graph (see the module doc)."""
    paths: list[str] = field(default_factory=list)
    """Every file_dep and target, once each, in the order the dicts name them; then doit's database (last)."""
    key: str | None = None
    """The digest of the run's settings outside the dicts (run key, `EVALKIT_*`, DOIT_CONFIG); None: no limited run."""
    generated: list[tuple[str, Callable[[], Any], bool, list[dict[str, Any]]]] = field(default_factory=list)
    """(name, creator, whether it returned a single dict, its dicts) in doit's order."""
    entries: list[Entry] = field(default_factory=list)
    creators: list[tuple[str, Callable[[], Any], bool, list[Entry]]] = field(default_factory=list)
    """`generated` with doit's name for each dict; built by `index` (not on the no-op fast path)."""
    groups: set[str] = field(default_factory=set)
    limitable: bool = True
    """False when a dict has a key outside `KNOWN_KEYS` (setup, calc_dep, getargs... name other tasks that a
    limited run might leave out): doit is given every task."""
    _indexed: bool = False
    _digests: dict[str, bytes] | None = None

    def index(self) -> None:
        """Name every dict as doit will (once; before doit loads them: it renames them in place)."""
        if self._indexed:
            return
        self._indexed = True
        for name, fn, single, tasks in self.generated:
            entries, groups = _entries(name[len("task_"):], tasks[0] if single else tasks)
            self.creators.append((name, fn, single, entries))
            self.entries.extend(entries)
            self.groups |= groups
            self.limitable = self.limitable and all(KNOWN_KEYS.issuperset(task) for task in tasks)

    def stats(self) -> list[Stat | None]:
        return [stat_of(p) for p in self.paths]

    def action_names(self) -> list[str]:
        """Every task with actions, by doit's name, in doit's order (what the live display counts)."""
        self.index()
        return [e.name for e in self.entries if not e.group and e.task.get("actions") and not e.name.startswith("_")]

    def unchanged_since_last_noop(self, work: Path, current: list[Stat | None] | None = None) -> bool:
        """A saved manifest with this digest and every stat equal: doit would find nothing to do."""
        if self.digest is None:
            return False
        saved = _load(work / MANIFEST)
        if saved is None or saved.get("digest") != self.digest:
            return False
        return saved.get("stats") == (self.stats() if current is None else current)

    def task_digests(self) -> dict[str, bytes]:
        """Each task's dict digested (before doit loads them: doit rewrites a dict's name in place)."""
        if self._digests is None:
            self.index()
            digests: dict[str, bytes] = {}
            for e in self.entries:
                if e.group or not e.checkable:
                    continue
                try:
                    digests[e.name] = hashlib.sha256(pickle.dumps(e.task, protocol=pickle.HIGHEST_PROTOCOL)).digest()
                except (pickle.PicklingError, TypeError, AttributeError):  # a lambda or local function: always loaded
                    pass
            self._digests = digests
        return self._digests

    def affected(self, work: Path, current: list[Stat | None]) -> set[str] | None:
        """The tasks a limited doit run must load: those not known up to date (a new or changed dict, a task doit
        must decide itself, a file_dep or target whose stat changed) and everything downstream of them (by a
        file_dep that is a task's target, a task_dep, a group). None: run doit on every task (no task manifest,
        other settings, doit's database changed)."""
        self.index()
        if self.key is None or not self.limitable:
            return None
        saved = _load(work / TASKS_MANIFEST)
        if saved is None or saved.get("key") != self.key:
            return None
        try:
            old = dict(zip(saved["paths"], saved["stats"]))
            known: dict[str, bytes] = saved["tasks"]
        except (KeyError, TypeError):
            return None
        if current[-1] is None or old.get(self.paths[-1]) != current[-1]:  # `doit forget`, `doit ignore`...
            return None
        changed = {p for p, st in zip(self.paths, current) if st is None or old.get(p, _MISSING) != st}
        digests = self.task_digests()
        names = {e.name for e in self.entries} | self.groups
        reached: set[str] = set()
        rest: list[Entry] = []
        for e in self.entries:
            if e.group:
                continue
            d = digests.get(e.name)
            if d is None or known.get(e.name) != d or (changed and not (changed.isdisjoint(e.file_dep)
                                                                        and changed.isdisjoint(e.targets))) \
                    or (e.task_dep and not names.issuperset(e.task_dep)):
                reached.add(e.name)
            else:
                rest.append(e)
        # downstream, to a fixpoint: a file_dep another reached task makes, a task_dep on one or on its group
        made = {t for e in self.entries if e.name in reached for t in e.targets}
        reached |= {e.subtask_of for e in self.entries if e.subtask_of is not None and e.name in reached}
        while rest:
            new = [e for e in rest if not made.isdisjoint(e.file_dep) or (e.task_dep and not reached.isdisjoint(e.task_dep))]
            if not new:
                break
            for e in new:
                reached.add(e.name)
                made.update(e.targets)
                if e.subtask_of is not None:
                    reached.add(e.subtask_of)
            rest = [e for e in rest if e.name not in reached]
        return reached - self.groups

    def left_out(self, load: set[str] | None) -> frozenset[str]:
        """The targets of the tasks a run limited to ``load`` leaves out (none for a run of every task). Each had no
        `.retry` marker when the dicts were made (a marked task is never known up to date: its `uptodate` is False),
        and no task writes another's marker, so each has none after the run: `evalkit.run_status` need not ask."""
        if load is None:
            return frozenset()
        self.index()
        return frozenset(t for e in self.entries if not e.group and e.name not in load for t in e.targets)

    def limited_module(self, load: set[str]) -> dict[str, Any]:
        """doit's namespace with the tasks of ``load`` only (and every group's header). A task_dep on a task left
        out (known up to date: doit would skip it) is dropped; a file_dep made by one is a plain file to doit."""
        module = {k: v for k, v in self.module.items() if not k.startswith("task_")}
        present = load | self.groups
        every = {e.name for e in self.entries} | self.groups
        for name, fn, single, entries in self.creators:
            kept = [_trim(e.task, present, every) for e in entries if e.group or e.name in load]
            if single:
                module[name] = _replay(fn, kept[0] if kept else None)
            else:
                module[name] = _replay(fn, kept)
        config = dict(module.get("DOIT_CONFIG", {}))
        if "default_tasks" in config:
            config["default_tasks"] = [t for t in config["default_tasks"] if t in present]
        module["DOIT_CONFIG"] = config
        return module

    def save(self, work: Path, before: list[Stat | None], tally: Tally, load: set[str] | None,
             dep_file: str, backend: str) -> bool:
        """Record which tasks doit would now find up to date, for the next run (`affected`), and the no-op
        manifest when that is every task. A task is recorded when its dict is digested and doit decides it from
        files alone, and: it was not loaded and none of its files changed during the run; or doit found it up to
        date and none of its files changed; or doit ran it and doit's own check, asked after the run
        (`doit_uptodate`), finds it up to date. Files are stat'ed before that check and after it: an edit
        during the check saves nothing."""
        digests = self.task_digests()
        if self.key is None:
            return False
        entries = [e for e in self.entries if not e.group]
        if load is None:
            after = self.stats()
        else:  # a file of a task not loaded keeps its stat from before the run: unchanged then, or changed next run
            after = list(before)
            index = {p: i for i, p in enumerate(self.paths)}
            for i in {index[p] for e in entries if e.name in load for p in (*e.file_dep, *e.targets)}:
                after[i] = stat_of(self.paths[i])
            after[-1] = stat_of(self.paths[-1])
        moved = {p for p, b, a in zip(self.paths, before, after) if a is None or a != b}
        known: dict[str, bytes] = {}
        check: list[tuple[Entry, bytes]] = []
        for e in entries:
            d = digests.get(e.name)
            if d is None or e.name in tally.not_done:
                continue
            same = moved.isdisjoint(e.file_dep) and moved.isdisjoint(e.targets)
            if load is not None and e.name not in load:
                if same:
                    known[e.name] = d
            elif e.name in tally.uptodate and same:
                known[e.name] = d
            elif e.name in tally.succeeded or e.name in tally.uptodate:
                check.append((e, d))
        if check:
            tasks = [tally.succeeded.get(e.name) or tally.uptodate[e.name] for e, _ in check]
            ok = doit_uptodate(dep_file, backend, tasks)
            index = {p: i for i, p in enumerate(self.paths)}
            for e, d in check:
                if e.name not in ok:
                    continue
                paths = [index[p] for p in (*e.file_dep, *e.targets)]
                if all(after[i] is not None and stat_of(self.paths[i]) == after[i] for i in paths):  # unchanged over the check
                    known[e.name] = d
            after[-1] = stat_of(self.paths[-1])
        if after[-1] is None:
            return False
        atomic_write_bytes(work / TASKS_MANIFEST, pickle.dumps(
            {"version": VERSION, "key": self.key, "paths": self.paths, "stats": after, "tasks": known,
             "loaded": -1 if load is None else len(load)}, protocol=pickle.HIGHEST_PROTOCOL))
        if self.digest is not None and len(known) == len(entries):
            atomic_write_bytes(work / MANIFEST, pickle.dumps({"version": VERSION, "digest": self.digest, "stats": after},
                                                             protocol=pickle.HIGHEST_PROTOCOL))
        return True


_MISSING = object()


def _load(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as fh:
            saved = pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError, ImportError):
        return None
    if not isinstance(saved, dict) or saved.get("version") != VERSION:
        return None
    return saved


def _trim(task: dict[str, Any], present: set[str], every: set[str]) -> dict[str, Any]:
    """``task`` without the task_deps on tasks that exist but are not loaded."""
    deps = task.get("task_dep")
    if not deps or all(d in present or d not in every for d in deps):
        return task
    return {**task, "task_dep": [d for d in deps if d in present or d not in every]}


def doit_uptodate(dep_file: str, backend: str, tasks: list[Task]) -> set[str]:
    """The names of ``tasks`` that doit's own check (`Dependency.get_status` on its database, doit's MD5Checker)
    finds up to date now; none when the database is not doit's sqlite3 or the check fails."""
    if not tasks or backend not in SQLITE_BACKENDS:
        return set()
    from doit.dependency import Dependency, JSONCodec, MD5Checker, SqliteDB  # deferred: doit, only after a run that ran tasks

    try:
        dep = Dependency(SqliteDB, dep_file, checker_cls=MD5Checker, codec_cls=JSONCodec)
    except Exception:
        return set()
    try:
        return {t.name for t in tasks if dep.get_status(t, {}).status == "up-to-date"}
    except Exception:  # a missing file_dep, a database error: nothing is known
        return set()
    finally:
        dep.backend._conn.close()  # read only: nothing is written back


SQLITE_BACKENDS = ("sqlite3", "evalkit-sqlite3")
"""doit backends whose database `doit_uptodate` reads (evalkit's is doit's sqlite3 format, evalkit.doitplus)."""


def forget(work: Path) -> None:
    """Drop the manifests (before a full run: a run that fails or is killed leaves none)."""
    remove(work / MANIFEST)
    remove(work / TASKS_MANIFEST)
    remove(work / END)


# --- the end of the run that left the manifest, said again by a no-op ----------------------------------------------
# A no-op (`unchanged_since_last_noop`: the graph's digest and every file_dep's and target's stat as the manifest
# saved them) starts from the state the run that saved the manifest ended in: report.json, the artifacts, the retry
# markers (they are in the task dicts) and the case checks are the same files. So its summary table and exit status
# are that run's, and reading report.json (building its model), 16,000 retry markers and the artifacts again would
# only say them again: the end is kept beside the manifest, for the manifest file's stat (a new one at every run
# that saves it), the options that shape it and evalkit's code.

@dataclass(frozen=True)
class RunEnd:
    """The end of a whole `evalkit run` (no task selection): the summary table as printed (None: not printed, or
    printed to a terminal), the pending retries it showed, the exit status and its lines."""

    summary: str | None
    retries: dict[tuple[str, str], str]
    status: int
    lines: list[str]


def end_key(work: Path, options: tuple[object, ...]) -> tuple[object, ...] | None:
    """What a kept end holds for: the no-op manifest's stat, ``options`` and evalkit's code; None without a
    manifest (the run failed, was limited to some tasks, or could not be planned)."""
    manifest = stat_of(str(work / MANIFEST))
    return None if manifest is None else (manifest, options, code_digest())


def keep_end(work: Path, key: tuple[object, ...], end: RunEnd) -> None:
    atomic_write_bytes(work / END, pickle.dumps({"version": VERSION, "key": key, "end": end},
                                                protocol=pickle.HIGHEST_PROTOCOL))


def kept_end(work: Path, key: tuple[object, ...]) -> RunEnd | None:
    """The end kept for ``key`` (`end_key`), or None."""
    saved = _load(work / END)
    end = saved.get("end") if saved is not None and saved.get("key") == key else None
    return end if isinstance(end, RunEnd) else None


def _creators(namespace: dict[str, Any]) -> list[tuple[str, Callable[[], Any]]]:
    """The `task_*` creators in the order doit calls them (by their source line, as doit.loader sorts)."""
    found = [(name, fn) for name, fn in namespace.items() if name.startswith("task_") and callable(fn)]
    return sorted(found, key=lambda item: inspect.getsourcelines(item[1])[1])


def _replay(fn: Callable[[], Any], result: Any) -> Callable[[], Any]:
    """A creator that hands doit what ``fn`` already generated (same name, doc and source line for doit)."""
    if result is None or isinstance(result, dict):
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


def _checkable(task: dict[str, Any]) -> bool:
    """doit decides it from its file_deps, targets and database: known keys, every `uptodate` a plain True, and
    a file_dep or an `uptodate` (without either doit runs it every time)."""
    return _eligible(task) and bool(task.get("file_dep") or task.get("uptodate"))


def _entries(func: str, result: Any) -> tuple[list[Entry], set[str]]:
    """doit's names for what the creator ``task_<func>`` returned (as doit.loader names them), and its groups."""
    if isinstance(result, dict):
        name = result.get("basename", func)
        return [_entry(name, result, False, None)], set()
    entries: list[Entry] = []
    groups: set[str] = set()
    for task in result:
        basename = task.get("basename") or func
        if "name" in task:
            groups.add(basename)
            if task["name"] is None:
                entries.append(Entry(name=basename, task=task, group=True, subtask_of=None, checkable=False))
            else:
                entries.append(_entry(f"{basename}:{task['name']}", task, False, basename))
        else:
            entries.append(_entry(basename, task, False, None))
    if not entries:
        groups.add(func)  # doit makes an empty group of a creator that yields nothing
    return entries, groups


def _entry(name: str, task: dict[str, Any], group: bool, subtask_of: str | None) -> Entry:
    return Entry(name=name, task=task, group=group, subtask_of=subtask_of, checkable=_checkable(task),
                 file_dep=tuple(task.get("file_dep", ())), targets=tuple(task.get("targets", ())),
                 task_dep=tuple(task.get("task_dep", ())))


def plan(namespace: dict[str, Any], dep_file: str, run_key: object) -> Plan:
    """Run every task creator of ``namespace`` once and digest what they yield with ``run_key`` (the run's
    settings that are not in the dicts) and DOIT_CONFIG (its reporter aside: display only)."""
    generated: list[tuple[str, Any]] = []
    module: dict[str, Any] = {k: v for k, v in namespace.items() if not k.startswith("task_")}
    eligible = True
    seen: dict[str, None] = {}
    result_plan = Plan(module=module, digest=None)
    for name, fn in _creators(namespace):
        result = fn()
        tasks = [result] if isinstance(result, dict) else ([] if result is None else list(result))
        module[name] = _replay(fn, result if isinstance(result, dict) else tasks)
        generated.append((name, tasks))
        result_plan.generated.append((name, fn, isinstance(result, dict), tasks))
        for task in tasks:
            eligible = eligible and _eligible(task)
            seen.update(dict.fromkeys(task.get("file_dep", ())))
            seen.update(dict.fromkeys(task.get("targets", ())))
    config = {k: v for k, v in namespace.get("DOIT_CONFIG", {}).items() if k != "reporter"}
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("EVALKIT_") and k not in UNDIGESTED_ENV)
    try:
        result_plan.key = hashlib.sha256(pickle.dumps((VERSION, run_key, env, config),
                                                      protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
    except (pickle.PicklingError, TypeError, AttributeError):
        result_plan.key = None
    if eligible and result_plan.key is not None:
        try:
            result_plan.digest = hashlib.sha256(pickle.dumps((VERSION, run_key, env, config, generated),
                                                             protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
        except (pickle.PicklingError, TypeError, AttributeError):  # a lambda or a local function in a dict
            result_plan.digest = None
    seen[dep_file] = None
    result_plan.paths = list(seen)
    return result_plan
