"""The judge's reliability, measured: per rubric field, agreement with people's labels, between the
people themselves, and with the tests; and the marks that keep an uncalibrated field from leading.

Computed by summarize into report.json's ``calibration`` from the project's labels (evalkit.labels),
the labelled outputs' grades.json (the judge's verdicts) and the scores (test verdicts). Only model
verdicts (status ``judged``) are compared: a file the free pre-checks decided (status ``parser``: every
score at the decided value, 0 on CodeJudge's rubric) is counted apart, never as agreement.

A field whose kappa against people is below ``judge.calibration.min_kappa`` is *uncalibrated*: its
metric (and the rubric's overall score, which it weighs in) carries the mark in ``metric_info`` and the
leaderboard and decision summary fall back to the next headline metric the registry declares.
"""

from __future__ import annotations

import json
import math
import sys
from collections import defaultdict
from itertools import combinations
from typing import TYPE_CHECKING, Any, Callable, Literal, TypedDict, cast

from evalkit.agreement import Agreement, agreement
from evalkit.artifacts import GradesArtifact
from evalkit.models import Model
from evalkit.outcomes import JudgeOutcome
from evalkit.ppi import PPIEstimate, ppi_mean
from evalkit.stats import RateEstimate, rate
from evalkit.errors import InputError
from evalkit.kind_registry import main_file
from evalkit.labels import label_files, output_sha256, project_labels, rubric_for
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.cases import Project
    from evalkit.config import Config
    from evalkit.graders.rubric_config import RubricField
    from evalkit.graders import judge_dispatch as judge_dispatch_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    judge_dispatch_code = later("evalkit.graders.judge_dispatch")

TEST_VERDICT_METRICS: tuple[str, ...] = ("resolved", "e2e_resolved")
"""Metrics that are a test verdict of one output (every test that must pass passes), in order of preference."""

Status = Literal["calibrated", "uncalibrated", "unmeasured"]


class LabellerAgreement(Model):
    """Two people's agreement on one field, over the outputs both labelled."""

    first: str
    """One labeller."""
    second: str
    """The other (the reference of base_rate)."""
    agreement: Agreement
    """Their kappa, interval, n."""


class TestAgreement(Model):
    """The judge's verdict on one field against the tests, on outputs that have both."""

    test_metric: str
    """The test verdicts used, comma-separated when the rubric grades several kinds of suite (e.g. resolved,
    e2e_resolved)."""
    judge_pass: str
    """What counts as the judge saying pass: 'true', or e.g. '4 or more'."""
    both_pass: int = 0
    """Judge pass, tests pass."""
    judge_pass_tests_fail: int = 0
    """Judge pass, tests fail (the judge is fooled)."""
    judge_fail_tests_pass: int = 0
    """Judge fail, tests pass."""
    both_fail: int = 0
    """Judge fail, tests fail."""
    agreement: Agreement
    """Cohen's kappa of the two pass/fail verdicts."""
    failing_rated_pass: RateEstimate
    """Share of test-failing outputs the judge passed (rated 4 or 5 on a 1-5 scale), Wilson interval."""


class FieldCalibration(Model):
    """One judge rubric field: how far its verdicts are worth trusting."""

    rubric: str
    """Rubric name."""
    field: str
    """Field name in the judge's answer."""
    metric: str
    """Its metric in scores.json and report.json."""
    display: str
    """Its column title."""
    kind: Literal["ordinal", "boolean", "continuous"]
    """Scale kind: ordinal (quadratic-weighted kappa), boolean (Cohen's kappa), continuous (no kappa)."""
    suites: list[str]
    """Suites this rubric grades."""
    status: Status
    """calibrated (kappa vs people >= the bar), uncalibrated (below it), unmeasured (no judged labelled output,
    or kappa undefined)."""
    reason: str
    """Why, in a few words."""
    vs_people: Agreement | None = None
    """The judge against every person's label (each (output, labeller) a pair; outputs resampled)."""
    between_people: list[LabellerAgreement] = []
    """Each pair of labellers, on the outputs both labelled."""
    vs_tests: TestAgreement | None = None
    """The judge against the tests, where an output has both."""
    tested_decided: int = 0
    """Outputs of this rubric's suites with a test verdict that the free pre-checks decided (no model verdict):
    left out of vs_tests."""
    tested_unjudged: int = 0
    """Outputs of this rubric's suites with a test verdict but no judge verdict (judge not configured, budget,
    errors): left out of vs_tests."""
    labels: int = 0
    """People's labels of this field (fresh ones, for outputs in this run)."""
    judged: int = 0
    """Of those, labels of outputs the judge (a model) gave a verdict: the pairs of vs_people."""
    decided: int = 0
    """Labels of outputs decided by the free pre-checks (no model verdict to compare)."""
    unjudged: int = 0
    """Labels of outputs without a verdict (judge not configured, budget, errors)."""
    ppi: PPIEstimate | None = None
    """The field's metric over every output of the rubric's suites (all systems), corrected by people's labels: the
    prediction-powered estimate (evalkit.ppi) beside the raw judge mean; None when no output has the metric."""
    ppi_by_system: dict[str, PPIEstimate] = {}
    """The same per system (its outputs of the rubric's suites), for systems with a labelled output."""


class CalibrationSummary(Model):
    """report.json's ``calibration``: the judge's agreement with people and tests, per rubric field."""

    min_kappa: float
    """judge.calibration.min_kappa: the bar."""
    require_labels: bool = False
    """judge.calibration.require_labels: unmeasured fields count as uncalibrated."""
    fields: list[FieldCalibration] = []
    """One per rubric field of the run's judged suites."""
    uncalibrated_metrics: dict[str, str] = {}
    """Metric -> why it is marked uncalibrated (fields below the bar and the overall scores they weigh in)."""
    labellers: list[str] = []
    """Everyone who labelled something."""
    stale: list[str] = []
    """Labels left out because the output changed since they were written (file:line, system)."""
    outside_run: int = 0
    """Labels of systems or cases not in this run (kept, not used)."""
    problems: list[str] = []
    """Problems in labels (file:line: what is wrong); those labels are left out."""


def judge_value(field: RubricField, verdicts: list[dict[str, Any]]) -> bool | int | float | None:
    """The judge's value of ``field`` over its samples: majority (a tie is false) for a boolean, the mean
    rounded half up to the scale for an ordinal field, the mean for a continuous one; None when absent."""
    values = [x for v in verdicts if isinstance(v, dict) and (x := v.get(field.name)) is not None]
    if not values:
        return None
    if field.kind == "boolean":
        return sum(bool(v) for v in values) * 2 > len(values)
    mean = sum(float(v) for v in values) / len(values)
    if field.kind == "ordinal":
        cats = cast("list[int]", field.categories())  # an ordinal field's: its integer range
        return min(max(int(math.floor(mean + 0.5)), cats[0]), cats[-1])
    return mean


def _read(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as fh:
            return json.loads(fh.read())
    except (FileNotFoundError, ValueError):
        return None


def _judge_of(work: str, system: str, suite: str, case_id: str) -> JudgeOutcome | None:
    grades = _read(f"{work}/artifacts/{system}/{suite}/{case_id}/grades.json")
    return GradesArtifact.model_validate(grades).judge if grades else None


def _answers(judge: JudgeOutcome) -> list[dict[str, Any]]:
    """Each verdict's rubric fields by name."""
    return [dict(v.model_extra or {}) for v in judge.verdicts]


def _output_text(work: str, system: str, case: Any) -> str | None:
    out = _read(f"{work}/artifacts/{system}/{case.suite}/{case.id}/output.json")
    samples = (out or {}).get("samples") or []
    if not samples:
        return None
    mf = main_file(case)
    files = samples[0].get("files") or {}
    return files.get(mf) if mf else None


def calibration_summary(cfg: Config, project: Project, scores: dict[tuple[str, str], Any], call: Callable[..., Any]
                        ) -> CalibrationSummary | None:
    """The release's calibration section, or None when no suite of the run is graded by a rubric judge and
    nobody labelled anything. ``call(model, fn, *args)`` is summarize's cached call."""


    settings = cfg.judge.calibration
    work = str(cfg.work_path)

    rubric_judged = judge_dispatch_code.rubric_judged  # looked up once (a lazy module's attribute), not per case
    judged_suites = {c.suite for c in project.cases if rubric_judged(c)}  # migration; patch and e2e with `judge:`
    labels, problems = project_labels(cfg, project)
    for p in problems:  # said on every run (and on the release page); `evalkit check` exits 2 on them
        print(f"evalkit: warning: labels left out: {p}", file=sys.stderr)
    if not judged_suites and not labels and not problems:
        return None
    summary = CalibrationSummary(min_kappa=settings.min_kappa, require_labels=settings.require_labels,
                                 problems=[str(p) for p in problems],
                                 labellers=sorted({lab.labeller for lab in labels}))
    # which rubric grades which suite (one entry per rubric)
    rubrics: dict[str, Any] = {}
    suites_of: dict[str, list[str]] = defaultdict(list)
    for suite_name in sorted(judged_suites):
        case = next(c for c in project.cases if c.suite == suite_name)
        try:
            rubric = rubric_for(cfg, project, case)
        except InputError as exc:
            summary.problems += [str(p) for p in exc.problems]
            continue
        rubrics.setdefault(rubric.name, rubric)
        suites_of[rubric.name].append(suite_name)
    rubric_of_suite = {s: name for name, suites in suites_of.items() for s in suites}

    # the judge's verdicts of the labelled outputs, and which labels still hold
    verdicts: dict[tuple[str, str], tuple[str, list[dict[str, Any]]]] = {}  # (system, case) -> (status, verdicts)
    fresh = []
    for lab in labels:
        key = (lab.system, lab.case)
        if key not in scores:
            summary.outside_run += 1
            continue
        case = project.case(lab.case)
        if lab.output_sha256 is not None:
            text = _output_text(work, lab.system, case)
            if text is None or not output_sha256(text).startswith(lab.output_sha256):
                summary.stale.append(f"{lab.source} ({lab.system})")
                continue
        if key not in verdicts:
            judge = _judge_of(work, lab.system, case.suite, case.id)
            verdicts[key] = (judge.status, _answers(judge)) if judge is not None else ("", [])
        fresh.append(lab)

    seed, resamples = cfg.report.seed, cfg.report.bootstrap_resamples
    # canaries (leaderboard.CANARY_ADAPTER; not imported: leaderboard -> report.models -> here) answer nothing real
    canaries = {s.name for s in cfg.systems if s.adapter == "canary"}
    real_scores = sorted((k, v) for k, v in scores.items() if k[0] not in canaries)  # sorted once, for every field's PPI
    for rubric_name, rubric in rubrics.items():
        suites = suites_of[rubric_name]
        mine = [lab for lab in fresh if rubric_of_suite.get(lab.case.split("/", 1)[0]) == rubric_name]
        tests, tested_decided, tested_unjudged = _test_pairs(work, project, scores, set(suites))
        for field in rubric.fields:
            fc = _field(call, field, rubric, suites, mine, verdicts, tests, settings, seed, resamples)
            ppi, ppi_by_system = _ppi(field, set(suites), mine, real_scores)
            summary.fields.append(fc.model_copy(update={"tested_decided": tested_decided,
                                                        "tested_unjudged": tested_unjudged,
                                                        "ppi": ppi, "ppi_by_system": ppi_by_system}))
        overall = rubric.overall_metric
        weighted = {f.name for f in rubric.fields if f.effective_weight() > 0}
        low = [fc for fc in summary.fields if fc.rubric == rubric_name and fc.status == "uncalibrated"]
        for fc in low:
            summary.uncalibrated_metrics[fc.metric] = fc.reason
        if any(fc.field in weighted for fc in low):
            names = ", ".join(fc.display for fc in low if fc.field in weighted)
            summary.uncalibrated_metrics[overall] = f"weighs in uncalibrated {names}"
    return summary


def _bounds(field: Any) -> tuple[float, float]:
    """The lowest and highest value of a field's metric (booleans as 0/1), the value a file the pre-checks decided
    gets included (CodeJudge's 0 lies below its 1-5 scale, and such files count in the judge mean)."""
    if field.kind == "ordinal":
        cats = field.categories()
        low, high = float(cats[0]), float(cats[-1])
        decided = getattr(field, "decided", None)
        if isinstance(decided, (int, float)) and not isinstance(decided, bool):
            low, high = min(low, float(decided)), max(high, float(decided))
        return low, high
    return 0.0, 1.0


def _ppi(field: Any, suites: set[str], labels: list[Any], scores: list[tuple[tuple[str, str], Any]]
         ) -> tuple[PPIEstimate | None, dict[str, PPIEstimate]]:
    """The prediction-powered mean of ``field``'s metric over the outputs of ``suites`` (every system pooled, and per
    system): the judge's metric of each output (model verdicts and pre-check decisions alike: the metric the tables
    show), corrected by the mean of its people's labels where it has some."""
    people: dict[tuple[str, str], list[float]] = defaultdict(list)
    for lab in labels:
        if field.name in lab.values:
            people[(lab.system, lab.case)].append(float(lab.values[field.name]))
    rows: list[tuple[str, float, float | None]] = []  # (system, judge metric, mean label or None)
    metric = field.metric_name
    for (system, key), s in scores:  # in (system, case) order
        value = s.metrics.get(metric) if key.split("/", 1)[0] in suites else None
        if value is None:
            continue
        got = people.get((system, key))
        rows.append((system, float(value), sum(got) / len(got) if got else None))
    if not rows:
        return None, {}
    bounds = _bounds(field)
    pooled = ppi_mean([r[1] for r in rows], [r[2] for r in rows], bounds=bounds)
    by_system = {}
    for system in sorted({r[0] for r in rows if r[2] is not None}):
        mine = [r for r in rows if r[0] == system]
        by_system[system] = ppi_mean([r[1] for r in mine], [r[2] for r in mine], bounds=bounds)
    return pooled, by_system


def _status(vs_people: Agreement | None, settings: Any) -> tuple[Status, str]:
    if vs_people is None or vs_people.n == 0:
        status: Status = "uncalibrated" if settings.require_labels else "unmeasured"
        return status, "no judged output is labelled by a person"
    if vs_people.kappa is None:
        status = "uncalibrated" if settings.require_labels else "unmeasured"
        return status, f"kappa undefined: {vs_people.undefined}"
    k = vs_people.kappa
    if k < settings.min_kappa:
        return "uncalibrated", f"kappa {k:.2f} vs people (n={vs_people.n}) below {settings.min_kappa:g}"
    return "calibrated", f"kappa {k:.2f} vs people (n={vs_people.n}) at or above {settings.min_kappa:g}"


class _Counts(TypedDict):
    """A field's label counts (FieldCalibration's fields of the same names)."""

    labels: int
    judged: int
    decided: int
    unjudged: int


def _field(call: Callable[..., Any], field: Any, rubric: Any, suites: list[str], labels: list[Any],
           verdicts: dict[tuple[str, str], tuple[str, list[dict[str, Any]]]],
           tests: list[tuple[str, bool, list[dict[str, Any]], str]],
           settings: Any, seed: int, resamples: int) -> FieldCalibration:
    base: dict[str, Any] = {"rubric": rubric.name, "field": field.name, "metric": field.metric_name,
                            "display": field.display, "kind": field.kind, "suites": suites}
    mine = [lab for lab in labels if field.name in lab.values]
    counts: _Counts = {"labels": len(mine), "judged": 0, "decided": 0, "unjudged": 0}
    if field.kind == "continuous":
        return FieldCalibration(**base, status="unmeasured", reason="a continuous (0-1) field: no kappa", **counts)
    cats = field.categories()
    scale = "ordinal" if field.kind == "ordinal" else "boolean"
    items, judge_vals, people_vals = [], [], []
    by_person: dict[str, dict[str, Any]] = defaultdict(dict)
    for lab in mine:
        item = f"{lab.case}:{lab.system}"
        by_person[lab.labeller][item] = lab.values[field.name]
        status, answers = verdicts.get((lab.system, lab.case), ("", []))
        if status == "judged":
            value = judge_value(field, answers)
            if value is None:
                counts["unjudged"] += 1
                continue
            counts["judged"] += 1
            items.append(item)
            judge_vals.append(value)
            people_vals.append(lab.values[field.name])
        elif status == "parser":
            counts["decided"] += 1
        else:
            counts["unjudged"] += 1
    vs_people = call(Agreement, agreement, field.name, scale, items, judge_vals, people_vals, cats,
                     n_resamples=resamples, seed=seed) if mine else None
    between = []
    for a, b in combinations(sorted(by_person), 2):
        shared = sorted(set(by_person[a]) & set(by_person[b]))
        if not shared:
            continue
        got = call(Agreement, agreement, field.name, scale, shared, [by_person[a][i] for i in shared],
                   [by_person[b][i] for i in shared], cats, n_resamples=resamples, seed=seed)
        between.append(LabellerAgreement(first=a, second=b, agreement=got))
    status, reason = _status(vs_people, settings)
    return FieldCalibration(**base, status=status, reason=reason, vs_people=vs_people, between_people=between,
                            vs_tests=_vs_tests(call, field, tests, settings, seed, resamples), **counts)


def _test_pairs(work: str, project: Any, scores: dict[tuple[str, str], Any], suites: set[str]
                ) -> tuple[list[tuple[str, bool, list[dict[str, Any]], str]], int, int]:
    """(item, tests passed, the judge's verdicts, test metric) of every output of ``suites`` with both; and how many
    outputs with a test verdict the pre-checks decided, and how many have no judge verdict."""
    out = []
    decided = unjudged = 0
    for (system, key), s in sorted(scores.items()):
        if key.split("/", 1)[0] not in suites:
            continue
        metric = next((m for m in TEST_VERDICT_METRICS if s.metrics.get(m) is not None), None)
        if metric is None:
            continue
        if s.judge_status != "judged":
            decided += s.judge_status == "parser"
            unjudged += s.judge_status != "parser"
            continue
        case = project.case(key)
        judge = _judge_of(work, system, case.suite, case.id)
        if judge is not None and judge.status == "judged" and judge.verdicts:
            out.append((f"{key}:{system}", float(s.metrics[metric]) >= 0.5, _answers(judge), metric))
        else:
            unjudged += 1
    return out, decided, unjudged


def _vs_tests(call: Callable[..., Any], field: Any, tests: list[tuple[str, bool, list, str]], settings: Any,
              seed: int, resamples: int) -> TestAgreement | None:
    if not tests or field.kind == "continuous":
        return None
    if field.kind == "boolean":
        cut, words = None, "true"
    else:
        cats = field.categories()
        cut = cats[max(0, len(cats) - settings.high_from_top)]
        words = f"{cut} or more"
    items, judge_pass, tests_pass = [], [], []
    for item, passed, answers, _metric in tests:
        value = judge_value(field, answers)
        if value is None:
            continue
        ok = bool(value) if cut is None else value >= cut
        if not field.higher_is_better:
            ok = not ok
        items.append(item)
        judge_pass.append(ok)
        tests_pass.append(passed)
    if not items:
        return None
    table = {"both_pass": 0, "judge_pass_tests_fail": 0, "judge_fail_tests_pass": 0, "both_fail": 0}
    for j, t in zip(judge_pass, tests_pass):
        table[{(True, True): "both_pass", (True, False): "judge_pass_tests_fail",
               (False, True): "judge_fail_tests_pass", (False, False): "both_fail"}[(j, t)]] += 1
    got = call(Agreement, agreement, field.name, "boolean", items, judge_pass, tests_pass, [False, True],
               n_resamples=resamples, seed=seed)
    failing = table["judge_pass_tests_fail"] + table["both_fail"]
    metrics = ", ".join(dict.fromkeys(t[3] for t in tests))  # e.g. resolved, e2e_resolved: patch and e2e suites
    return TestAgreement(test_metric=metrics, judge_pass=words, agreement=got,
                         failing_rated_pass=call(RateEstimate, rate, table["judge_pass_tests_fail"], failing), **table)


def uncalibrated_metrics(report: object) -> dict[str, str]:
    """Metric -> why it is uncalibrated, from a report (empty for reports without calibration)."""
    cal = getattr(report, "calibration", None)
    return dict(cal.uncalibrated_metrics) if cal is not None else {}


def label_inputs(cfg: Config, project: Project) -> list[str]:
    """Every labels file of the project: summarize's file dependencies (a label edit re-summarizes)."""

    return [f for case in project.cases for f in label_files(case)]




def mark_uncalibrated(metric_info: dict[str, Any], summary: CalibrationSummary | None) -> dict[str, Any]:
    """``metric_info`` with each uncalibrated metric's entry carrying why (MetricInfo.uncalibrated)."""
    if summary is None or not summary.uncalibrated_metrics:
        return metric_info
    return {m: info.model_copy(update={"uncalibrated": summary.uncalibrated_metrics[m]})
            if m in summary.uncalibrated_metrics else info for m, info in metric_info.items()}
