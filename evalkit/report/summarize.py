"""summarize: aggregate every (system, case) score into report.json and the per-case JSON files."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable

from evalkit.artifacts import ARTIFACT_FILES, ScoresArtifact, artifact_path
from evalkit.cases import Case, Project
from evalkit.config import Config
from evalkit.fsutil import atomic_write_json, digest
from evalkit.store import ContentStore
from evalkit.metrics.registry import METRICS, MetricInfo
from evalkit.report.criteria import criterion_rates
from evalkit.report.models import (Aggregate, CaseCell, CaseDetail, CaseRow, Change, Coverage, ReleaseDiff, Report,
                                   SuiteSummary, SystemDiff, SystemSummary)
from evalkit.report.scenarios import scenario_groups
from evalkit.report.site import previous_report_path
from evalkit.project import participating
from evalkit.stats import (MeanEstimate, PairedComparison, RateEstimate, apply_holm, compare_binary, compare_scores,
                           mean_ci, rate)

EPS = 1e-9
STATS_CACHE_VERSION = 1


class StatsCache:
    """Results of the statistics functions from earlier summarize runs (`<work>/cache/stats.json`).

    Every entry is keyed by a digest of the call: the function, every argument (the values
    themselves, not where they came from) and a salt made of the source of the statistics code
    and the installed numpy and scipy. So an entry is only ever reused for the very same call,
    and a summarize whose intervals and tests are all cached needs neither numpy nor scipy (the
    bootstrap and their import are most of its time). The file keeps the entries the last run
    used, so it does not grow release after release.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.salt = _stats_salt()
        self.old: dict[str, Any] = {}
        self.used: dict[str, Any] = {}
        self.hits = self.misses = 0
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(data, dict) and data.get("salt") == self.salt and isinstance(data.get("entries"), dict):
                    self.old = data["entries"]
            except (FileNotFoundError, ValueError):
                pass

    def call(self, model: type, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs), or its stored result (a `model` dumped as JSON) for the same call."""
        key = digest([fn.__name__, args, sorted(kwargs.items())])
        stored = self.used.get(key)
        if stored is None:
            stored = self.old.get(key)
        if stored is not None:
            try:
                result = model.model_validate(stored)
            except ValueError:
                result = None
            if result is not None:
                self.hits += 1
                self.used[key] = stored
                return result
        self.misses += 1
        result = fn(*args, **kwargs)
        self.used[key] = result.model_dump(mode="json")
        return result

    def save(self) -> None:
        if self.path is not None and (self.misses or self.used.keys() != self.old.keys()):
            atomic_write_json(self.path, {"salt": self.salt, "entries": self.used}, compact=True)


def _stats_salt() -> str:
    """What else a cached statistic depends on: the code computing it and the numerical libraries."""
    import importlib.util

    import evalkit.power
    import evalkit.stats

    parts: list[Any] = [STATS_CACHE_VERSION, Path(evalkit.stats.__file__).read_text(encoding="utf-8"),
                        Path(evalkit.power.__file__).read_text(encoding="utf-8")]
    for name in ("numpy", "scipy"):
        spec = importlib.util.find_spec(name)
        origin = Path(spec.origin) if spec and spec.origin else None
        if origin is None:
            parts.append([name, None])
            continue
        version = origin.parent / "version.py"
        marker = version if version.exists() else origin
        st = marker.stat()
        parts.append([name, str(marker), st.st_mtime_ns, st.st_size,
                      marker.read_text(encoding="utf-8", errors="replace") if marker == version else None])
    return digest(parts)


def _call(cache: StatsCache | None, model: type, fn: Any, *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs) if cache is None else cache.call(model, fn, *args, **kwargs)


def aggregate(info: MetricInfo, values: list[float], n_na: int, excluded: dict[str, int], cfg: Config,
              cache: StatsCache | None = None) -> Aggregate:
    """Rate with a Wilson interval, mean with a bootstrap BCa interval, or a total."""
    base = {"metric": info.name, "n": len(values), "not_applicable": n_na, "excluded": dict(sorted(excluded.items()))}
    if info.aggregate == "sum":
        return Aggregate(**base, value=round(sum(values), 6) if values else None, method="total")
    if info.aggregate == "rate":
        est = _call(cache, RateEstimate, rate, int(round(sum(values))), len(values), cfg.report.confidence)
        return Aggregate(**base, value=est.value, low=est.low, high=est.high, method="wilson")
    m = _call(cache, MeanEstimate, mean_ci, values, n_resamples=cfg.report.bootstrap_resamples,
                          seed=cfg.report.seed, confidence=cfg.report.confidence)
    return Aggregate(**base, value=m.value, low=m.low, high=m.high, method=m.method)


def aggregate_scores(scores: Iterable[ScoresArtifact], metric_names: list[str], cfg: Config,
                     cache: StatsCache | None = None) -> dict[str, Aggregate]:
    scores = list(scores)
    excluded = Counter(s.excluded for s in scores if s.excluded)  # the same for every metric
    kept = [s.metrics for s in scores if not s.excluded]
    out = {}
    for name in metric_names:
        values, n_na = [], 0
        for metrics in kept:
            v = metrics.get(name)
            if v is None:
                n_na += 1
            else:
                values.append(float(v))
        out[name] = aggregate(METRICS[name], values, n_na, excluded, cfg, cache)
    return out


def metric_order(scores: Iterable[ScoresArtifact]) -> list[str]:
    present = {k for s in scores for k, v in s.metrics.items() if v is not None}
    return [name for name in METRICS if name in present]


def compare_suite(cfg: Config, names: list[str], scores: dict[tuple[str, str], ScoresArtifact], systems: list[str],
                  case_ids: list[str], cache: StatsCache | None = None) -> list:
    """Each system against the baseline on the cases both have a value for; Holm per system.

    When the configured baseline does not run on this suite, the suite's first system is its baseline.
    """
    if not systems:
        return []
    baseline = cfg.baseline_name if cfg.baseline_name in systems else systems[0]

    def scored(system: str) -> dict[str, dict[str, float | None]]:
        """case id -> metrics of the system's scores that are not excluded."""
        return {cid: s.metrics for cid in case_ids if (s := scores.get((system, cid))) is not None and not s.excluded}

    base_scored = scored(baseline)
    out = []
    for system in systems:
        if system == baseline:
            continue
        # cases both have a (not excluded) score for, in case order
        other_scored = scored(system)
        both = [(a, b) for cid in case_ids
                if (b := other_scored.get(cid)) is not None and (a := base_scored.get(cid)) is not None]
        group = []
        for name in names:
            info = METRICS[name]
            if info.aggregate == "sum" or info.higher_is_better is None:
                continue
            base_vals, other_vals = [], []
            for a, b in both:
                va, vb = a.get(name), b.get(name)
                if va is None or vb is None:
                    continue
                base_vals.append(va)
                other_vals.append(vb)
            if len(base_vals) < 1:
                continue
            if info.binary:
                group.append(_call(cache, PairedComparison, compare_binary, name, baseline, system,
                                               [v >= 0.5 for v in base_vals], [v >= 0.5 for v in other_vals],
                                               seed=cfg.report.seed))
            else:
                group.append(_call(cache, PairedComparison, compare_scores, name, baseline, system, base_vals,
                                               other_vals, seed=cfg.report.seed))
        out.extend(apply_holm(group))
    return out


def corpus_metrics(cfg: Config, project: Project, system: str, cases: list[Case],
                   scores: dict[tuple[str, str], ScoresArtifact]) -> dict[str, float]:
    """Corpus-level metrics of one system on one suite: corpus_codebleu over the main files.

    Uses the same cases as the per-case `codebleu` mean (scored, not excluded, with a reference), but
    pools n-gram, syntax and dataflow counts over them before dividing, so the two numbers differ.
    """
    from evalkit.artifacts import OutputArtifact
    from evalkit.stages.grade import main_file
    from evalkit.stages.score import expected_code

    used = [(case.key, s.provenance.model_dump() if s.provenance else None) for case in cases
            if (s := scores.get((system, case.key))) is not None and not s.excluded
            and s.metrics.get("codebleu") is not None]
    if not used or len(used) > cfg.metrics.corpus_codebleu_max_cases:
        return {}
    # Pooling a corpus costs seconds at 1,000 cases: cache it by the provenance of what it pools.
    store = ContentStore(cfg.work_path / "cache", "corpus")
    key = store.key(["corpus_codebleu", system, list(cfg.metrics.codebleu_weights), used])
    cached = store.get(key)
    if cached is not None:
        return cached
    predictions, references, language = [], [], None
    for case in cases:
        s = scores.get((system, case.key))
        if s is None or s.excluded or s.metrics.get("codebleu") is None:
            continue
        mf, ref = main_file(case), expected_code(case)
        p = artifact_path(cfg.work_path, "generate", system, case.suite, case.id)
        if mf is None or ref is None or not p.exists():
            continue
        output = OutputArtifact.model_validate_json(p.read_bytes())
        predictions.append(output.first.files.get(mf, ""))
        references.append(ref)
        language = case.language
    if not predictions or language is None:
        return {}
    from evalkit.metrics.codebleu import corpus_codebleu

    result = corpus_codebleu(predictions, references, language, weights=cfg.metrics.codebleu_weights)
    out = {} if result is None else {"corpus_codebleu": result.codebleu}
    store.put(key, out)
    return out


def previous_report(cfg: Config) -> Report | None:
    """The release before this one in site/manifest.json (or the newest other release present)."""
    path = previous_report_path(cfg.site_path, cfg.release)
    if path is None:
        return None
    try:
        return Report.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, OSError):
        return None


def release_diff(prev: Report | None, cases: list[CaseRow]) -> ReleaseDiff:
    if prev is None:
        return ReleaseDiff()
    before = {(r.suite, r.case_id): r for r in prev.cases}
    diffs: dict[str, SystemDiff] = {}
    for row in cases:
        old = before.get((row.suite, row.case_id))
        if old is None:
            continue
        for system, cell in row.systems.items():
            old_cell = old.systems.get(system)
            if old_cell is None:
                continue
            d = diffs.setdefault(system, SystemDiff())
            for name, after in cell.metrics.items():
                info = METRICS.get(name)
                if info is None or not info.headline or info.higher_is_better is None or info.aggregate == "sum":
                    continue
                if name == "wall_s":
                    continue  # timing noise is not a regression
                b = old_cell.metrics.get(name)
                if b is None or after is None or abs(after - b) <= EPS:
                    continue
                better = (after > b) == info.higher_is_better
                (d.improved if better else d.regressed).append(
                    Change(suite=row.suite, case_id=row.case_id, metric=name, before=b, after=after))
    return ReleaseDiff(previous_release=prev.release, systems=dict(sorted(diffs.items())))


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def case_detail(cfg: Config, case: Case, systems: list[Any]) -> CaseDetail:
    work = cfg.work_path
    input_files, reference_files = {}, {}
    for dotted, path in sorted(case.refs.items()):
        if Path(path).is_file():
            text = Path(path).read_text(encoding="utf-8", errors="replace")
            (input_files if dotted.startswith("inputs.") else reference_files)[dotted] = text
    per_system = {}
    for system in systems:
        arts = {stage: _read_json(artifact_path(work, stage, system.name, case.suite, case.id))
                for stage in ("generate", "execute", "grade", "score")}
        per_system[system.name] = {"output": arts["generate"], "execution": arts["execute"],
                                   "grades": arts["grade"], "scores": arts["score"]}
    from evalkit.stages.grade import main_file

    return CaseDetail(release=cfg.release, suite=case.suite, kind=case.kind, language=case.language, case_id=case.id,
                      description=case.data.get("description", ""), tags=case.data.get("tags", []),
                      problems=[str(p) for p in case.problems], inputs=case.inputs, input_files=input_files,
                      reference_files=reference_files, primary_file=main_file(case), systems=per_system,
                      reference=case.reference, criteria=case.data.get("criteria") or [])


def summarize(cfg: Config, project: Project, write_case_details: bool = True) -> Report:
    """Read every scores.json of the run; write report.json and site/<release>/cases/**.json."""
    from evalkit.graders.audit import read_audit

    pairs = participating(cfg, project)
    cache = StatsCache(cfg.work_path / "cache" / "stats.json")
    work, score_file = str(cfg.work_path), ARTIFACT_FILES["score"]
    scores: dict[tuple[str, str], ScoresArtifact] = {}
    by_system: dict[str, list[tuple[str, ScoresArtifact]]] = defaultdict(list)
    for system, case in pairs:
        # the same path as artifact_path(), built as a plain string: this runs once per (system, case)
        try:
            with open(f"{work}/artifacts/{system.name}/{case.suite}/{case.id}/{score_file}", "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            continue
        key = case.key
        s = scores[(system.name, key)] = ScoresArtifact.model_validate_json(data)
        by_system[system.name].append((key, s))
    systems_in_run = [s for s in cfg.systems if any(p[0] is s for p in pairs)]
    names = [s.name for s in systems_in_run]

    rows: list[CaseRow] = []
    by_suite_cases: dict[str, list[Case]] = defaultdict(list)
    for case in project.cases:
        by_suite_cases[case.suite].append(case)
        cells = {}
        for system in systems_in_run:
            s = scores.get((system.name, case.key))
            if s is None:
                continue
            cells[system.name] = CaseCell(status=s.status, reason=s.reason[:500], metrics=s.metrics, excluded=s.excluded)
        rows.append(CaseRow(suite=case.suite, case_id=case.id, description=case.data.get("description", ""),
                            tags=case.data.get("tags", []), problems=[str(p) for p in case.problems], systems=cells))

    system_summaries = []
    for system in systems_in_run:
        mine = [s for _, s in by_system[system.name]]
        aggs = aggregate_scores(mine, metric_order(mine), cfg, cache)
        resolved = aggs.get("resolved")
        cost = sum(s.usage.cost_usd for s in mine)
        cpr = None
        if resolved is not None and resolved.value and resolved.n:
            k = round(resolved.value * resolved.n)
            cpr = cost / k if k else None
        system_summaries.append(SystemSummary(
            name=system.name, description=system.description, adapter=system.adapter,
            is_baseline=system.name == cfg.baseline_name, n_cases=len(mine),
            status_counts=dict(sorted(Counter(s.status for s in mine).items())), metrics=aggs,
            cost_per_resolved=cpr,
            judge_tokens=sum(s.judge_usage.input_tokens + s.judge_usage.output_tokens for s in mine),
            coverage=coverage(mine)))

    suite_summaries = []
    isolation_notes = _isolation_notes(cfg, pairs)
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
        if "codebleu" in order and len(cases) > cfg.metrics.corpus_codebleu_max_cases:
            notes.append(f"Corpus-level CodeBLEU not computed: {len(cases)} cases is more than "
                         f"metrics.corpus_codebleu_max_cases ({cfg.metrics.corpus_codebleu_max_cases}).")
        suite_summaries.append(SuiteSummary(
            name=suite_name, kind=suite.kind, language=suite.language,
            description=suite.spec.description if suite.spec else "", n_cases=len(cases), metrics=order,
            systems=per_system, comparisons=compare_suite(cfg, order, {(sn, ck): s for (sn, ck), s in suite_scores.items()},
                                                          names_here, keys, cache),
            broken=broken, notes=notes,
            coverage={n: coverage([s for (sn, _), s in suite_scores.items() if sn == n]) for n in names_here},
            criteria=criterion_rates(work, cases, names_here, suite_scores, cfg.report.confidence)
            if suite.kind == "generation" else [],
            corpus={n: c for n in names_here if (c := corpus_metrics(cfg, project, n, cases, scores))}))

    breakdowns: dict[str, dict[str, dict[str, Aggregate]]] = {}
    tags = sorted({t for c in project.cases for t in c.data.get("tags", [])})
    headline = [m for m, info in METRICS.items() if info.headline and info.aggregate != "sum" and m != "wall_s"]
    tagged_by: dict[str, set[str]] = defaultdict(set)
    for c in project.cases:
        for t in c.data.get("tags", []):
            tagged_by[t].add(c.key)
    for tag in tags:
        tagged = tagged_by[tag]
        breakdowns[tag] = {}
        for n in names:
            mine = [s for ck, s in by_system[n] if ck in tagged]
            if mine:
                order = [m for m in metric_order(mine) if m in headline]
                breakdowns[tag][n] = aggregate_scores(mine, order, cfg, cache)
    prev = previous_report(cfg)
    from evalkit.report.decision import decision_summary

    decision = decision_summary(lambda *a, **k: _call(cache, *a, **k), suite_summaries, rows, prev,
                                cfg.report.seed, cfg.report.detect_difference)
    from evalkit.report.calibration import calibration_summary, mark_uncalibrated

    calibration = calibration_summary(cfg, project, scores, lambda *a, **k: _call(cache, *a, **k))
    cache.save()

    present = {m for s in scores.values() for m in s.metrics}
    present |= {m for su in suite_summaries for c in su.corpus.values() for m in c}
    report = Report(release=cfg.release, title=cfg.title, baseline=cfg.baseline_name, systems=system_summaries,
                    suites=suite_summaries, breakdowns=breakdowns, cases=rows,
                    diff=release_diff(prev, rows), decision=decision, judge_audit=read_audit(cfg),
                    scenarios=scenario_groups(cfg, project, scores),
                    metric_info=mark_uncalibrated({m: METRICS[m] for m in METRICS if m in present}, calibration),
                    calibration=calibration,
                    sandbox=run_isolation(cfg, pairs),
                    notes=sorted({n for notes in isolation_notes.values() for n in notes} | judge_notes(scores.values(), cfg.judge)
                                 | set(project.input_notes())),
                    inputs_digest=digest(sorted((k, s.provenance.model_dump() if s.provenance else None)
                                                for k, s in scores.items())))
    out_dir = cfg.site_path / cfg.release
    if write_case_details:
        write_case_details_incrementally(cfg, project, pairs, scores, out_dir)
    atomic_write_json(out_dir / "report.json", report, compact=True)
    return report


def write_case_details_incrementally(cfg: Config, project: Project, pairs: list[tuple[Any, Case]],
                                     scores: dict[tuple[str, str], ScoresArtifact], out_dir: Path) -> None:
    """Write site/<release>/cases/<suite>/<case>.json, skipping cases whose inputs did not change.

    A case's detail is a function of the case and its systems' artifacts, whose provenance the
    scores carry; an index of those digests lets a one-case edit rewrite one file, not a thousand.
    """
    index_path = cfg.work_path / "cache" / f"case-details-{cfg.release}.json"
    try:
        old_index = json.loads(index_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        old_index = {}
    systems_of: dict[str, list[Any]] = defaultdict(list)
    for system, case in pairs:
        systems_of[case.key].append(system)
    index = {}
    for case in project.cases:
        sys_here = systems_of[case.key]
        key = digest([case.digest, [(s.name, prov.model_dump() if (sc := scores.get((s.name, case.key))) is not None
                                     and (prov := sc.provenance) is not None else None)
                                    for s in sys_here]])
        index[case.key] = key
        path = out_dir / "cases" / case.suite / f"{case.id}.json"
        if old_index.get(case.key) == key and path.exists():
            continue
        atomic_write_json(path, case_detail(cfg, case, sys_here), compact=True)
    atomic_write_json(index_path, index, compact=True)


def coverage(scores: list[ScoresArtifact]) -> Coverage:
    """Cases attempted (anything but not_attempted) out of the cases scored."""
    missing = sum(1 for s in scores if s.status == "not_attempted")
    return Coverage(attempted=len(scores) - missing, cases=len(scores))


def judge_notes(scores: Iterable[ScoresArtifact], settings: Any = None) -> set[str]:
    """Say plainly when model-graded metrics are missing, and why (``settings``: the judge's, for its key's name)."""
    from evalkit.llm.settings import missing_key

    counts = Counter(s.judge_status for s in scores if s.judge_status)
    notes = set()
    if counts.get("not_configured"):
        notes.add(f"LLM judge not configured ({missing_key(settings)}): {counts['not_configured']} outputs "
                  "have no model-graded scores; the deterministic graders still score them.")
    if counts.get("not_judged_budget"):
        notes.add(f"Not judged: budget reached for {counts['not_judged_budget']} outputs (judge.budget_usd).")
    if counts.get("infra_error"):
        notes.add(f"{counts['infra_error']} outputs have no judge verdict: the judge API failed "
                  "(retried on the next run).")
    if counts.get("judge_error"):
        notes.add(f"{counts['judge_error']} outputs have no judge verdict: the judge's answer stayed unusable "
                  "after one repair request (judge_error, raw answer kept; not cached, re-asked only by "
                  "`evalkit run --retry-judge-errors`).")
    notes.update(f"Judge provider notice: {n}" for s in scores for n in s.judge_notices)
    return notes


def run_isolation(cfg: Config, pairs: list[tuple[Any, Case]]) -> Any:
    """Where this run's tests executed, as decided when it started (the execute slice records it);
    None when no suite of the run executes tests."""
    from evalkit.isolation import IsolationDecision, for_run
    from evalkit.tasks import EXECUTED_KINDS

    if not any(case.kind in EXECUTED_KINDS for _, case in pairs):
        return None
    try:
        data = json.loads((cfg.work_path / "slices" / "execute.json").read_text(encoding="utf-8"))
        return IsolationDecision.model_validate(data["isolation"])
    except (FileNotFoundError, KeyError, TypeError, ValueError):
        return for_run(cfg.sandbox.backend)


def _isolation_notes(cfg: Config, pairs: list[tuple[Any, Case]]) -> dict[str, list[str]]:
    notes: dict[str, set[str]] = defaultdict(set)
    work, name = str(cfg.work_path), ARTIFACT_FILES["execute"]
    for system, case in pairs:
        try:
            with open(f"{work}/artifacts/{system.name}/{case.suite}/{case.id}/{name}", encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            continue
        if data.get("isolation") == "local":
            notes[case.suite].add("Tests ran in the local sandbox (subprocesses on the build host), without container isolation.")
    return {k: sorted(v) for k, v in notes.items()}
