"""Per-criterion pass rates of generation suites: each rubric criterion's text with every system's rate.

A criterion is identified by its text within a suite: cases that state the same criterion (LLMService's
datasets repeat "Assert that the status code is 201" across cases) are pooled, so a rate says how often a
system meets that requirement wherever it is asked. A verdict is the rubric's per-criterion decision
(majority over samples) read from the case's grades.json; a case left out of the suite's rates (broken,
infrastructure error, not attempted) is not counted, and a case without a verdict (no judge configured,
budget, judge error) counts as not judged, never as not met.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from evalkit.artifacts import ARTIFACT_FILES
from evalkit.kind_registry import kind
from evalkit.models import Model
from evalkit.outcomes import RubricOutcome
from evalkit.stats import wilson_interval

if TYPE_CHECKING:  # report.models imports this module: keep its imports light
    from evalkit.artifacts import ScoresArtifact
    from evalkit.cases import Case


class CriterionTally(Model):
    """One system's verdicts on one criterion, over the suite's cases that state it."""

    met: int = 0
    """Verdicts `met`."""
    judged: int = 0
    """Verdicts given: the rate's n."""
    rate: float | None = None
    """met / judged; None when nothing was judged."""
    low: float | None = None
    """Lower end of the rate's Wilson interval (report.confidence)."""
    high: float | None = None
    """Upper end of the rate's Wilson interval."""
    not_judged: int = 0
    """Cases stating the criterion where this system got no verdict (no judge, budget, judge error)."""


class CriterionRate(Model):
    """One rubric criterion of a suite and each system's pass rate on it."""

    text: str
    """The criterion, as the cases state it."""
    cases: list[str]
    """Every case stating it, as `case_id#criterion_id`."""
    systems: dict[str, CriterionTally]
    """System -> its verdicts on this criterion."""
    lowest: float | None = None
    """The lowest pass rate of any system (None when no system was judged): what the release page sorts by."""


def _criteria_of(case: Case) -> list[tuple[str, str]]:
    """(criterion id, text) in the case's order; ids default to c1, c2, ... as the rubric grader names them."""
    return [(c.id or f"c{i}", c.text) for i, c in enumerate(case.criteria, start=1)]


def _verdicts(work: str, system: str, case: Case) -> dict[str, bool]:
    """Criterion id -> met, from the rubric outcome in the case's grades.json (empty without one)."""
    try:
        with open(f"{work}/artifacts/{system}/{case.suite}/{case.id}/{ARTIFACT_FILES['grade']}", "rb") as fh:
            grades = json.loads(fh.read())
    except (FileNotFoundError, ValueError):
        return {}
    rubric = RubricOutcome.model_validate(grades["rubric"]) if grades.get("rubric") else None
    if rubric is None or rubric.status not in ("judged", "parser"):
        return {}
    return {r.id: r.met for r in rubric.results}


def criterion_rates(work: str, cases: Iterable[Case], systems: list[str],
                    scores: dict[tuple[str, str], ScoresArtifact], confidence: float = 0.95) -> list[CriterionRate]:
    """Every criterion of the suite's generation cases (first appearance order) with each system's pass rate."""
    rows: dict[str, CriterionRate] = {}
    for case in cases:
        if not kind(case.kind).answers.criteria:  # e.g. generation: cases list rubric criteria
            continue
        criteria = _criteria_of(case)
        if not criteria:
            continue
        for cid, text in criteria:
            row = rows.setdefault(text, CriterionRate(text=text, cases=[], systems={}))
            row.cases.append(f"{case.id}#{cid}")
        for system in systems:
            s = scores.get((system, case.key))
            if s is None or s.excluded in ("broken", "infra", "not_attempted"):
                continue
            verdicts = _verdicts(work, system, case)
            for cid, text in criteria:
                tally = rows[text].systems.setdefault(system, CriterionTally())
                if cid in verdicts:
                    tally.judged += 1
                    tally.met += verdicts[cid]
                else:
                    tally.not_judged += 1

    for row in rows.values():
        for tally in row.systems.values():
            if tally.judged:
                tally.rate = tally.met / tally.judged
                interval = wilson_interval(tally.met, tally.judged, confidence)
                if interval is not None:
                    tally.low, tally.high = interval
        rates = [t.rate for t in row.systems.values() if t.rate is not None]
        row.lowest = min(rates) if rates else None
    return list(rows.values())

