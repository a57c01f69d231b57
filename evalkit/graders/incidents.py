"""Analyzer incidents: re-checking them on a changed tree, and matching discovered tasks to expected ones.

Pure functions over text and small dicts, so each metric of the agentic suite can be checked by
hand (tests/test_agentic_metrics.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

_JAVA_EXT = (".java", ".jsp", ".kt", ".groovy")


def import_present(text: str, module: str, path: str) -> bool:
    """Does the file import `module` (or something under it)? Java/Kotlin `import`, else Python."""
    mod = re.escape(module.rstrip(".*"))
    if path.endswith(_JAVA_EXT):
        pattern = rf"^\s*import\s+(?:static\s+)?{mod}(?:\.|;|\s)"
    else:
        pattern = rf"^\s*(?:from\s+{mod}(?:\.\S+)?\s+import\b|import\s+(?:[\w.]+\s*,\s*)*{mod}(?:\.\S*)?(?:\s|,|$))"
    return re.search(pattern, text, re.M) is not None


def incident_present(matcher: dict[str, Any] | None, text: str | None, path: str, original_line: str | None) -> bool:
    """Is the incident still there? Its rule's matcher decides; without one, the incident's
    original line (stripped) still being in the file does. A deleted file has no incident."""
    if text is None:
        return False
    if matcher:
        if matcher["type"] == "import":
            return import_present(text, matcher["pattern"], path)
        return re.search(matcher["pattern"], text, re.M) is not None
    if original_line and original_line.strip():
        return any(line.strip() == original_line.strip() for line in text.splitlines())
    return False


@dataclass(frozen=True)
class TaskMatch:
    """Which discovered task matched which expected task."""

    pairs: tuple[tuple[int, int], ...]
    """(discovered index, expected index), one-to-one."""
    n_discovered: int
    n_expected: int

    @property
    def matched_discovered(self) -> set[int]:
        return {d for d, _ in self.pairs}

    def precision(self) -> float | None:
        return len(self.pairs) / self.n_discovered if self.n_discovered else None

    def recall(self) -> float | None:
        return len(self.pairs) / self.n_expected if self.n_expected else None

    def f1(self) -> float | None:
        p, r = self.precision(), self.recall()
        if r is None:
            return None
        if not p or not r:  # nothing discovered, or nothing right: F1 is 0
            return 0.0
        return 2 * p * r / (p + r)


def _norm(path: str) -> str:
    return path.replace("\\", "/").lstrip("./")


def match_tasks(discovered: Sequence[dict[str, Any]], expected: Sequence[dict[str, Any]], tolerance: int) -> TaskMatch:
    """One-to-one matching on the same rule id and file with lines at most `tolerance` apart
    (a side without a line matches any line); closest pairs first, ties in list order."""
    candidates = []
    for di, d in enumerate(discovered):
        for ei, e in enumerate(expected):
            if d["rule_id"] != e["rule_id"] or _norm(d["file"]) != _norm(e["file"]):
                continue
            dl, el = d.get("line"), e.get("line")
            distance = 0 if dl is None or el is None else abs(dl - el)
            if distance <= tolerance:
                candidates.append((distance, di, ei))
    used_d, used_e, pairs = set(), set(), []
    for _dist, di, ei in sorted(candidates):
        if di in used_d or ei in used_e:
            continue
        used_d.add(di)
        used_e.add(ei)
        pairs.append((di, ei))
    return TaskMatch(tuple(sorted(pairs)), len(discovered), len(expected))
