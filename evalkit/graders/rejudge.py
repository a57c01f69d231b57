"""Changing the judge: a release's outputs judged again by another model, and how far the two judges agree.

``evalkit rejudge --judge MODEL`` (evalkit.graders.rejudge_cmd) takes the outputs of the release the
work folder holds (its report.json must be the one those artifacts made), asks the new judge exactly
what the grade stage would ask it (same rubric, samples and pre-checks: evalkit.graders.judge_dispatch), and
writes a side release ``site/<label>/`` with ``rejudge.json`` and a page: per verdict field the
agreement of the new judge with the old (Cohen's kappa, quadratic-weighted for ordinal scales, with
its bootstrap interval: evalkit.agreement), the mean difference (new - old) and n. Requests are
content-addressed like every judge call, so only new verdicts are paid for and a rerun sends nothing.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from evalkit.agreement import Agreement, agreement
from evalkit.artifacts import ARTIFACT_FILES, Sample, ScoresArtifact, artifact_path, read_optional
from evalkit.errors import InputError, Problem
from evalkit.fsutil import atomic_write_json, atomic_write_text, digest
from evalkit.graders import judge_dispatch as judging
from evalkit.graders.audit import FieldKind, field_kinds, union_fields
from evalkit.kind_registry import kind as suite_kind
from evalkit.kind_registry import main_file
from evalkit.llm.cache import ResponseCache
from evalkit.llm.plan import Plan, PlannedCall, grade_requests
from evalkit.models import Model
from evalkit.outcomes import JudgeOutcome, RubricOutcome
from evalkit.project import participating
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.cases import Case, Project
    from evalkit.config import Config
    from evalkit.contracts import JudgeResult
    from evalkit.llm.calls import LLMRequest, LLMResponse
    from evalkit.report import render as render_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    render_code = later("evalkit.report.render")

REJUDGE_SCHEMA_VERSION = 1
REJUDGE_FILE = "rejudge.json"


class OutputVerdicts(Model):
    """One output's verdict under the old judge and the new one."""

    system: str
    """System under test."""
    case: str
    """Case key (suite/case)."""
    old_status: str | None = None
    """How the old judge's grading ended (judged, parser, judge_error, ...)."""
    new_status: str | None = None
    """How the new judge's grading ended."""
    old: dict[str, float | bool] = Field(default_factory=dict)
    """The old judge's value per field (mean over samples; booleans by majority)."""
    new: dict[str, float | bool] = Field(default_factory=dict)
    """The new judge's value per field."""
    error: str | None = None
    """Why the new judge gave no verdict, if it did not."""
    output_digest: str = ""
    """Digest of the output's files: outputs of several systems on one case with the same digest are one item of the
    per-field figures (byte-identical outputs are counted once)."""


class FieldComparison(Model):
    """One verdict field under the two judges, over the outputs both judged."""

    field: str
    """Verdict field."""
    kind: FieldKind
    """ordinal (quadratic-weighted kappa), boolean (Cohen's kappa) or continuous (no kappa)."""
    n: int = 0
    """Distinct outputs both judges gave a verdict on (byte-identical outputs of several systems on a case count
    once)."""
    outputs: int = 0
    """Outputs of all systems behind those n (n plus the repeats of an identical output)."""
    old_mean: float | None = None
    """Mean under the old judge (share of true for a boolean field), over the distinct outputs."""
    new_mean: float | None = None
    """Mean under the new judge."""
    mean_difference: float | None = None
    """new - old, averaged over the outputs."""
    changed: int = 0
    """Outputs whose value differs between the judges."""
    agreement: Agreement | None = None
    """Kappa of the new judge against the old (the reference), with its bootstrap interval; None for continuous fields."""


class SystemFieldMeans(Model):
    """A system's mean on one field under each judge."""

    system: str
    """System under test."""
    field: str
    """Verdict field."""
    n: int
    """Outputs both judges gave a verdict on."""
    old_mean: float | None = None
    """Mean under the old judge."""
    new_mean: float | None = None
    """Mean under the new judge."""


class Rejudge(Model):
    """rejudge.json: a release's outputs judged again by another model (a side release)."""

    schema_version: int = REJUDGE_SCHEMA_VERSION
    """Version of this file's shape."""
    release: str
    """The release whose outputs were judged again."""
    label: str
    """This side release's label (its folder under site/)."""
    old_model: str | None = None
    """The judge model of the release's own verdicts (the most common one recorded)."""
    new_model: str
    """The new judge model."""
    fields: list[FieldComparison] = Field(default_factory=list)
    """Per verdict field, in the rubric's order."""
    systems: list[SystemFieldMeans] = Field(default_factory=list)
    """Per system and field, the mean under each judge."""
    outputs: list[OutputVerdicts] = Field(default_factory=list)
    """Every output judged again."""
    calls_sent: int = 0
    """Requests sent to the API for this rejudge (cached answers are free)."""
    cost_usd: float = 0.0
    """What those requests cost."""
    notes: list[str] = Field(default_factory=list)
    """Remarks (outputs without a verdict, statuses)."""


def side_label(release: str, model: str) -> str:
    """The default side release label: ``<release>+rejudge-<model>`` (characters outside [A-Za-z0-9._+-] as -)."""
    return re.sub(r"[^A-Za-z0-9._+-]", "-", f"{release}+rejudge-{model}")


def check_label(label: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9._+-]+", label) or label in (".", ".."):
        raise InputError(Problem(f"--into {label!r}", None, "a release label is letters, digits and . _ + - only"))


def new_config(cfg: Config, model: str) -> Config:
    """``cfg`` with the judge's model replaced (sync calls, no audit, no fallback model: every new verdict is the
    new model's); the rest of the judge settings kept."""
    update: dict[str, Any] = {"model": model, "mode": "sync", "audit": None}
    if "fallback" in type(cfg.judge).model_fields:
        update["fallback"] = None
    judge = cfg.judge.model_copy(update=update)
    return cfg.model_copy(update={"judge": judge})


def release_inputs_digest(cfg: Config, project: Project) -> str:
    """The digest summarize records as report.json's inputs_digest, over the scores the work folder holds now."""

    scores = {}
    for system, case in participating(cfg, project):
        path = Path(f"{cfg.work_path}/artifacts/{system.name}/{case.suite}/{case.id}/{ARTIFACT_FILES['score']}")
        if path.exists():
            scores[(system.name, case.key)] = ScoresArtifact.model_validate_json(path.read_bytes())
    return digest(sorted((k, s.provenance.model_dump() if s.provenance else None) for k, s in scores.items()))


def check_release(cfg: Config, project: Project, release: str) -> None:
    """The work folder's artifacts must be the ones ``release``'s report was made from."""

    path = cfg.site_path / release / "report.json"
    if not path.exists():
        raise InputError(Problem(str(path), None,
                                 f"no report of release {release!r}; run `evalkit run --release {release}` first"))
    recorded = json.loads(path.read_text(encoding="utf-8")).get("inputs_digest", "")
    if recorded != release_inputs_digest(cfg, project):
        raise InputError(Problem(str(path), None,
                                 f"the work folder {cfg.work_path} no longer holds the outputs release {release!r} "
                                 f"was reported from (another release ran since, or something changed); run "
                                 f"`evalkit run --release {release}` first, then rejudge"))


@dataclass
class Target:
    """One output to judge again."""

    system: str
    case: Case
    sample: Sample
    old: JudgeOutcome | None


def targets(cfg: Config, project: Project) -> list[Target]:
    """Every output of a judged suite kind that the grade stage graded (in run order)."""

    found = []
    for system, case in participating(cfg, project):
        if not suite_kind(case.kind).judging.audited or not case.ok:  # kinds whose judge verdicts are compared field by field
            continue
        output = read_optional(artifact_path(cfg.work_path, "generate", system.name, case.suite, case.id), "generate")
        grades = read_optional(artifact_path(cfg.work_path, "grade", system.name, case.suite, case.id), "grade")
        if output is None or output.status != "ok" or grades is None:
            continue
        sample, mf = output.first, main_file(case)
        if suite_kind(case.kind).deleted_is_answer(case, sample, mf):
            continue  # the deletion is the answer: nothing judged (as in the grade stage)
        found.append(Target(system.name, case, sample, grades.judge))
    return found


def planned_calls(cfg_new: Config, found: list[Target]) -> Plan:
    """The new judge's requests for ``found`` as an evalkit.llm.plan.Plan (for estimate_plan)."""

    cache = ResponseCache(cfg_new.work_path / "cache")
    plan = Plan()
    judge = cfg_new.judge.with_env()
    for t in found:
        for _asker, request, exact in grade_requests(cfg_new, t.case, t.sample, t.system, cache, True):
            plan.calls.append(PlannedCall("grade", "rejudge", t.system, t.case.suite, request, judge, exact))
    return plan


def _value_of(values: list[Any], kind: FieldKind) -> float | bool:
    if kind == "boolean":
        return sum(bool(v) for v in values) * 2 > len(values)  # majority; a tie counts as false (as the judge does)
    return sum(values) / len(values)


def verdict_values(outcome: JudgeOutcome | RubricOutcome | None,
                   fields: list[tuple[str, FieldKind, Any]]) -> dict[str, float | bool]:
    """Per field, the outcome's value over its verdicts (judged outcomes only; {} otherwise)."""
    if not isinstance(outcome, JudgeOutcome) or outcome.status != "judged":
        return {}
    verdicts = [v.model_extra or {} for v in outcome.verdicts]
    out: dict[str, float | bool] = {}
    for name, kind, _cats in fields:
        values = [v[name] for v in verdicts if name in v and isinstance(v[name], (int, float, bool))]
        if values:
            out[name] = _value_of(values, kind)
    return out


def _category(value: float | bool, kind: FieldKind) -> Any:
    return value if kind == "boolean" else int(math.floor(float(value) + 0.5))  # a mean of samples, half up


def compare(rows: list[OutputVerdicts], fields: list[tuple[str, FieldKind, list[Any] | None]],
            seed: int = 0, resamples: int = 2000) -> tuple[list[FieldComparison], list[SystemFieldMeans]]:
    """Per field: kappa of new against old, mean difference and n; per system: the means."""
    comparisons, systems = [], []
    for name, kind, cats in fields:
        every = [r for r in rows if name in r.old and name in r.new]
        distinct: dict[tuple[str, str], OutputVerdicts] = {}
        for r in every:  # one item per distinct output: the same file from several systems is one verdict
            distinct.setdefault((r.case, r.output_digest or f"{r.system}:{r.case}"), r)
        both = list(distinct.values())
        old = [float(r.old[name]) for r in both]
        new = [float(r.new[name]) for r in both]
        comp = FieldComparison(field=name, kind=kind, n=len(both), outputs=len(every),
                               old_mean=sum(old) / len(old) if old else None, new_mean=sum(new) / len(new) if new else None,
                               mean_difference=sum(b - a for a, b in zip(old, new)) / len(both) if both else None,
                               changed=sum(r.old[name] != r.new[name] for r in both))
        if kind in ("ordinal", "boolean"):
            first = [_category(r.new[name], kind) for r in both]
            second = [_category(r.old[name], kind) for r in both]
            categories = cats or sorted(set(first) | set(second))
            if kind == "ordinal":
                lo, hi = min([*categories, *first, *second]), max([*categories, *first, *second])
                categories = list(range(int(lo), int(hi) + 1))  # 0 (decided without a model) may precede the scale
            comp.agreement = agreement(name, "ordinal" if kind == "ordinal" else "boolean",
                                       [f"{r.system}:{r.case}" for r in both], first, second, categories,
                                       n_resamples=resamples, seed=seed)
        comparisons.append(comp)
        for system in sorted({r.system for r in every}):
            mine = [r for r in every if r.system == system]
            systems.append(SystemFieldMeans(system=system, field=name, n=len(mine),
                                            old_mean=sum(float(r.old[name]) for r in mine) / len(mine),
                                            new_mean=sum(float(r.new[name]) for r in mine) / len(mine)))
    return comparisons, systems


def rejudge(cfg: Config, cfg_new: Config, release: str, label: str, found: list[Target],
            judge_case: Callable[[Config, Case, Sample, str | None], JudgeResult] | None = None) -> Rejudge:
    """Judge ``found`` with ``cfg_new``'s judge and compare with the recorded verdicts."""

    judge_case = judge_case or judging.judge_case
    sent: list[float] = []
    client = judging.client_for(cfg_new)  # the instance judge_case uses: count what it really sends
    if client is not None:
        original = client.call

        def counted(request: LLMRequest) -> LLMResponse:
            response = original(request)
            if not response.cached:
                sent.append(response.cost_usd)
            return response

        client.call = counted  # type: ignore[method-assign]  # this instance's calls, counted

    def one(t: Target) -> OutputVerdicts:
        fields = field_kinds(cfg, t.case)
        new = judge_case(cfg_new, t.case, t.sample, main_file(t.case))
        return OutputVerdicts(system=t.system, case=t.case.key, output_digest=digest(t.sample.files),
                              old_status=t.old.status if t.old else None,
                              new_status=new.status if new else None, old=verdict_values(t.old, fields),
                              new=verdict_values(new, fields),
                              error=new.error if new is not None and new.status != "judged" else None)

    with ThreadPoolExecutor(max_workers=cfg_new.judge.concurrency) as pool:
        rows = list(pool.map(one, found))
    fields = union_fields([field_kinds(cfg, t.case) for t in found])
    comparisons, systems = compare(rows, fields, seed=cfg.report.seed, resamples=cfg.report.bootstrap_resamples)
    old_models = Counter(t.old.model for t in found if t.old is not None and t.old.model)
    statuses = Counter(r.new_status for r in rows)
    notes = [f"{n} output(s) without a new verdict: {status}" for status, n in sorted(statuses.items(), key=str)
             if status != "judged" and status != "parser"]
    notes += [f"{sum(1 for r in rows if r.old_status == 'judged' and not r.new)} output(s) have an old verdict but "
              "no new one"] if any(r.old_status == "judged" and not r.new for r in rows) else []
    return Rejudge(release=release, label=label, old_model=old_models.most_common(1)[0][0] if old_models else None,
                   new_model=cfg_new.judge.with_env().model, fields=comparisons, systems=systems, outputs=rows,
                   calls_sent=len(sent), cost_usd=sum(sent), notes=notes)


def write_side_release(cfg: Config, result: Rejudge) -> Path:
    """site/<label>/rejudge.json and its page; returns the page."""

    out = cfg.site_path / result.label
    atomic_write_json(out / REJUDGE_FILE, result)
    env = render_code.environment(cfg.resolve(cfg.templates_dir) if cfg.templates_dir else None)
    page = out / "index.html"
    atomic_write_text(page, env.get_template("rejudge.html.j2").render(r=result, root="../"))
    return page
