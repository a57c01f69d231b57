"""A unified diff split into files and hunks, and the partial patches made from it (case health's ablations).

A partial patch keeps the other hunks exactly as written: the old-side line numbers stay right (the
old file is the same), the new-side ones are only hints that `git apply` and `patch` do not need.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@")


@dataclass
class FileDiff:
    """One file's section of a diff: its header lines and its hunks (each with its `@@` line)."""

    path: str
    header: list[str] = field(default_factory=list)
    hunks: list[list[str]] = field(default_factory=list)

    def text(self, keep: list[int] | None = None) -> str:
        chosen = self.hunks if keep is None else [self.hunks[i] for i in keep]
        return "".join(self.header) + "".join("".join(h) for h in chosen)


def _path_of(header: list[str]) -> str:
    for line in header:
        if line.startswith("+++ "):
            name = line[4:].rstrip("\n").split("\t")[0]
            if name != "/dev/null":
                return name[2:] if name.startswith("b/") else name
    for line in header:
        if line.startswith("--- "):
            name = line[4:].rstrip("\n").split("\t")[0]
            return name[2:] if name.startswith("a/") else name
        if line.startswith("diff --git "):
            return line.rstrip("\n").split(" b/", 1)[-1]
    return "?"


def split_diff(patch: str) -> list[FileDiff]:
    """The files of a unified diff, in order, each with its hunks (binary or mode-only sections: no hunks).
    A hunk ends where its `@@` counts say, so a removed line reading `--- x` stays in its hunk."""
    files: list[FileDiff] = []
    cur: FileDiff | None = None
    old_left = new_left = 0
    for line in patch.splitlines(keepends=True):
        if cur is not None and cur.hunks and (old_left > 0 or new_left > 0):
            cur.hunks[-1].append(line)
            tag = line[:1]
            if tag in (" ", "\n", "\r"):
                old_left, new_left = old_left - 1, new_left - 1
            elif tag == "-":
                old_left -= 1
            elif tag == "+":
                new_left -= 1
            continue
        if cur is not None and cur.hunks and line.startswith("\\"):
            cur.hunks[-1].append(line)  # "\ No newline at end of file"
            continue
        m = _HUNK.match(line)
        if m and cur is not None:
            cur.hunks.append([line])
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(3)) if m.group(3) is not None else 1
            continue
        opens = line.startswith("diff --git ") or (
            line.startswith("--- ") and (cur is None or bool(cur.hunks) or any(h.startswith("--- ") for h in cur.header)))
        if opens:
            cur = FileDiff(path="?", header=[line])
            files.append(cur)
        elif cur is not None:
            cur.header.append(line)
    for f in files:
        f.path = _path_of(f.header)
    return files


def hunk_start(hunk: list[str]) -> int:
    """The old-side first line of a hunk (its `@@ -N` number)."""
    m = _HUNK.match(hunk[0])
    return int(m.group(1)) if m else 0


@dataclass(frozen=True)
class PartialPatch:
    """A patch made from the gold one by leaving something out."""

    name: str
    """Short id, stable for the same gold patch (``without-hunk-2``, ``only-file-1``)."""
    description: str
    """What was left out, in words (the file and line of the hunk)."""
    patch: str


def change_blocks(hunk: list[str]) -> list[tuple[int, int]]:
    """(first, end) line indexes of each run of removed/added lines of a hunk (its `@@` line is index 0)."""
    blocks: list[tuple[int, int]] = []
    start = None
    for i, line in enumerate(hunk[1:], 1):
        changed = line[:1] in ("-", "+") or (line.startswith("\\") and start is not None)
        if changed and start is None:
            start = i
        elif not changed and start is not None:
            blocks.append((start, i))
            start = None
    if start is not None:
        blocks.append((start, len(hunk)))
    return blocks


def without_block(hunk: list[str], block: tuple[int, int]) -> list[str]:
    """The hunk with one change block undone: its removed lines become context, its added lines go."""
    first, end = block
    body: list[str] = []
    for i, line in enumerate(hunk[1:], 1):
        if first <= i < end:
            if line.startswith("-"):
                body.append(" " + line[1:])
            elif line.startswith("\\") and body and not body[-1].startswith("+"):
                body.append(line)
            continue
        body.append(line)
    m = _HUNK.match(hunk[0])
    old_start = int(m.group(1)) if m else 0
    old = sum(1 for x in body if x[:1] in (" ", "-", "\n"))
    new = sum(1 for x in body if x[:1] in (" ", "+", "\n"))
    tail = hunk[0].split("@@", 2)[2] if hunk[0].count("@@") >= 2 else "\n"
    return [f"@@ -{old_start},{old} +{old_start},{new} @@{tail}"] + body


def partial_patches(patch: str, cap: int) -> list[PartialPatch]:
    """Each hunk removed in turn (when there are two or more; a one-hunk patch: each of its change blocks
    undone in turn, when it has two or more), then each file alone (when there are two or more files), at
    most ``cap`` of them in that order. A patch of one change has none: without it, it is the empty answer
    validation already runs."""
    if cap <= 0:
        return []
    files = split_diff(patch)
    where = [(fi, hi) for fi, f in enumerate(files) for hi in range(len(f.hunks))]
    out: list[PartialPatch] = []
    if len(where) >= 2:
        for n, (fi, hi) in enumerate(where, 1):
            text = "".join(f.text([i for i in range(len(f.hunks)) if not (j == fi and i == hi)])
                           if f.hunks else f.text() for j, f in enumerate(files)
                           if not (j == fi and len(f.hunks) == 1))
            f = files[fi]
            out.append(PartialPatch(f"without-hunk-{n}", f"the gold patch without its hunk {n} "
                                    f"({f.path}, line {hunk_start(f.hunks[hi])})", text))
    elif len(where) == 1:
        fi, hi = where[0]
        f, hunk = files[fi], files[fi].hunks[hi]
        blocks = change_blocks(hunk)
        if len(blocks) >= 2:
            for n, block in enumerate(blocks, 1):
                line = hunk_start(hunk) + sum(1 for x in hunk[1:block[0]] if x[:1] in (" ", "-", "\n"))
                edited = FileDiff(f.path, f.header, [without_block(hunk, block)])
                text = "".join(edited.text() if j == fi else g.text() for j, g in enumerate(files))
                out.append(PartialPatch(f"without-change-{n}", f"the gold patch without its change {n} "
                                        f"({f.path}, line {line})", text))
    if len(files) >= 2:
        for n, f in enumerate(files, 1):
            out.append(PartialPatch(f"only-file-{n}", f"only the gold patch's change to {f.path}", f.text()))
    return out[:cap]
