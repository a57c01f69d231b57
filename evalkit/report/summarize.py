"""summarize: aggregate every (system, case) score into report.json and the per-case JSON files.

The parts live beside it: score_files (reading scores.json), tables (case rows, per-system and
per-suite summaries, tag breakdowns), aggregates and comparisons (intervals; paired tests with Holm),
stats_cache, corpus, release_diff, run_notes, case_details.
"""

from __future__ import annotations

from evalkit import collector
from evalkit.cases import Project
from evalkit.config import Config
from evalkit.fsutil import atomic_write_json, digest
from evalkit.metrics.registry import METRICS
from evalkit.project import participating
from evalkit.report.case_details import write_case_details_incrementally
from evalkit.report.models import Report
from evalkit.report.release_diff import previous_report, release_diff
from evalkit.run_images import read_run_images
from evalkit.sandbox.backends import uses_images
from evalkit.stats import reusing_resample_indices
from evalkit.report.run_notes import budget_notes, cluster_workers, isolation_notes, judge_notes, run_isolation
from evalkit.report.scenarios import scenario_groups
from evalkit.report.score_files import read_scores
from evalkit.report.stats_cache import StatsCache, cached_call
from evalkit.report.tables import case_rows, suite_summaries, system_summaries, tag_breakdowns
from evalkit.report.leaderboard import CANARY_ADAPTER
from evalkit.report.health import add_health
from evalkit.report.ties import suite_ties
from evalkit.graders.audit import read_audit
from evalkit.report.calibration import calibration_summary, mark_uncalibrated
from evalkit.report.decision import decision_summary
from evalkit.report.leaderboard import validity_alarms


def summarize(cfg: Config, project: Project, write_case_details: bool = True) -> Report:
    """Read every scores.json of the run; write report.json and site/<release>/cases/**.json."""
    # collector: every scores.json's model, the rows, the report: ~0.1 s of collections at 1,000 x 4. The indices: the
    # intervals of a suite's metrics and of its systems' paired differences share n, seed and resample count
    with collector.paused(), reusing_resample_indices():
        return _summarize(cfg, project, write_case_details)


def _summarize(cfg: Config, project: Project, write_case_details: bool) -> Report:
    pairs = participating(cfg, project)
    cache = StatsCache(cfg.work_path / "cache" / "stats.json")
    scores, by_system = read_scores(cfg, pairs)
    systems_in_run = [s for s in cfg.systems if any(p[0] is s for p in pairs)]
    names = [s.name for s in systems_in_run]

    rows = case_rows(project, systems_in_run, scores)
    systems = system_summaries(cfg, systems_in_run, by_system, cache)
    notes_by_suite = isolation_notes(cfg, pairs)
    suites = suite_summaries(cfg, project, names, scores, notes_by_suite, cache)
    breakdowns = tag_breakdowns(cfg, project, names, by_system, cache)
    prev, prev_digest = previous_report(cfg) or (None, None)

    canaries = frozenset(s.name for s in cfg.systems if s.adapter == CANARY_ADAPTER)
    decision = decision_summary(lambda *a, **k: cached_call(cache, *a, **k), suites, rows, prev,
                                cfg.report.seed, cfg.report.detect_difference, canaries)

    calibration = calibration_summary(cfg, project, scores, lambda *a, **k: cached_call(cache, *a, **k))

    present = {m for s in scores.values() for m in s.metrics}
    present |= {m for su in suites for c in su.corpus.values() for m in c}
    metric_info = mark_uncalibrated({m: METRICS[m] for m in METRICS if m in present}, calibration)
    ties = suite_ties(suites, rows, metric_info, cfg.baseline_name, cfg.report.seed,
                      lambda *a, **k: cached_call(cache, *a, **k),
                      canaries=canaries,
                      gold=frozenset(s.name for s in cfg.systems if s.adapter == "gold"))
    cache.save()
    report_sandbox = run_isolation(cfg, pairs)
    in_images = report_sandbox is not None and uses_images(report_sandbox.chosen)  # local: no image was used
    report = Report(release=cfg.release, title=cfg.title, baseline=cfg.baseline_name, systems=systems,
                    suites=suites, breakdowns=breakdowns, cases=rows,
                    diff=release_diff(prev, rows, prev_digest), decision=decision, judge_audit=read_audit(cfg),
                    scenarios=scenario_groups(cfg, project, scores),
                    metric_info=metric_info, tie_groups=ties,
                    calibration=calibration,
                    sandbox=report_sandbox,
                    workers=cluster_workers(cfg, pairs),
                    images=read_run_images(cfg.work_path) if in_images else [],
                    notes=sorted({n for notes in notes_by_suite.values() for n in notes} | judge_notes(scores.values(), cfg.judge)
                                 | set(project.input_notes()) | budget_notes(cfg, pairs)),
                    inputs_digest=digest(sorted((k, s.provenance.model_dump() if s.provenance else None)
                                                for k, s in scores.items())))

    report.validity_alarms = validity_alarms(report)
    add_health(cfg, project, rows, suites, canaries)
    out_dir = cfg.site_path / cfg.release
    if write_case_details:
        write_case_details_incrementally(cfg, project, pairs, scores, out_dir)
    atomic_write_json(out_dir / "report.json", report, compact=True)
    return report
