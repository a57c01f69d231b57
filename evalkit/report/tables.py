"""The report's tables: one row per case, one summary per system and per suite, breakdowns by tag."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from evalkit.artifacts import ScoresArtifact
from evalkit.cases import Case, Project
from evalkit.config import Config
from evalkit.kind_registry import kind
from evalkit.metrics.registry import METRICS
from evalkit.report.aggregates import aggregate_scores, coverage, judge_subsets_note, metric_order
from evalkit.report.comparisons import compare_suite
from evalkit.report.corpus import corpus_metrics
from evalkit.report.criteria import criterion_rates
from evalkit.report.models import Aggregate, CaseCell, CaseRow, SuiteSummary, SystemSummary
from evalkit.report.score_files import Scores
from evalkit.report.stats_cache import StatsCache


def case_rows(project: Project, systems: list[Any], scores: Scores) -> list[CaseRow]:
    """One row per case of the project, with a cell per system that has scores for it."""
    rows: list[CaseRow] = []
    for case in project.cases:
        cells = {}
        for system in systems:
            s = scores.get((system.name, case.key))
            if s is None:
                continue
            cells[system.name] = CaseCell(status=s.status, reason=s.reason[:500], metrics=s.metrics, excluded=s.excluded)
        rows.append(CaseRow(suite=case.suite, case_id=case.id, description=case.description,
                            tags=case.tags, problems=[str(p) for p in case.problems], systems=cells))
    return rows


def system_summaries(cfg: Config, systems: list[Any], by_system: dict[str, list[tuple[str, ScoresArtifact]]],
                     cache: StatsCache | None) -> list[SystemSummary]:
    """Per system over all its cases: aggregates, status counts, cost per resolved case, judge tokens."""
    out = []
    for system in systems:
        mine = [s for _, s in by_system[system.name]]
        aggs = aggregate_scores(mine, metric_order(mine), cfg, cache)
        resolved = aggs.get("resolved")
        cost = sum(s.usage.cost_usd for s in mine)
        cpr = None
        if resolved is not None and resolved.value and resolved.n:
            k = round(resolved.value * resolved.n)
            cpr = cost / k if k else None
        out.append(SystemSummary(
            name=system.name, description=system.description, adapter=system.adapter,
            is_baseline=system.name == cfg.baseline_name, n_cases=len(mine),
            status_counts=dict(sorted(Counter(s.status for s in mine).items())), metrics=aggs,
            cost_per_resolved=cpr,
            judge_tokens=sum(s.judge_usage.input_tokens + s.judge_usage.output_tokens for s in mine),
            coverage=coverage(mine)))
    return out


def suite_summaries(cfg: Config, project: Project, names: list[str], scores: Scores,
                    isolation_notes: dict[str, list[str]], cache: StatsCache | None) -> list[SuiteSummary]:
    """Per suite (by name): each system's aggregates, comparisons with the baseline, broken cases and notes."""
    by_suite_cases: dict[str, list[Case]] = defaultdict(list)
    for case in project.cases:
        by_suite_cases[case.suite].append(case)
    work = str(cfg.work_path)
    out = []
    for suite_name, cases in sorted(by_suite_cases.items()):
        suite = project.suites[suite_name]
        keys = [c.key for c in cases]
        key_set = set(keys)
        suite_scores = {(sn, ck): s for (sn, ck), s in scores.items() if ck in key_set}
        names_here = [n for n in names if any(sn == n for sn, _ in suite_scores)]
        order = metric_order(suite_scores.values())
        per_system = {n: aggregate_scores([s for (sn, _), s in suite_scores.items() if sn == n], order, cfg, cache)
                      for n in names_here}
        broken = sorted({f"{c.id}: {'; '.join(p.message for p in c.problems)}" for c in cases if c.problems} |
                        {f"{ck.split('/', 1)[1]}: {s.reason}" for (sn, ck), s in suite_scores.items() if s.excluded == "broken"
                         and project.case(ck).ok} |
                        {f"left out: {lo.problem}" for lo in project.left_out if lo.suite == suite_name})
        notes = list(isolation_notes.get(suite_name, []))
        notes += judge_subsets_note(per_system, len(cases))
        if "codebleu" in order and len(cases) > cfg.metrics.corpus_codebleu_max_cases:
            notes.append(f"Corpus-level CodeBLEU not computed: {len(cases)} cases is more than "
                         f"metrics.corpus_codebleu_max_cases ({cfg.metrics.corpus_codebleu_max_cases}).")
        out.append(SuiteSummary(
            name=suite_name, kind=suite.kind, language=suite.language,
            description=suite.spec.description if suite.spec else "", n_cases=len(cases), metrics=order,
            # canaries are not compared with the baseline (their leaderboard and the alarm say what they score)
            systems=per_system, comparisons=compare_suite(cfg, order, {(sn, ck): s for (sn, ck), s in suite_scores.items()},
                                                          [n for n in names_here if cfg.system(n).adapter != "canary"],
                                                          keys, cache),
            broken=broken, notes=notes,
            coverage={n: coverage([s for (sn, _), s in suite_scores.items() if sn == n]) for n in names_here},
            criteria=criterion_rates(work, cases, names_here, suite_scores, cfg.report.confidence)
            if kind(suite.kind).answers.criteria else [],
            corpus={n: c for n in names_here if (c := corpus_metrics(cfg, project, n, cases, scores))}))
    return out


def tag_breakdowns(cfg: Config, project: Project, names: list[str],
                   by_system: dict[str, list[tuple[str, ScoresArtifact]]],
                   cache: StatsCache | None) -> dict[str, dict[str, dict[str, Aggregate]]]:
    """tag -> system -> headline aggregates over the cases carrying that tag."""
    breakdowns: dict[str, dict[str, dict[str, Aggregate]]] = {}
    tags = sorted({t for c in project.cases for t in c.tags})
    headline = [m for m, info in METRICS.items() if info.headline and info.aggregate != "sum" and m != "wall_s"]
    tagged_by: dict[str, set[str]] = defaultdict(set)
    for c in project.cases:
        for t in c.tags:
            tagged_by[t].add(c.key)
    for tag in tags:
        tagged = tagged_by[tag]
        breakdowns[tag] = {}
        for n in names:
            mine = [s for ck, s in by_system[n] if ck in tagged]
            if mine:
                order = [m for m in metric_order(mine) if m in headline]
                breakdowns[tag][n] = aggregate_scores(mine, order, cfg, cache)
    return breakdowns
