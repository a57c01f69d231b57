"""Analyzer incidents: re-checking them on a changed tree, and matching discovered tasks to expected ones.

Pure functions over text and the case models (Incident, IncidentMatcher, tasks with a rule id, file
and line), so each metric of the agentic suite can be checked by hand (tests/test_agentic_metrics.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

from evalkit.casemodels import Incident, IncidentMatcher


class Located(Protocol):
    """A task to match: an expected one (evalkit.kinds.agentic.models.ExpectedTask) or one a system discovered."""

    @property
    def rule_id(self) -> str: ...
    @property
    def file(self) -> str: ...
    @property
    def line(self) -> int | None: ...

_JAVA_EXT = (".java", ".jsp", ".kt", ".groovy")


def import_present(text: str, module: str, path: str) -> bool:
    """Does the file import `module` (or something under it)? Java/Kotlin `import`, else Python."""
    mod = re.escape(module.rstrip(".*"))
    if path.endswith(_JAVA_EXT):
        pattern = rf"^\s*import\s+(?:static\s+)?{mod}(?:\.|;|\s)"
    else:
        pattern = rf"^\s*(?:from\s+{mod}(?:\.\S+)?\s+import\b|import\s+(?:[\w.]+\s*,\s*)*{mod}(?:\.\S*)?(?:\s|,|$))"
    return re.search(pattern, text, re.M) is not None


def incident_present(matcher: IncidentMatcher | None, text: str | None, path: str, original_line: str | None) -> bool:
    """Is the incident still there? Its rule's matcher decides; without one, the incident's
    original line (stripped) still being in the file does. A deleted file has no incident."""
    if text is None:
        return False
    if matcher:
        if matcher.type == "import":
            return import_present(text, matcher.pattern, path)
        return re.search(matcher.pattern, text, re.M) is not None
    if original_line and original_line.strip():
        return any(line.strip() == original_line.strip() for line in text.splitlines())
    return False


COUNTED_CATEGORIES = (None, "mandatory")
"""Incident categories a migration case's incidents_resolved counts (Konveyor's `optional` and
`potential` incidents may rightly stay: the expected file often keeps them)."""


def line_text(text: str | None, line: int | None) -> str | None:
    """The 1-based line of a text, or None."""
    if text is None or line is None:
        return None
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else None


@dataclass(frozen=True)
class IncidentCheck:
    """One incident of a migration case re-checked in an output."""

    rule_id: str
    line: int | None
    counted: bool
    """Whether incidents_resolved counts it: mandatory (or no category given) and checkable."""
    present: bool
    """The incident is still there in the output (see incident_present)."""
    checkable: bool = True
    """The same test finds it in the legacy file (else a re-check would call it fixed already)."""


def firing_lines(matcher: IncidentMatcher, text: str | None, path: str) -> int:
    """On how many lines of ``text`` a rule's matcher fires (incident_present line by line; a
    pattern that only matches across lines counts once)."""
    if text is None:
        return 0
    n = sum(incident_present(matcher, line, path, None) for line in text.splitlines())
    return n or int(incident_present(matcher, text, path, None))


def recheck_file(incidents: Sequence[Incident], matchers: Mapping[str, IncidentMatcher], legacy: str,
                 output: str | None, path: str) -> list[IncidentCheck]:
    """Every incident of one legacy file re-checked in the output (None: the output deletes it),
    with the same test as agentic suites (incident_present).

    A rule with a matcher still has as many of its incidents in the output as there are output
    lines the matcher fires on (at most as many as the legacy file had), the way an analyzer re-run
    reports them line by line: fixing five of a file's six `javax.` imports leaves one incident,
    not six. The incidents whose original line is still in the output are the ones left first.
    Without a matcher, an incident is there while its original line is. An incident the same test
    does not find in the legacy file itself is not `checkable` (and not counted).
    """
    originals = [line_text(legacy, inc.line) for inc in incidents]
    checkable = [True] * len(incidents)
    present = [False] * len(incidents)
    by_rule: dict[str, list[int]] = {}
    for i, inc in enumerate(incidents):
        matcher = matchers.get(inc.rule_id)
        if matcher is None:
            checkable[i] = incident_present(None, legacy, path, originals[i])
            present[i] = incident_present(None, output, path, originals[i])
        else:
            by_rule.setdefault(inc.rule_id, []).append(i)
    out_lines = {line.strip() for line in output.splitlines()} if output is not None else set()
    for rule_id, idx in by_rule.items():
        matcher = matchers[rule_id]
        in_legacy = min(len(idx), firing_lines(matcher, legacy, path))
        for i in idx[in_legacy:]:
            checkable[i] = False
        left = min(in_legacy, firing_lines(matcher, output, path))
        kept_line = [i for i in idx[:in_legacy] if (original := originals[i]) and original.strip() in out_lines]
        others = [i for i in idx[:in_legacy] if i not in kept_line]
        for i in (kept_line + others)[:left]:
            present[i] = True
    return [IncidentCheck(inc.rule_id, inc.line, checkable[i] and inc.category in COUNTED_CATEGORIES,
                          present[i], checkable[i]) for i, inc in enumerate(incidents)]


def resolved_share(checks: Sequence[IncidentCheck]) -> float | None:
    """Share of the counted incidents that are gone (None when none is counted)."""
    counted = [c for c in checks if c.counted]
    return sum(not c.present for c in counted) / len(counted) if counted else None


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


def match_tasks(discovered: Sequence[Located], expected: Sequence[Located], tolerance: int) -> TaskMatch:
    """One-to-one matching on the same rule id and file with lines at most `tolerance` apart
    (a side without a line matches any line); closest pairs first, ties in list order."""
    candidates = []
    for di, d in enumerate(discovered):
        for ei, e in enumerate(expected):
            if d.rule_id != e.rule_id or _norm(d.file) != _norm(e.file):
                continue
            dl, el = d.line, e.line
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
