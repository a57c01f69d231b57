"""Solved examples looked up in a solved-incident store (Kai's index format).

A migration suite names a store in its suite.yaml (``solved_store: PATH``, relative to the suite
folder). A case without a ``solved_example`` of its own then gets one when it is loaded: the store's
incident most similar to one of the case's incidents, among those of the same rule id, written into
``inputs.solved_example`` (``text`` and ``source``), so the system under test (the case JSON of a
command system, the prompt of a model system) and the judge see the same example.

Kai's index (``kai_solved_incidents_index.json``): ``{source, note, incidents: [{ruleset, rule_id,
app, file, line_number, repo, initial_branch, solved_branch, message}]}``; a store may also carry
Kai's solution fields per incident (``file_diff``, ``original_code``, ``updated_code``,
``llm_summary``), which are then part of the example.

Scoring (0-100), per (case incident, store incident of the same rule id):
``score = (file + message) / 2`` where ``file = (ratio(stem) + token_set_ratio(folders)) / 2``
compares the file names without extension (rapidfuzz ``fuzz.ratio``) and the folder paths as sets
of words (``fuzz.token_set_ratio``), and ``message = token_set_ratio`` of the two incident
messages (Kai's messages of one rule share a template and differ in the names they quote, so this
favours the same API). Ties go to the lower (app, file, line), so the choice is stable.

A store incident in the case's own file (either path ending with the other) is never taken: it
would be the case's own answer.

What the case took from the store (the chosen incident and its scores, nothing about the rest of the
store) is part of the case's digest;
the store file itself is one of the case's files only for change detection, not hashed into the
digest. A changed store rereads every case of the suite, but only cases whose example changed get
a new digest, so only their outputs are generated, graded and scored again.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field, ValidationError, field_validator

from evalkit.errors import InputError, Problem
from evalkit.models import FIELD_DOCS, Model
from evalkit.file_cache import StatKeyedCache
from evalkit.yamlio import load_json

if TYPE_CHECKING:
    from evalkit.cases import Case, Suite

LOOKUP_VERSION = 1
"""Bumped when the scoring changes: part of what a case took from the store."""


class StoredIncident(Model):
    """One solved incident of the store (Kai's index; further keys of a newer index are ignored)."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=FIELD_DOCS)

    rule_id: str = Field(min_length=1)
    """Rule that fired, e.g. javax-to-jakarta-import-00001."""
    ruleset: str = ""
    """Ruleset of the rule."""
    app: str = ""
    """Application the incident was in."""
    file: str = ""
    """File of the incident, relative to the application's repository."""
    line_number: int | None = None
    """Line of the incident in the file before the fix."""
    repo: str = ""
    """Repository of the application."""
    initial_branch: str = ""
    """Branch holding the incident."""
    solved_branch: str = ""
    """Branch where it is solved."""
    message: str = ""
    """The incident's message."""
    file_diff: str | None = None
    """Kai's solution: the file's diff between the two branches, when the store has it."""
    original_code: str | None = None
    """Kai's solution: the file before, when the store has it."""
    updated_code: str | None = None
    """Kai's solution: the file after, when the store has it."""
    llm_summary: str | None = None
    """Kai's solution: a summary of the change, when the store has it."""

    @field_validator("initial_branch", "solved_branch", mode="before")
    @classmethod
    def _branch_as_text(cls, v: Any) -> Any:
        """A branch named like a number (`7.1`) came out of Kai's YAML as a number."""
        return str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


class SolvedStore(Model):
    """A solved-incident store file."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=FIELD_DOCS)

    source: str = ""
    """Where the store comes from."""
    note: str = ""
    """What it holds."""
    incidents: list[StoredIncident]
    """The solved incidents."""


class StoreMatch(Model):
    """Where a looked-up solved example comes from, and how close it is."""

    store: str
    """The store file, as the suite names it."""
    rule_id: str
    """Rule the example and the case's incident share."""
    app: str = ""
    """Application of the example."""
    file: str = ""
    """File of the example."""
    line: int | None = None
    """Line of the example's incident."""
    score: float
    """Similarity 0-100: mean of the file similarity and the message similarity."""
    file_score: float
    """File similarity 0-100: mean of the name (ratio) and the folders (token set ratio)."""
    message_score: float
    """Message similarity 0-100 (token set ratio)."""
    lookup_version: int = LOOKUP_VERSION
    """Version of the scoring."""


_stores: StatKeyedCache["Index"] = StatKeyedCache()


def _incident_lines(text: str) -> list[int]:
    """Line where each of the store's ``incidents`` starts (found again on errors only)."""
    decoder = json.JSONDecoder()
    at = text.find("[", text.find('"incidents"'))
    lines: list[int] = []
    if at < 0:
        return lines
    pos = at + 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return lines
        lines.append(text.count("\n", 0, pos) + 1)
        try:
            _, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return lines


Index = dict[str, list[tuple[StoredIncident, int]]]
"""rule id -> one incident per distinct (file, message) of that rule (the first by app and line) and how many share them."""


def index_store(store: SolvedStore) -> Index:
    """The store by rule id, its incidents grouped by (file, message): they score alike."""
    groups: dict[str, dict[tuple[str, str], list[StoredIncident]]] = {}
    for inc in store.incidents:
        groups.setdefault(inc.rule_id, {}).setdefault((inc.file, inc.message), []).append(inc)
    return {rule: [(min(g, key=lambda i: (i.app, i.line_number or 0)), len(g)) for g in by.values()]
            for rule, by in groups.items()}


def load_store(path: Path, shown: str | None = None) -> Index:
    """The index of a store file (cached by path, mtime and size).

    Raises InputError naming file:line for a missing, unreadable, malformed or wrongly shaped store."""
    shown = shown or str(path)
    return _stores.get(path, lambda p: _read_store(p, shown), lambda: InputError(Problem(
        shown, None, "solved-incident store not found (expected Kai's index: a JSON object with `incidents`)")))


def _read_store(path: Path, shown: str) -> Index:
    text, data = load_json(path, shown)
    if not isinstance(data, dict) or not isinstance(data.get("incidents"), list):
        raise InputError(Problem(shown, 1, "expected a JSON object with `incidents`: a list of {rule_id, file, "
                                           "message, ...} (Kai's solved-incident index)"))
    try:
        store = SolvedStore.model_validate(data)
    except ValidationError as exc:
        problems = []
        starts = _incident_lines(text)
        for e in exc.errors()[:10]:
            loc = e.get("loc", ())
            index = loc[1] if len(loc) > 1 and loc[0] == "incidents" and isinstance(loc[1], int) else None
            line = starts[index] if index is not None and index < len(starts) else None
            where = ".".join(str(p) for p in loc)
            problems.append(Problem(shown, line, f"{where}: {e['msg']} (expected an incident with a rule_id, "
                                                 "file and message)"))
        raise InputError(problems) from None
    return index_store(store)


def _same_file(a: str, b: str) -> bool:
    a, b = a.strip("/"), b.strip("/")
    return bool(a and b) and (a == b or a.endswith("/" + b) or b.endswith("/" + a))


def _words(folder: str) -> str:
    return " ".join(p for p in PurePosixPath(folder).parts if p not in ("/", "."))


@functools.lru_cache(maxsize=65536)
def _file_parts(path: str) -> tuple[str, str]:
    p = PurePosixPath(path)
    return p.stem.lower(), _words(str(p.parent)).lower()


def file_similarity(a: str, b: str) -> float:
    """0-100: mean of the file names' (without extension) ratio and the folders' token set ratio."""
    from rapidfuzz import fuzz  # deferred: rapidfuzz, only when answers are matched

    (sa, da), (sb, db) = _file_parts(a), _file_parts(b)
    return (fuzz.ratio(sa, sb) + fuzz.token_set_ratio(da, db)) / 2


def message_similarity(a: str, b: str) -> float:
    """0-100: token set ratio of two incident messages."""
    from rapidfuzz import fuzz  # deferred: rapidfuzz, only when answers are matched

    return fuzz.token_set_ratio(a, b)


def best_match(index: Index, file_path: str, incidents: list[dict[str, Any]],
               shown_store: str) -> tuple[StoredIncident, StoreMatch] | None:
    """The store incident most similar to one of ``incidents`` (same rule id; see the module doc), or None.

    Each distinct (rule, file, message) of the case is compared with each distinct (file, message) of the
    rule's solved incidents once: a case with 30 incidents of one rule with 600 solved ones in 40 files
    costs a few dozen comparisons."""
    from rapidfuzz import fuzz, process  # deferred: rapidfuzz, only when answers are matched

    best: tuple[tuple[Any, ...], StoredIncident, str, float, float] | None = None
    mine = sorted({(i.get("rule_id", ""), i.get("file") or file_path, i.get("message", "")) for i in incidents})
    file_scores: dict[tuple[str, str], float] = {}
    for rule in sorted({r for r, _, _ in mine}):
        groups = index.get(rule, [])
        if not groups:
            continue
        messages = sorted({m for r, _, m in mine if r == rule})
        theirs = sorted({c.message for c, _ in groups})
        at = {m: j for j, m in enumerate(theirs)}
        matrix = process.cdist(messages, theirs, scorer=fuzz.token_set_ratio)  # every pair once, in C
        for i, message in enumerate(messages):
            for own in sorted({o for r, o, m in mine if r == rule and m == message}):
                for cand, _n in groups:
                    if _same_file(cand.file, own) or _same_file(cand.file, file_path):
                        continue
                    fs = file_scores.get((own, cand.file))
                    if fs is None:
                        fs = file_scores[(own, cand.file)] = file_similarity(own, cand.file)
                    ms = float(matrix[i][at[cand.message]])
                    order = (-(fs + ms) / 2, -ms, cand.app, cand.file, cand.line_number or 0, rule)
                    if best is None or order < best[0]:
                        best = (order, cand, rule, fs, ms)
    if best is None:
        return None
    _, cand, rule, fs, ms = best
    return cand, StoreMatch(store=shown_store, rule_id=rule, app=cand.app, file=cand.file, line=cand.line_number,
                            score=round((fs + ms) / 2, 2), file_score=round(fs, 2), message_score=round(ms, 2))


def example_text(inc: StoredIncident) -> str:
    """The solved example as the system and the judge read it."""
    where = f"{inc.file}" + (f", line {inc.line_number}" if inc.line_number else "")
    lines = [f"Rule {inc.rule_id}" + (f" ({inc.ruleset})" if inc.ruleset else "")
             + f" was solved in {inc.app or 'another application'}: {where}"
             + (f" ({inc.repo}, branch {inc.initial_branch} -> {inc.solved_branch})" if inc.repo else "") + ".",
             "Incident message there:", inc.message.strip()]
    if inc.llm_summary:
        lines += ["Summary of the change:", inc.llm_summary.strip()]
    if inc.file_diff:
        lines += ["Diff of the fix:", inc.file_diff.rstrip()]
    elif inc.original_code is not None and inc.updated_code is not None:
        lines += ["Before:", inc.original_code.rstrip(), "After:", inc.updated_code.rstrip()]
    return "\n".join(lines) + "\n"


def store_path(suite_dir: str, spec_path: str) -> Path:
    """The store a suite names, resolved against the suite's folder."""
    p = Path(os.path.expanduser(spec_path))
    return p if p.is_absolute() else Path(suite_dir) / p


def attach_solved_example(case: Case, data: dict[str, Any], suite: Suite, suite_shown: str) -> list[Problem]:
    """Fill ``data["inputs"]["solved_example"]`` of a migration case from its suite's store when the
    case has none; add the store to the case's files. ``suite_shown``: the suite's folder as messages
    show it (ending in ``/``). Problems (a broken store) name the store file and line."""
    spec_path = suite.spec.solved_store if suite.spec is not None else None
    if not spec_path:
        raise ValueError(f"suite {suite.name} names no solved_store")  # its caller asks only for suites that do
    path = store_path(suite.dir, spec_path)
    case.files.append(str(path))
    case.shared_files = [*case.shared_files, str(path)]
    shown = str(path) if Path(spec_path).is_absolute() else os.path.normpath(suite_shown + spec_path)
    try:
        index = load_store(path, shown)
    except InputError as exc:
        return [Problem(p.file, p.line, f"solved_store (named in {suite_shown}suite.yaml): {p.message}")
                for p in exc.problems]
    inputs = data.get("inputs", {})
    found = best_match(index, inputs.get("file_path", ""), inputs.get("incidents", []), spec_path)
    if found is None:
        case.looked_up = {"solved_example": None, "lookup_version": LOOKUP_VERSION}
        return []
    inc, match = found
    example = {"text": example_text(inc), "source": match.model_dump(mode="json")}
    inputs["solved_example"] = example
    case.looked_up = {"solved_example": example, "lookup_version": LOOKUP_VERSION}
    return []


def solved_example_text(case: Case) -> str | None:
    """The solved example of a migration case as text: its own before/after files, or the example
    looked up in its suite's store (``text``); None without one."""
    if case.ref_path("inputs.solved_example.before_file"):
        return (f"Before:\n{case.read('inputs.solved_example.before_file')}\n"
                f"After:\n{case.read('inputs.solved_example.after_file')}")
    solved = getattr(case.inputs, "solved_example", None)  # a migration case's (evalkit.kinds.migration.models.SolvedExample)
    return solved.text if solved is not None and solved.text else None
