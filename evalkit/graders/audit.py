"""Consistency audits of the judge (``judge.audit``) on a seeded sample of cases.

- **repeats**: the judge's own request for a sampled (system, case) asked ``repeats`` times. The
  repeats are the request's samples 0..k-1 (``LLMRequest.sample_index``, part of the cache key and
  never sent): each is a distinct, content-addressed question, so a repeat is never served another
  repeat's answer, a rerun pays nothing, and the first ``judge.samples`` of them are the grade
  stage's own answers (already paid). Per verdict field: the spread (max - min) and the share of
  cases whose verdict changes (any difference; for scores also 2 points or more).
- **pairwise**: for every pair of systems with different outputs on a sampled case, the pairwise
  judge (evalkit.graders.pairwise) is asked which is better with a's output first, then with b's
  first; the order-flip rate is the share of pairs whose preferred system changes, with its
  Wilson interval.

Only cases the migration judge grades are audited, and a repeat audit only where the judge is
asked at all (not for an output the parser pre-check or the degenerate-output check decides).
``audit_plan`` lists the same requests without sending any, for ``evalkit estimate``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalkit.artifacts import Sample
from evalkit.fsutil import digest
from evalkit.graders.audit_models import (FieldConsistency, JudgeAudit, PairJudgement, PairwiseAudit, RepeatAudit,
                                          RepeatedVerdicts, Share)
from evalkit.graders.audit_settings import AuditSettings
from evalkit.kind_registry import kind as suite_kind
from evalkit.llm.calls import LLMError, LLMRequest, LLMResponse
from evalkit.artifacts import artifact_path, read_optional
from evalkit.fsutil import atomic_write_json
from evalkit.graders.rubric_config import rubric_for
from evalkit.kind_registry import main_file
from evalkit.project import Loaded, participating
from evalkit.stages.slices import grade_slice
from evalkit.stats import wilson_interval
from evalkit.store import ContentStore
from evalkit.systems.base import RunContext, is_free, run_system
from evalkit.stages.batch_record import GradeBatchRecord, record_path
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.cases import Case, Project
    from evalkit.config import Config
    from evalkit.llm.client import ModelClient
    from evalkit.stages import generate as generate_code
    from evalkit.graders import judge_dispatch as judge_dispatch_code
    from evalkit.graders import migration_judge as migration_judge_code
    from evalkit.graders import pairwise
    from evalkit.graders import pairwise as pairwise_code
    from evalkit.llm import plan as plan_code
    from evalkit.llm import structured as structured_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    generate_code = later("evalkit.stages.generate")
    judge_dispatch_code = later("evalkit.graders.judge_dispatch")
    migration_judge_code = later("evalkit.graders.migration_judge")
    pairwise = later("evalkit.graders.pairwise")
    pairwise_code = later("evalkit.graders.pairwise")
    plan_code = later("evalkit.llm.plan")
    structured_code = later("evalkit.llm.structured")

AUDIT_FILE = "judge_audit.json"
INFRA_PREFIX = "API failure: "
"""Starts a pair's error when a request failed for infrastructure reasons (not an unusable answer)."""


def share(k: int, n: int) -> Share:
    """k of n with its Wilson 95% interval (evalkit.stats)."""

    ci = wilson_interval(k, n)
    return Share(k=k, n=n, value=k / n if n else None, ci_low=ci[0] if ci else None, ci_high=ci[1] if ci else None)


FieldKind = Literal["ordinal", "boolean", "continuous"]


def field_kinds(cfg: Config, case: Case) -> list[tuple[str, FieldKind, list[Any] | None]]:
    """(name, kind, categories) of the verdict fields ``case`` is judged on: its rubric's
    (evalkit.graders.rubric_config.rubric_for), in the rubric's order."""

    out: list[tuple[str, FieldKind, list[Any] | None]] = []
    for f in rubric_for(cfg, case).fields:
        cats = f.categories
        out.append((f.name, f.kind, cats() if callable(cats) else cats))
    return out


def union_fields(lists: list[list[tuple[str, FieldKind, Any]]]) -> list[tuple[str, FieldKind, Any]]:
    """Fields of several cases' rubrics, each once, in first-seen order."""
    seen: dict[str, tuple[str, FieldKind, Any]] = {}
    for fields in lists:
        for f in fields:
            seen.setdefault(f[0], f)
    return list(seen.values())


def sample_cases(keys: list[str], settings: AuditSettings) -> list[str]:
    """The audited case keys: ``settings.sample`` of ``keys`` (a count or a fraction, rounded up), in an
    order fixed by ``settings.seed`` and each key alone (adding a case never reshuffles the others)."""
    ordered = sorted(keys, key=lambda k: (digest([settings.seed, k]), k))
    n = settings.sample if isinstance(settings.sample, int) else math.ceil(settings.sample * len(keys))
    return ordered[: min(n, len(keys))]


@dataclass
class Candidate:
    """One (system, case) the audit may ask about, with its graded answer."""

    system: str
    case: Any
    sample: Sample
    exact: bool = True
    """False when ``sample`` stands in for an answer not generated yet (planning only)."""


@dataclass
class AuditCall:
    """One request of the audit."""

    asker: Literal["judge audit", "pairwise judge"]
    system: str
    suite: str
    request: LLMRequest
    exact: bool


@dataclass
class AuditWork:
    """Everything the audit asks, found without a call."""

    sampled: list[str]
    repeats: list[tuple[Candidate, list[LLMRequest]]]
    pairs: list[tuple[str, Candidate, Candidate, LLMRequest | None, LLMRequest | None]]
    """(case key, a, b, request with a first, request with b first); no requests for identical outputs."""
    same_output: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """(system, case key) of an audited output -> the other systems whose output on that case is byte-identical:
    one output, audited once and counted once."""
    duplicate_pairs: int = 0
    """Pairs of systems whose two outputs are, byte for byte, a pair already compared on that case: left out."""


def _systems(cfg: Any, project: Any, settings: AuditSettings) -> dict[str, list[Any]]:
    """Case key -> systems (config order) that run it, of the audited kinds and the audit's systems."""

    by_case: dict[str, list[Any]] = {}
    for system, case in participating(cfg, project):
        if not suite_kind(case.kind).judging.audited or not case.ok:  # e.g. migration: the judge's verdict fields
            continue
        if settings.systems and system.name not in settings.systems:
            continue
        by_case.setdefault(case.key, []).append(system)
    return by_case


def audit_settings(cfg: Config) -> AuditSettings:
    """``judge.audit`` of a config whose audit runs (its callers check that first)."""
    if cfg.judge.audit is None:
        raise ValueError("judge.audit is not configured: there is no judge audit to run")
    return cfg.judge.audit


def _judge_settings(cfg: Any, settings: AuditSettings) -> Any:
    return cfg.judge.with_env().model_copy(update={"samples": max(settings.repeats, 1)})


def audit_work(cfg: Config, project: Project, candidates: dict[tuple[str, str], Candidate | None]) -> AuditWork:
    """The audit's requests given each sampled (system, case)'s answer (None: failed, nothing to audit).

    ``candidates`` must hold every (system name, case key) of the sampled cases' systems."""


    settings = audit_settings(cfg)
    by_case = _systems(cfg, project, settings)
    sampled = sample_cases(sorted(by_case), settings)
    judge = _judge_settings(cfg, settings)
    work = AuditWork(sampled=sampled, repeats=[], pairs=[])
    for key in sampled:
        case = project.case(key)
        mf = main_file(case)
        ready = [c for s in by_case[key] if (c := candidates.get((s.name, key))) is not None]
        if settings.repeats >= 2:
            first_of: dict[str, Candidate] = {}  # output text -> the first system audited with it
            for cand in ready:
                text = cand.sample.files.get(mf or "", "")
                if cand.exact and text in first_of:  # the same file: one output, audited once
                    work.same_output[(first_of[text].system, key)].append(cand.system)
                    continue
                item = judge_dispatch_code.migration_input(case, cand.sample, mf)
                if cand.exact and migration_judge_code.decided_without_model(item):
                    continue  # decided without a model: nothing to ask again
                if cand.exact:
                    first_of[text] = cand
                    work.same_output[(cand.system, key)] = []
                work.repeats.append((cand, migration_judge_code.migration_requests(item, judge, rubric_for(cfg, case))))
        if settings.pairwise:
            compared: set[frozenset[str]] = set()
            for a, b in combinations(ready, 2):
                first, second = a.sample.files.get(mf or "", ""), b.sample.files.get(mf or "", "")
                if first == second and a.exact and b.exact:
                    work.pairs.append((key, a, b, None, None))
                    continue
                if a.exact and b.exact:
                    if frozenset((first, second)) in compared:  # the same two files as a pair already compared
                        work.duplicate_pairs += 1
                        continue
                    compared.add(frozenset((first, second)))
                item = judge_dispatch_code.migration_input(case, a.sample, mf)
                work.pairs.append((key, a, b,
                                   pairwise_code.pairwise_request(item, first, second, judge, f"pairwise:{key}:{a.system}>{b.system}"),
                                   pairwise_code.pairwise_request(item, second, first, judge, f"pairwise:{key}:{b.system}>{a.system}")))
    return work


def work_calls(work: AuditWork) -> Iterator[AuditCall]:
    """Every request of ``work``, in the order the audit sends them (repeats, then pairs)."""
    for cand, requests in work.repeats:
        for request in requests:
            yield AuditCall("judge audit", cand.system, cand.case.suite, request, cand.exact)
    for _key, a, b, ab, ba in work.pairs:
        for pair_request in (ab, ba):
            if pair_request is not None:
                yield AuditCall("pairwise judge", f"{a.system} vs {b.system}", a.case.suite, pair_request,
                                a.exact and b.exact)


# ---- planning (evalkit estimate) ---------------------------------------------------------------

def audit_plan(loaded: Loaded) -> list[AuditCall]:
    """The audit's requests of the next run, from the answers known now (stand-ins for the others)."""

    cfg, project = loaded.config, loaded.project
    settings: AuditSettings | None = cfg.judge.audit
    if settings is None or not settings.active:
        return []

    generated = ContentStore(cfg.work_path / "cache", "generate")
    ctx = RunContext(root=Path(cfg.root), work=cfg.work_path, judge=cfg.judge)
    candidates: dict[tuple[str, str], Candidate | None] = {}
    by_case = _systems(cfg, project, settings)
    for key in sample_cases(sorted(by_case), settings):
        case = project.case(key)
        for system in by_case[key]:
            hit = generated.get(generated.key(generate_code.generate_key(cfg, system, case, 0)))
            sample = Sample.model_validate(hit) if hit is not None else None
            if sample is None and is_free(system.adapter):
                sample = run_system(system, case, 0, ctx)
            if sample is None:
                candidates[(system.name, key)] = Candidate(system.name, case, plan_code.stand_in(system, case), exact=False)
            elif sample.status in ("error", "timeout", "infra_error"):
                candidates[(system.name, key)] = None
            else:
                candidates[(system.name, key)] = Candidate(system.name, case, sample)
    return list(work_calls(audit_work(cfg, project, candidates)))


# ---- running -------------------------------------------------------------------------------------

class CountingClient:
    """A model client that counts the requests it actually sends (cache hits are free)."""

    def __init__(self, client: ModelClient) -> None:
        self.client = client
        self.cache = client.cache
        self.sent = 0
        self.cost_usd = 0.0
        self.keys: set[str] = set()
        """Every distinct request asked, cached or not."""
        self._lock = threading.Lock()

    def call(self, request: LLMRequest) -> LLMResponse:
        response = self.client.call(request)
        with self._lock:
            self.keys.add(response.request_key)
        if not response.cached:
            with self._lock:
                self.sent += 1
                self.cost_usd += response.cost_usd
        return response


def _run_candidates(cfg: Any, project: Any) -> dict[tuple[str, str], Candidate | None]:
    settings: AuditSettings = cfg.judge.audit
    by_case = _systems(cfg, project, settings)
    candidates: dict[tuple[str, str], Candidate | None] = {}
    for key in sample_cases(sorted(by_case), settings):
        case = project.case(key)
        for system in by_case[key]:
            output = read_optional(artifact_path(cfg.work_path, "generate", system.name, case.suite, case.id), "generate")
            ok = output is not None and output.status == "ok"
            candidates[(system.name, key)] = Candidate(system.name, case, output.first) if ok and output else None
    return candidates


def _repeat_one(cfg: Any, client: Any, cand: Candidate, requests: list[LLMRequest],
                same: dict[tuple[str, str], list[str]]) -> RepeatedVerdicts:

    rubric = rubric_for(cfg, cand.case)
    got = structured_code.ask_samples(client, requests, lambda text: migration_judge_code.parse_verdict(text, rubric))
    values: dict[str, list[int | float | bool]] = {}
    for verdict in got.values:
        for f in rubric.fields:
            values.setdefault(f.name, []).append(getattr(verdict, f.name))
    return RepeatedVerdicts(system=cand.system, case=cand.case.key, values=values, failed=len(got.errors),
                            error=str(got.stopped) if got.stopped is not None else None,
                            same_output=same.get((cand.system, cand.case.key), []))


def field_consistency(cases: list[RepeatedVerdicts], fields: list[tuple[str, FieldKind, Any]]
                      ) -> list[FieldConsistency]:
    """Per field: spread and the share of cases whose verdict changes, over cases with 2+ usable answers
    (ordinal scores also: the share spanning 2 points or more)."""
    out = []
    for name, kind, _cats in fields:
        series = [c.values[name] for c in cases if len(c.values.get(name, [])) >= 2]
        changed = sum(len(set(v)) > 1 for v in series)
        if kind == "boolean":
            out.append(FieldConsistency(field=name, kind=kind, n=len(series), changed=share(changed, len(series))))
            continue
        spreads = [max(v) - min(v) for v in series]
        out.append(FieldConsistency(
            field=name, kind=kind, n=len(series), mean_spread=sum(spreads) / len(spreads) if spreads else None,
            max_spread=max(spreads) if spreads else None, changed=share(changed, len(series)),
            changed_2=share(sum(s >= 2 for s in spreads), len(series)) if kind == "ordinal" else None))
    return out


def _pair_one(client: Any, key: str, a: Candidate, b: Candidate, ab: LLMRequest, ba: LLMRequest) -> PairJudgement:
    answers: list[Any] = []
    error = None
    for request in (ab, ba):
        try:
            got = pairwise_code.ask_pairwise(client, request)
        except LLMError as exc:
            error = f"{INFRA_PREFIX}{exc}"
            break
        answers.append(got.value)
        if got.value is None:
            error = f"unusable answer after one repair: {got.error}"
    answers += [None] * (2 - len(answers))
    ab_w = answers[0].winner if answers[0] is not None else None
    ba_w = answers[1].winner if answers[1] is not None else None
    p_ab, p_ba = pairwise_code.preferred(ab_w, a.system, b.system), pairwise_code.preferred(ba_w, b.system, a.system)
    return PairJudgement(case=key, a=a.system, b=b.system, ab=ab_w, ba=ba_w, preferred_ab=p_ab, preferred_ba=p_ba,
                         flipped=None if p_ab is None or p_ba is None else p_ab != p_ba,
                         reasons=[v.reason for v in answers if v is not None], error=error)


def pairwise_summary(pairs: list[PairJudgement], identical: int, duplicates: int = 0) -> PairwiseAudit:
    """Flip rate over pairs with both answers; first-position preference over every non-tie answer. ``pairs`` are
    distinct pairs of files (``duplicates``: pairs of systems that repeat one of them, left out)."""
    both = [p for p in pairs if p.flipped is not None]
    answers = [w for p in pairs for w in (p.ab, p.ba) if w is not None]
    return PairwiseAudit(pairs=pairs, flip_rate=share(sum(bool(p.flipped) for p in both), len(both)),
                         first_preferred=share(answers.count("first"), len(answers)), identical_skipped=identical,
                         duplicates_skipped=duplicates)


def run_audit(cfg: Config, project: Project, client: ModelClient | None) -> JudgeAudit:
    """Ask the audit's requests through ``client`` (None: not configured) and summarize them."""
    settings = audit_settings(cfg)
    judge = cfg.judge.with_env()
    work = audit_work(cfg, project, _run_candidates(cfg, project))
    base = JudgeAudit(release=cfg.release, model=judge.model, settings=settings, status="done",
                      sampled_cases=work.sampled)
    notes: list[str] = []
    unknown = sorted(set(settings.systems) - {s.name for s in cfg.systems})
    if unknown:
        notes.append(f"judge.audit.systems names no system of the config: {', '.join(unknown)}")
    if client is None:
        return base.model_copy(update={"status": "not_configured", "notes": notes})  # the status says it
    if not work.repeats and not work.pairs:
        return base.model_copy(update={"status": "no_cases", "notes": notes})
    counting = CountingClient(client)
    with ThreadPoolExecutor(max_workers=judge.concurrency) as pool:
        repeated = list(pool.map(lambda w: _repeat_one(cfg, counting, w[0], w[1], work.same_output), work.repeats))
        asked = [p for p in work.pairs if p[3] is not None]
        pairs = list(pool.map(lambda p: _pair_one(counting, *p), asked))  # type: ignore[misc]
    update: dict[str, Any] = {"requests": len(counting.keys), "calls_sent": counting.sent, "cost_usd": counting.cost_usd}
    if judge.mode == "batch":  # the audit's requests rode the grade stage's batch: its spend is recorded there
        path = record_path(cfg.work_path)
        record = GradeBatchRecord.model_validate_json(path.read_bytes()) if path.exists() else GradeBatchRecord()
        mine = [record.by_asker[a] for a in ("judge audit", "pairwise judge") if a in record.by_asker]
        update["batch_requests"] = sum(m.answered for m in mine)
        update["batch_cost_usd"] = sum(m.cost_usd for m in mine)
    if settings.repeats >= 2:
        shared = sum(len(r.same_output) for r in repeated)
        if shared:
            notes.append(f"{shared} output(s) byte-identical to another system's on the same case: each distinct "
                         "output audited and counted once (same_output names the others)")
        fields = union_fields([field_kinds(cfg, cand.case) for cand, _requests in work.repeats])
        update["repeats"] = RepeatAudit(repeats=settings.repeats, cases=repeated,
                                        fields=field_consistency(repeated, fields))
        failed = [r for r in repeated if r.error]
        if failed:
            update["incomplete"] = True
            notes.append(f"{len(failed)} audited output(s) stopped early (asked again next run): {failed[0].error}")
    if settings.pairwise:
        identical = len(work.pairs) - len(asked)
        update["pairwise"] = pairwise_summary(pairs, identical, work.duplicate_pairs)
        if identical:
            notes.append(f"{identical} pair(s) left out of the pairwise audit: both systems gave the same output")
        if work.duplicate_pairs:
            notes.append(f"{work.duplicate_pairs} pair(s) counted once with another: the same two files on the same "
                         "case (byte-identical outputs of different systems)")
        missing = [p for p in pairs if p.flipped is None]
        if missing:
            notes.append(f"{len(missing)} pair(s) without both answers: {missing[0].error}")
        if any((p.error or "").startswith(INFRA_PREFIX) for p in pairs):
            update["incomplete"] = True
    return base.model_copy(update={**update, "notes": notes})


def audit_path(cfg: Config, release: str | None = None) -> Path:
    """site/<release>/judge_audit.json."""
    return cfg.site_path / (release or cfg.release) / AUDIT_FILE


def write_audit(cfg: Config, project: Project) -> JudgeAudit:
    """Run the audit with the run's shared client and write site/<release>/judge_audit.json."""


    result = run_audit(cfg, project, judge_dispatch_code.client_for(cfg))
    atomic_write_json(audit_path(cfg), result)
    marker = retry_marker(cfg)
    if result.incomplete:
        atomic_write_json(marker, {"release": cfg.release})
    elif marker.exists():
        marker.unlink()
    return result


def retry_marker(cfg: Config) -> Path:
    """<work>/audit/<release>.retry: the audit met an infrastructure failure and runs again next time."""
    return cfg.work_path / "audit" / f"{cfg.release}.retry"


def read_audit(cfg: Config) -> JudgeAudit | None:
    """This release's audit when judge.audit is configured and it was written, else None."""
    if cfg.judge.audit is None or not cfg.judge.audit.active:
        return None
    path = audit_path(cfg)
    return JudgeAudit.model_validate_json(path.read_bytes()) if path.exists() else None


def audit_slice(cfg: Config) -> dict[str, Any]:
    """What the audit's answers depend on beyond its input artifacts: its settings, the judge, the prompts."""


    audit = cfg.judge.audit
    return {"audit": audit.model_dump(mode="json") if audit else None, "grade": grade_slice(cfg),
            "pairwise_prompts": pairwise.prompt_version(), "release": cfg.release}
