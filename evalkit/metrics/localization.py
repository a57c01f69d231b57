"""Fault localization: which files and functions a gold patch touches, and recall/hit@k of a ranking.

A ranking is scored only where the gold patch defines something to find: with no gold files (or
no gold functions) the metric is None ("not applicable"), never a free 1.0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from evalkit.models import Model
from evalkit.treesitter import SUPPORTED, functions_at_lines

DEV_NULL = "/dev/null"
EXTENSIONS = {"python": (".py",), "java": (".java",)}
"""File name endings parsed for functions in each language; other files count for files only."""

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class Hunk(Model):
    """One ``@@`` block of a unified diff."""

    old_start: int
    """First line of the block in the old file (0 when the old side is empty)."""
    old_len: int
    """Number of old-file lines in the block."""
    new_start: int
    """First line of the block in the new file (0 when the new side is empty)."""
    new_len: int
    """Number of new-file lines in the block."""
    changed_old_lines: list[int] = []
    """Old-file lines the block changes: removed lines, and for a pure insertion the line before it
    (line 1 for an insertion at the top of the file)."""


class FilePatch(Model):
    """The changes of a unified diff to one file."""

    old_path: str
    """Path before the change, ``a/`` stripped; ``/dev/null`` for an added file."""
    new_path: str
    """Path after the change, ``b/`` stripped; ``/dev/null`` for a removed file."""
    hunks: list[Hunk] = []
    """The file's ``@@`` blocks in order."""


class GoldLocations(Model):
    """Where the gold patch changes the code."""

    files: list[str]
    """Changed files by their pre-patch path (the new path for added files), in patch order."""
    functions: list[str]
    """Functions enclosing changed pre-patch lines, as ``path::Class.method``, in patch order."""


class LocalizationAtK(Model):
    """Recall and hit of the file and function rankings within the top k."""

    k: int
    """Cut-off."""
    file_recall: float | None
    """Share of gold files in the top k files; None without gold files."""
    file_hit: float | None
    """1.0 when any gold file is in the top k files, else 0.0; None without gold files."""
    function_recall: float | None
    """Share of gold functions in the top k functions; None without gold functions."""
    function_hit: float | None
    """1.0 when any gold function is in the top k functions, else 0.0; None without gold functions."""


class LocalizationResult(Model):
    """Localization metrics of one ranked answer against the gold locations."""

    n_gold_files: int
    """Number of distinct gold files."""
    n_gold_functions: int
    """Number of distinct gold functions."""
    at_k: list[LocalizationAtK]
    """One entry per cut-off, ascending k."""

    def as_metrics(self) -> dict[str, float | None]:
        """Flat metrics such as ``file_recall@1``, ``file_hit@3``, ``function_recall@5``."""
        out: dict[str, float | None] = {}
        for row in self.at_k:
            for name in ("file_recall", "file_hit", "function_recall", "function_hit"):
                out[f"{name}@{row.k}"] = getattr(row, name)
        return out


def _strip_path(raw: str, prefix: str) -> str:
    path = raw.split("\t", 1)[0].strip()
    if path == DEV_NULL:
        return path
    if path.startswith(prefix):
        path = path[len(prefix):]
    return path


def parse_unified_diff(patch: str) -> list[FilePatch]:
    """Files and hunks of a unified (git) diff, with the old-file lines each hunk changes."""
    files: list[FilePatch] = []
    lines = patch.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            files.append(
                FilePatch(
                    old_path=_strip_path(line[4:], "a/"),
                    new_path=_strip_path(lines[i + 1][4:], "b/"),
                )
            )
            i += 2
            continue
        m = _HUNK.match(line)
        if m and files:
            hunk, i = _read_hunk(m, lines, i + 1)
            files[-1].hunks.append(hunk)
            continue
        i += 1
    return files


def _read_hunk(m: re.Match[str], lines: list[str], i: int) -> tuple[Hunk, int]:
    old_start, new_start = int(m.group(1)), int(m.group(3))
    old_len = int(m.group(2)) if m.group(2) is not None else 1
    new_len = int(m.group(4)) if m.group(4) is not None else 1
    old_left, new_left = old_len, new_len
    old_no = old_start  # number of the next old line
    changed: list[int] = []
    removed_in_block = False
    while i < len(lines) and (old_left > 0 or new_left > 0):
        text = lines[i]
        tag = text[:1]
        if tag == "-":
            changed.append(old_no)
            old_no += 1
            old_left -= 1
            removed_in_block = True
        elif tag == "+":
            if not removed_in_block:
                # pure insertion: attribute it to the old line before the insertion point
                changed.append(max(1, old_no - 1))
                removed_in_block = True
            new_left -= 1
        elif tag == "\\":
            pass  # "\ No newline at end of file"
        else:  # context line (" " or an empty line some tools leave)
            old_no += 1
            old_left -= 1
            new_left -= 1
            removed_in_block = False
        i += 1
    while i < len(lines) and lines[i].startswith("\\"):
        i += 1
    hunk = Hunk(
        old_start=old_start,
        old_len=old_len,
        new_start=new_start,
        new_len=new_len,
        changed_old_lines=list(dict.fromkeys(changed)),
    )
    return hunk, i


def normalise_path(path: str) -> str:
    """Strip a leading ``./`` and one diff prefix ``a/`` or ``b/`` (in a function name: its path)."""
    while path.startswith("./"):
        path = path[2:]
    if path.startswith(("a/", "b/")):
        path = path[2:]
    return path


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(normalise_path(item) for item in items))


def gold_locations(
    patch: str, read_source: Callable[[str], str | None], language: str
) -> GoldLocations:
    """Files and functions the gold ``patch`` changes, functions found in the PRE-patch source.

    ``read_source(path)`` returns a file's pre-patch text or None when it is not available; files
    without source, added files and files not in ``language`` (see EXTENSIONS) add no functions,
    and an unsupported language gives no functions at all.
    """
    files: list[str] = []
    functions: list[str] = []
    for fp in parse_unified_diff(patch):
        path = fp.old_path if fp.old_path != DEV_NULL else fp.new_path
        files.append(path)
        if fp.old_path == DEV_NULL or language not in SUPPORTED:
            continue
        if not fp.old_path.endswith(EXTENSIONS[language]):
            continue
        source = read_source(fp.old_path)
        if source is None:
            continue
        lines = [n for h in fp.hunks for n in h.changed_old_lines]
        functions.extend(f"{fp.old_path}::{name}" for name in functions_at_lines(source, language, lines))
    return GoldLocations(files=_unique(files), functions=_unique(functions))


def _top_k(ranked: Sequence[str], k: int) -> set[str]:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return set(_unique(ranked)[:k])


def recall_at_k(ranked: Sequence[str], gold: Sequence[str], k: int) -> float | None:
    """Share of the gold items among the first k distinct ranked items; None when gold is empty."""
    wanted = set(_unique(gold))
    top = _top_k(ranked, k)
    if not wanted:
        return None
    return len(wanted & top) / len(wanted)


def hit_at_k(ranked: Sequence[str], gold: Sequence[str], k: int) -> float | None:
    """1.0 when any gold item is among the first k distinct ranked items, else 0.0; None when
    gold is empty."""
    wanted = set(_unique(gold))
    top = _top_k(ranked, k)
    if not wanted:
        return None
    return 1.0 if wanted & top else 0.0


def localization(
    ranked_files: Sequence[str],
    ranked_functions: Sequence[str],
    gold: GoldLocations,
    ks: Sequence[int] = (1, 3, 5, 10),
) -> LocalizationResult:
    """File and function recall@k and hit@k of one answer's rankings (functions as ``path::name``)."""
    rows = [
        LocalizationAtK(
            k=k,
            file_recall=recall_at_k(ranked_files, gold.files, k),
            file_hit=hit_at_k(ranked_files, gold.files, k),
            function_recall=recall_at_k(ranked_functions, gold.functions, k),
            function_hit=hit_at_k(ranked_functions, gold.functions, k),
        )
        for k in sorted(set(ks))
    ]
    return LocalizationResult(
        n_gold_files=len(set(_unique(gold.files))),
        n_gold_functions=len(set(_unique(gold.functions))),
        at_k=rows,
    )
