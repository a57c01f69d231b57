"""report.json and the per-case JSON files: the data every page is rendered from."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Literal


from evalkit import collector
from evalkit.case_detail import REPORT_SCHEMA_VERSION, CaseDetail as CaseDetail  # re-exported: it moved to the core
from evalkit.metrics.registry import MetricInfo
from evalkit.graders.audit_models import JudgeAudit
from evalkit.report.calibration import CalibrationSummary
from evalkit.models import Model
from evalkit.report.criteria import CriterionRate
from evalkit.isolation import IsolationDecision
from evalkit.power import Detectability
from evalkit.stats import PairedComparison, Verdict
from evalkit.total_change import TotalChange



class Aggregate(Model):
    """One metric aggregated over the cases of one system (and suite or tag)."""

    metric: str
    """Metric name (evalkit.metrics.registry)."""
    n: int
    """Cases that contributed a value."""
    value: float | None
    """Rate, mean or total."""
    low: float | None = None
    """Lower end of the interval (None when there is none)."""
    high: float | None = None
    """Upper end of the interval."""
    method: str
    """How the interval was made: wilson (also for a mean of 0/1 values), the wider of the studentized bootstrap
    and t (on right-skewed values also Hall's bootstrap-t, the widest), a stated fallback (no interval when all
    values are equal), or total."""
    approximate: bool = False
    """A bootstrap interval from fewer than evalkit.stats.APPROXIMATE_BELOW values: its coverage was measured
    short of nominal by more than 2.5 points at such n (benchmarks/coverage.py), so the page marks it approximate."""
    not_applicable: int = 0
    """Cases where the metric does not apply (left out, not counted as 0)."""
    excluded: dict[str, int] = {}
    """Cases left out and why: broken, infra, not_judged, not_attempted, bug; judge_error (a judge metric of an output
    whose judge gave no verdict: judge error, API failure or budget)."""


class Coverage(Model):
    """How many of a suite's cases a system attempted (a recorded system may have no output for some)."""

    attempted: int
    """Cases with an output of the system (anything but not_attempted)."""
    cases: int
    """Cases of the suite the system runs on."""


class SystemSummary(Model):
    """One system over the whole release."""

    name: str
    """System name."""
    description: str
    """What the system is."""
    adapter: str
    """How it is run."""
    is_baseline: bool
    """The system others are compared with."""
    n_cases: int
    """Cases it ran on."""
    status_counts: dict[str, int]
    """ok / error / timeout / infra_error / broken counts."""
    metrics: dict[str, Aggregate]
    """Metric name -> aggregate over all its cases."""
    cost_per_resolved: float | None = None
    """System cost divided by resolved cases (patch suites)."""
    judge_tokens: int = 0
    """Judge input plus output tokens over the system's cases (system tokens: metrics["tokens"])."""
    coverage: Coverage | None = None
    """Cases attempted out of the cases it ran on (rates use the attempted ones)."""


class CaseBadges(Model):
    """A case's health, as its badge shows it (evalkit.report.health)."""

    healthy: bool = True
    """Counted among the healthy cases: valid, not weakly tested, no weak reference, no leak, no flaky test,
    not a duplicate of another case."""
    badges: list[str] = []
    """Short labels: gold passes, empty fails, flaky, weak tests, weak reference, leak, duplicate, broken."""
    strength: str = "not_measured"
    """strong / weak / not_measured / skipped / infra_error (evalkit.health_models.CaseHealth)."""
    detail: list[str] = []
    """Why, one line each (the ablation that passed, the leak, the duplicate's key)."""


class HealthSensitivity(Model):
    """One system's headline over all cases and over healthy cases only."""

    all: float | None = None
    """Mean over every case with a value."""
    healthy: float | None = None
    """Mean over healthy cases with a value."""
    n_all: int = 0
    """Cases in `all`."""
    n_healthy: int = 0
    """Cases in `healthy`."""


class SuiteHealth(Model):
    """A suite's case-health table in figures."""

    n_cases: int = 0
    """Cases of the suite."""
    healthy: int = 0
    """Healthy cases."""
    strong: int = 0
    """Cases every ablation of which was noticed."""
    weak: int = 0
    """Cases whose tests or reference accept a partial answer."""
    not_measured: int = 0
    """Cases with no ablation to try (one change) or whose kind derives none."""
    measured_share_weak: float | None = None
    """weak / (strong + weak): the share of weakly tested cases among those measured."""
    leaks: int = 0
    """Cases whose tree gives the reference away."""
    duplicates: int = 0
    """Cases that repeat another case (same test ids, gold patch or legacy file)."""
    broken: int = 0
    """Cases whose validation failed."""
    flaky: int = 0
    """Cases with a flaky test in some system's run."""
    unchecked: int = 0
    """Cases whose validation or health check ended in an infrastructure error (redone by the next run): not
    counted healthy."""
    ablation_containers: int = 0
    """Sandbox runs the ablations took (once per case; cached)."""
    ablation_seconds: float = 0.0
    """Their wall time."""
    headline: str | None = None
    """The metric of the sensitivity line."""
    sensitivity: dict[str, HealthSensitivity] = {}
    """System -> headline over all cases and over healthy ones."""


class SuiteSummary(Model):
    """One suite: per-system aggregates and paired comparisons with the baseline."""

    name: str
    """Suite folder name."""
    kind: str
    """Suite kind."""
    language: str
    """Language of its code."""
    description: str
    """What it holds."""
    n_cases: int
    """Cases in the suite."""
    metrics: list[str]
    """Metrics that apply, in display order."""
    systems: dict[str, dict[str, Aggregate]]
    """System -> metric -> aggregate."""
    comparisons: list[PairedComparison]
    """Each system against the baseline on the same cases (Holm-adjusted per system)."""
    broken: list[str]
    """Case ids excluded as broken, with the reason after a colon."""
    notes: list[str] = []
    """Plain-language remarks (e.g. tests ran without container isolation)."""
    corpus: dict[str, dict[str, float]] = {}
    """System -> corpus-level metrics (e.g. corpus_codebleu: counts pooled over the suite's cases, which differs from the per-case mean)."""
    coverage: dict[str, Coverage] = {}
    """System -> cases attempted out of the suite's cases; rates and comparisons use only attempted cases."""
    criteria: list[CriterionRate] = []
    """Generation suites: every rubric criterion (cases stating the same text pooled) with each system's pass rate."""
    health: SuiteHealth | None = None
    """Case health of the suite (evalkit.report.health); None for kinds that are not validated."""


class CaseCell(Model):
    """One system on one case, as the report tables show it."""

    status: str
    """ok / error / timeout / infra_error / broken."""
    reason: str = ""
    """Why, when not ok."""
    metrics: dict[str, float | None] = {}
    """Metric values."""
    excluded: str | None = None
    """Why the case is left out of aggregates."""


class CaseRow(Model):
    """One case with every system's cell."""

    suite: str
    """Suite name."""
    case_id: str
    """Case id."""
    description: str = ""
    """What the case checks."""
    tags: list[str] = []
    """Case tags."""
    problems: list[str] = []
    """Why the case is broken, if it is."""
    health: CaseBadges | None = None
    """The case's health badge (None for kinds that are not validated)."""
    systems: dict[str, CaseCell]
    """System -> cell."""


class Change(Model):
    """A metric of one case that moved between releases."""

    suite: str
    """Suite name."""
    case_id: str
    """Case id."""
    metric: str
    """Metric that moved."""
    before: float | None
    """Value in the previous release."""
    after: float | None
    """Value in this release."""


class SystemDiff(Model):
    """What got better and worse for one system since the previous release."""

    improved: list[Change] = []
    """Cases that got better."""
    regressed: list[Change] = []
    """Cases that got worse."""


class ReleaseDiff(Model):
    """Release over release."""

    previous_release: str | None = None
    """The release compared with (None for the first release)."""
    previous_digest: str | None = None
    """sha256 of the previous release's report.json as compared with (None: not recorded). The pages use this diff
    while that file is unchanged and compute it again once the previous release was summarized again
    (evalkit.report.release_diff.current_diff)."""
    systems: dict[str, SystemDiff] = {}
    """System -> changes (systems present in both releases)."""


class Scenario(Model):
    """One expanded system of a matrix and the settings that make it."""

    system: str
    """Expanded system name."""
    settings: dict[str, Any]
    """Its value of every matrix axis."""


class ScenarioGroup(Model):
    """A configuration matrix (e.g. agents x solution server): its scenarios compared with the all-off one."""

    name: str
    """Name of the system entry that declared the matrix."""
    axes: dict[str, list[Any]]
    """Setting -> the values the matrix takes."""
    baseline: str
    """The scenario every other is compared with (first value of every axis, e.g. both off)."""
    scenarios: list[Scenario]
    """The expanded systems, in matrix order (the baseline first)."""
    suites: list[str]
    """Suites the scenarios ran on (all of them on the same cases)."""
    metrics: list[str]
    """Metrics shown, in display order."""
    systems: dict[str, dict[str, Aggregate]]
    """Scenario -> metric -> aggregate over the group's suites."""
    comparisons: list[PairedComparison]
    """Each scenario against the group's baseline on the same cases (Holm-adjusted per scenario)."""


class Decision(Model):
    """One headline metric of one system in one suite against a reference: better, worse, no detectable
    difference or not testable (evalkit.report.verdict)."""

    suite: str
    """Suite name."""
    system: str
    """System judged."""
    against: Literal["baseline", "previous"]
    """Compared with the baseline system of this release, or with the same system in the previous release."""
    reference: str
    """The baseline system's name, or the previous release's label."""
    metric: str
    """Headline metric (evalkit.metrics.registry)."""
    verdict: Verdict
    """Significant after Holm in the metric's direction (better / worse); testable but not significant (no
    detectable difference); or no outcome of these pairs could have been significant (not testable)."""
    comparison: PairedComparison
    """The paired comparison: difference with its interval, p and Holm-adjusted p."""
    detectability: Detectability | None = None
    """Not better or worse only: the minimum detectable difference at this n and the level Holm held the
    comparison to, and the cases a difference needs."""
    identical: bool = False
    """Every paired case has the same value on both sides: nothing to test (the page lists these in one line)."""


class TieGroups(Model):
    """A suite leaderboard's tie groups (evalkit.report.ties): systems whose headline values no paired test
    told apart share a letter."""

    metric: str | None = None
    """The headline metric ranked by."""
    test: str = ""
    """The paired test: mcnemar-exact (pass/fail headline) or wilcoxon-pratt (scores)."""
    letters: dict[str, str] = {}
    """System -> its group letters ("a": tied with the leader; "ab": with the leaders of a and b)."""
    groups: list[list[str]] = []
    """Per letter, its leader first, then the systems ranked below it not significantly different from it."""
    comparisons: list[PairedComparison] = []
    """Every comparison made: baseline = the group's leader, Holm over each leader's comparisons."""
    note: str = ""
    """What a reader should know (ties that are not testable, or why there are no groups)."""


class ResourceChange(Model):
    """What a suite cost or took in this release against the previous one, over the cases and systems both
    releases ran (canaries left out), with a 95% interval (evalkit.total_change)."""

    suite: str
    """Suite name."""
    metric: Literal["cost_usd", "wall_s"]
    """cost_usd: the systems' reported cost; wall_s: their wall time, summed over cases and systems."""
    reference: str
    """The previous release's label."""
    systems: list[str]
    """The systems summed (those in both releases with the metric on some case)."""
    change: TotalChange
    """Totals before and after, their difference and relative change with intervals."""


class DecisionSummary(Model):
    """The top of the release page: per suite, each system against the baseline and the previous release."""

    previous_release: str | None = None
    """The release compared with (None for the first release)."""
    detect_difference: float | None = None
    """report.detect_difference: the difference "cases needed" is sized for (None: each observed difference)."""
    decisions: list[Decision] = []
    """Suite by suite; baseline comparisons first, then the previous release."""
    changes: list[ResourceChange] = []
    """Per suite, cost and time against the previous release (empty for the first release)."""


class WorkerRow(Model):
    """What one cluster worker did for this report."""

    address: str
    """The worker's address (an artifact's `provenance.worker`)."""
    calls: int
    """Stage calls of this report's artifacts that ran there."""
    last_run_calls: int | None = None
    """Calls it ran in the last cluster run (None: not in that run's record)."""
    last_run_seconds: float | None = None
    """Seconds it spent in those calls' stages."""


class SandboxImage(Model):
    """One container image the run's cases run their tests in."""

    name: str
    """The image as the run names it (SWE-bench's under sandbox.swebench_namespace)."""
    cases: int
    """Cases of the run that use it."""
    present: bool = False
    """It was on the Docker host when the run started (else the run pulled or built it)."""
    size_bytes: int | None = None
    """Docker's size of it then (all its layers, shared ones included); None when absent or no daemon answered."""


class Report(Model):
    """report.json: everything the release page shows."""

    schema_version: int = REPORT_SCHEMA_VERSION
    """Version of this file's shape."""
    release: str
    """Release label."""
    title: str
    """Report title."""
    baseline: str
    """The baseline system."""
    systems: list[SystemSummary]
    """Per system, over all suites."""
    suites: list[SuiteSummary]
    """Per suite."""
    breakdowns: dict[str, dict[str, dict[str, Aggregate]]] = {}
    """Tag -> system -> headline metric -> aggregate."""
    cases: list[CaseRow]
    """Every case."""
    diff: ReleaseDiff = ReleaseDiff()
    """Release over release."""
    scenarios: list[ScenarioGroup] = []
    """Configuration matrices (Kai's four scenarios): each scenario against the all-off one."""
    metric_info: dict[str, MetricInfo]
    """Metadata of every metric that appears."""
    notes: list[str] = []
    """Remarks about the whole run."""
    sandbox: IsolationDecision | None = None
    """Where this run's tests executed (decided once when it started); None when no suite executes tests."""
    inputs_digest: str = ""
    """Digest of every artifact the report was computed from (changes whenever any of them does)."""
    tie_groups: dict[str, TieGroups] = {}
    """Suite -> its leaderboard's tie groups (evalkit.report.ties)."""
    decision: DecisionSummary = DecisionSummary()
    """Better / worse / no detectable difference / not testable per suite and headline metric, with power for
    the ones neither better nor worse."""
    judge_audit: JudgeAudit | None = None
    """The judge's consistency audit (judge.audit: repeats' spread, pairwise order flips); None when not configured."""
    calibration: CalibrationSummary | None = None
    """The judge's agreement with people's labels and with the tests, per rubric field (evalkit.report.calibration);
    None when no suite of the run is graded by a rubric judge."""
    workers: list[WorkerRow] = []
    """Cluster workers that made artifacts of this report (evalkit.executors.cluster); empty for a local run."""
    images: list[SandboxImage] = []
    """The sandbox images the run needed, with their sizes when it started (evalkit.run_images); empty when no
    case ran tests in an image."""
    validity_alarms: dict[str, str] = {}
    """Suite -> metric-validity alarm: its headline metric lets a canary (an answer doing no real work) score
    at or above gold or a real system (evalkit.report.leaderboard); `evalkit run --strict` fails on one."""



_REPORTS: dict[str, tuple[tuple[int, int], Report]] = {}
_REPORTS_LOCK = threading.Lock()


def read_report(path: Path) -> Report:
    """A report.json, validated once per process while the file is unchanged (same modification time and size).

    After a run, the exit status, the summary table and the alarms each read the release's report; the site's
    pages read it too: a large report takes tens of milliseconds to validate, so once is enough. The Report is
    shared: callers must not change it. OSError when the file is missing, ValueError when it is not a report."""
    st = path.stat()
    stamp = (st.st_mtime_ns, st.st_size)
    key = str(path)
    hit = _REPORTS.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    with collector.paused():  # hundreds of thousands of objects that live on (evalkit.collector)
        report = Report.model_validate_json(path.read_bytes())
    with _REPORTS_LOCK:
        _REPORTS[key] = (stamp, report)
    return report
