"""Case health in the report: a badge per case, a health table per suite, and the sensitivity line (the
headline over all cases and over healthy cases only). Reads validation/ and health/ of the work folder
(evalkit.stages.validate, evalkit.stages.health) and the score rows; finds duplicates across suites."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable
from typing import Literal

from evalkit.cases import Case, Project
from evalkit.config import Config
from evalkit.health_models import CaseHealth
from evalkit.kind_registry import kind
from evalkit.report.health_cache import HealthInputs, HealthInputsCache
from evalkit.report.models import CaseBadges, CaseRow, HealthSensitivity, SuiteHealth, SuiteSummary
from evalkit.stages.health import health_path
from evalkit.stages.validate import validation_status


def _sha(text: str | None) -> str | None:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] if text and text.strip() else None


def duplicate_keys(case: Case) -> list[tuple[str, str]]:
    """(what, digest) a near-duplicate shares: its test ids, its gold patch, its legacy file (by content)."""
    keys: list[tuple[str, str]] = []
    ref = case.reference
    tests = sorted(set(getattr(ref, "fail_to_pass", None) or []) | set(getattr(ref, "pass_to_pass", None) or []))
    if getattr(ref, "fail_to_pass", None):
        keys.append(("the same test ids", hashlib.sha256("\n".join(tests).encode()).hexdigest()[:16]))
    for what, dotted in (("the same gold patch", "reference.patch_file"), ("the same legacy file", "inputs.legacy_file")):
        try:
            d = _sha(case.read(dotted))
        except (KeyError, AttributeError, OSError, ValueError):
            d = None
        if d:
            keys.append((what, d))
    return keys


def duplicates(project: Project,
               keys_of: Callable[[Case], list[tuple[str, str]] | tuple[tuple[str, str], ...]] = duplicate_keys
               ) -> dict[str, list[str]]:
    """case key -> lines naming the earlier case (in suite, id order) it repeats; the first of a group is kept.
    ``keys_of``: a case's `duplicate_keys` (or what they were when last read)."""
    first: dict[tuple[str, str], str] = {}
    out: dict[str, list[str]] = defaultdict(list)
    for case in sorted((c for c in project.cases if c.ok), key=lambda c: c.key):
        for key in keys_of(case):
            if key in first and first[key] != case.key:
                out[case.key].append(f"duplicate of {first[key]} ({key[0]})")
            else:
                first.setdefault(key, case.key)
    return dict(out)


UNCHECKED = "unchecked"
"""The badge of a case whose validation or health check ended in an infrastructure error: not known healthy."""
RETRIED = "an infrastructure error, redone by the next run"


def read_health(cfg: Config, case: Case) -> CaseHealth | None:
    try:
        return CaseHealth.model_validate_json(health_path(cfg.work_path, case).read_bytes())
    except (FileNotFoundError, ValueError):
        return None


def health_inputs(cfg: Config, case: Case) -> HealthInputs:
    """What case health reads of one case: its validation status, its health file, its duplicate keys."""
    return HealthInputs(status=validation_status(cfg, case), health=read_health(cfg, case),
                        duplicate_keys=tuple(duplicate_keys(case)) if case.ok else ())


def case_badges(cfg: Config, case: Case, row: CaseRow, dupes: list[str],
                health: CaseHealth | None | Literal[False] = False,
                status: tuple[str, str] | None | Literal[False] = False) -> CaseBadges:
    """The case's badge. ``health``, ``status``: its health file's content (`read_health`) and its validation status
    (`validation_status`) when the caller has them."""
    badges: list[str] = []
    detail: list[str] = []
    if status is False:
        status = validation_status(cfg, case)
    broken = not case.ok or (status is not None and status[0] == "broken")
    if broken:
        badges.append("broken")
        detail.append((status[1] if status else "; ".join(p.message for p in case.problems))[:300])
    elif status is not None and status[0] == "valid":
        badges.append("gold passes")
        if kind(case.kind).ablations_checked_by == "tests":
            badges.append("empty fails")
    elif status is not None and status[0] == "infra_error":  # not known valid: never counted healthy on no evidence
        badges.append(UNCHECKED)
        detail.append(f"validation could not run ({RETRIED}): {status[1]}"[:300])
    flaky = any((cell.metrics.get("flaky_tests") or 0) > 0 for cell in row.systems.values())
    if flaky:
        badges.append("flaky")
    if health is False:
        health = read_health(cfg, case)
    strength = health.strength if health else "not_measured"
    if health and health.strength == "weak":
        label = "weak tests" if health.checked_by == "tests" else "weak reference"
        badges.append(label)
        passed = [a for a in health.ablations if a.outcome == "passed"]
        detail += [f"{label}: {a.name}: {a.description}" for a in passed]
    if health and health.strength == "infra_error":
        if UNCHECKED not in badges:
            badges.append(UNCHECKED)
        detail.append(f"health could not be checked ({RETRIED}): {health.reason}"[:300])
    leak = bool(health and health.leaks)
    if leak and health and health.leaks:
        badges.append("leak")
        detail += [f"leak: {x}" for x in health.leaks]
    if dupes:
        badges.append("duplicate")
        detail += dupes
    healthy = not broken and not flaky and strength != "weak" and not leak and not dupes and UNCHECKED not in badges
    return CaseBadges(healthy=healthy, badges=badges, strength=strength, detail=detail)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def add_health(cfg: Config, project: Project, rows: list[CaseRow], suites: list[SuiteSummary],
               canaries: frozenset[str]) -> None:
    """Set each case's badge and each suite's health table (in place); a case of a kind that is not validated
    gets the checks that need no reference run (duplicates, flaky tests) and says so."""
    cases = {c.key: c for c in project.cases}
    cache = HealthInputsCache(cfg)
    inputs: dict[str, HealthInputs] = {}  # each case's files, read once (its badge, its suite's totals, duplicates)
    for each in project.cases:
        signature = cache.signature(each)
        known = cache.get(each, signature)
        if known is None:
            known = health_inputs(cfg, each)
            cache.put(each, signature, known)
        inputs[each.key] = known
    cache.save()
    dupes = duplicates(project, lambda c: inputs[c.key].duplicate_keys)
    by_suite: dict[str, list[tuple[Case, CaseRow]]] = defaultdict(list)
    for row in rows:
        case = cases.get(f"{row.suite}/{row.case_id}")
        if case is None:
            continue
        mine = inputs[case.key]
        row.health = case_badges(cfg, case, row, dupes.get(case.key, []), mine.health, mine.status)
        if not kind(case.kind).execution.validated:  # no gold run to check, no ablation: said, not hidden
            row.health.detail.insert(0, f"not validated: a {case.kind} case has no reference run to check")
        by_suite[row.suite].append((case, row))
    for suite in suites:
        members = by_suite.get(suite.name)
        if not members:
            continue
        h = SuiteHealth(n_cases=len(members))
        for case, row in members:
            b = row.health
            assert b is not None
            h.healthy += b.healthy
            h.strong += b.strength == "strong"
            h.weak += b.strength == "weak"
            h.not_measured += b.strength == "not_measured"
            h.leaks += "leak" in b.badges
            h.duplicates += "duplicate" in b.badges
            h.broken += "broken" in b.badges
            h.flaky += "flaky" in b.badges
            h.unchecked += UNCHECKED in b.badges
            got = inputs[case.key].health
            if got is not None:
                h.ablation_containers += got.containers
                h.ablation_seconds = round(h.ablation_seconds + got.seconds, 3)
        if h.strong + h.weak:
            h.measured_share_weak = h.weak / (h.strong + h.weak)
        board = kind(suite.kind).leaderboard
        headline = next((m for m in board if any(m in cell.metrics for _c, r in members
                                                 for cell in r.systems.values())), None)
        h.headline = headline
        if headline is not None:
            for system in suite.systems:
                if system in canaries:
                    continue
                every: list[float] = []
                good: list[float] = []
                for _case, row in members:
                    cell = row.systems.get(system)
                    value = cell.metrics.get(headline) if cell is not None and cell.excluded is None else None
                    if value is None:
                        continue
                    every.append(value)
                    if row.health is not None and row.health.healthy:
                        good.append(value)
                h.sensitivity[system] = HealthSensitivity(all=_mean(every), healthy=_mean(good),
                                                          n_all=len(every), n_healthy=len(good))
        suite.health = h

