"""The rubric judge on a patch or e2e answer: one judge item per file the answer changed.

A patch or e2e suite with ``judge:`` in its suite.yaml (evalkit.casemodels.ChangesJudgeSpec) is graded
by the migration judge (evalkit.graders.migration_judge) besides its tests, so the judge's verdicts can be held
against the tests (report.json ``calibration``, evalkit.report.calibration).

What the judge reads per output: every file the answer changed, *before* (the case's source tree) and
*after* (patch suites: the tree with the system's patch applied, as the tests ran it; e2e suites: the final
iteration's tree, from the execute stage's ``final_patch``). Only the touched files are copied and
patched, never the whole tree. Deleted files are listed but not judged; of the others the
``max_files`` largest changes (lines added plus removed; ties by path) are judged, each a
``MigrationJudgeInput`` whose incident is the case's task (its description, and the problem statement
or instructions; e2e analysis incidents of that file too). The free pre-checks run per file (empty,
unchanged, incomplete, not parsing by the file's extension: no call), and nothing is asked without a
key (status ``not_configured``).

The case's outcome is a ``JudgeOutcome`` like a migration file's, so scoring, metrics, calibration and
pages read it unchanged: each numeric field the mean over the judged files (a file the pre-checks
decided weighs in with the decided value, 0 on CodeJudge's rubric), a boolean field its better value
only when every file has it (``is_compilable``: all files compile). ``verdicts`` holds one such
aggregate per sample; each file's own outcome is in ``files``. Any file without a verdict (API error,
budget, unusable answer, no key) leaves the case without one, under the worst of those statuses.
"""

from __future__ import annotations

import difflib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal


from evalkit import tempdirs
from evalkit.casemodels import PatchInputs, SandboxInputs
from evalkit.graders.migration_judge import Incident, JudgeOutcome, MigrationJudgeInput, Status, decided_outcome, judge_migration
from evalkit.graders.rubric_config import JudgeRubric, RubricVerdict
from evalkit.models import Model
from evalkit.outcomes import ChangesJudgeOutcome, FileVerdict
from evalkit.graders.migration_judge import aggregate_outcome, decided_without_model, migration_requests
from evalkit.graders.rubric_config import rubric_for
from evalkit.kind_registry import kind
from evalkit.llm.pricing import Usage
from evalkit.sandbox.patchcheck import PatchRejected, check_patch
from evalkit.sandbox.worktree import ChangeRejected, apply_changes
from evalkit.stages import execute as execute_stage  # its source_tree read when called (tests replace it)
from evalkit.stages.execute import TreeUnavailable, tree_in_image
from evalkit.treesitter import language_of_path

if TYPE_CHECKING:
    from evalkit.artifacts import ExecutionArtifact, Sample
    from evalkit.cases import Case
    from evalkit.config import Config
    from evalkit.llm.calls import LLMRequest
    from evalkit.llm.client import ModelClient
    from evalkit.llm.settings import JudgeSettings

FAILED_ORDER: tuple[Status, ...] = ("infra_error", "not_judged_budget", "judge_error", "not_configured")
"""Statuses of a file without a verdict, the one a case takes first (an API failure is retried next run)."""


class FileChange(Model):
    """One file an answer changed."""

    path: str
    """Path in the case's tree."""
    before: str | None
    """The file in the case's tree (None: the answer adds it)."""
    after: str | None
    """The file after the answer (None: the answer deletes it)."""

    @property
    def change(self) -> Literal["added", "modified", "deleted"]:
        return "added" if self.before is None else "deleted" if self.after is None else "modified"

    @property
    def changed_lines(self) -> int:
        """Lines added plus lines removed."""
        diff = difflib.unified_diff((self.before or "").splitlines(), (self.after or "").splitlines(), lineterm="", n=0)
        return sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))


class TreeMissing(RuntimeError):
    """The case's tree is not on this host (e.g. a SWE-bench case whose tree lives only in its image)."""


def answer_changes(cfg: Config, case: Case, sample: Sample, execution: ExecutionArtifact | None) -> tuple[str | None, dict[str, str]]:
    """(patch, files) that turn the case's tree into the answer's: the sample's patch for a patch case (what the
    tests ran on), the final iteration's diff for an e2e case."""

    return kind(case.kind).answer_changes(case, sample, execution)


def changed_files(tree: Path, patch: str | None, files: dict[str, str]) -> list[FileChange]:
    """Every text file ``patch`` and ``files`` change in ``tree`` (ChangeRejected: unsafe or not applying)."""

    touched = set(files)
    if patch and patch.strip():
        try:
            touched |= set(check_patch(patch).paths)
        except PatchRejected as exc:
            raise ChangeRejected(f"patch refused: {exc}") from None
    out: list[FileChange] = []
    with tempfile.TemporaryDirectory(prefix=tempdirs.prefix("evalkit-worktree-")) as tmp:
        work = Path(tmp) / "tree"
        work.mkdir()
        for rel in touched:  # only the touched files: a patch's hunks need nothing else
            src = tree / rel
            if src.is_file() and not src.is_symlink():
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                (work / rel).write_bytes(src.read_bytes())
        apply_changes(work, patch, files)
        for rel in sorted(touched):
            before, after = _text(tree / rel), _text(work / rel)
            if before != after:
                out.append(FileChange(path=rel, before=before, after=after))
    return out


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8") if path.is_file() and not path.is_symlink() else None
    except (UnicodeDecodeError, OSError):
        return None


def ranked(changes: list[FileChange]) -> list[FileChange]:
    """Largest change first, ties by path."""
    return sorted(changes, key=lambda c: (-c.changed_lines, c.path))


def judge_item(case: Case, change: FileChange) -> MigrationJudgeInput:
    """What the judge reads about one changed file: before, after, and the case's task as the incident."""

    inputs = case.inputs  # a patch case's, or an e2e (or agentic) case's: a tree and its analysis incidents
    task = (inputs.problem_statement if isinstance(inputs, PatchInputs)
            else inputs.instructions if isinstance(inputs, SandboxInputs) else "")
    incidents = [Incident(rule_id="task", description=case.description, message=task)]
    found = inputs.incidents if isinstance(inputs, SandboxInputs) else []
    incidents += [Incident(rule_id=i.rule_id, description=i.description, message=i.message, line=i.line)
                  for i in found if i.file == change.path]
    return MigrationJudgeInput(
        item_id=f"{case.key}:{change.path}",
        source_technology=f"{change.path} before the change" + (" (a new file)" if change.before is None else ""),
        target_technology=f"{change.path} after the change the task asks for",
        language=language_of_path(change.path) or "text",
        legacy_code=change.before or "", incidents=incidents, generated_code=change.after or "")


def judge_changes(cfg: Config, case: Case, sample: Sample, execution: ExecutionArtifact | None, client: ModelClient | None,
                  rubric: JudgeRubric) -> ChangesJudgeOutcome:
    """The judge outcome of one patch or e2e output (see the module docstring)."""

    settings = cfg.judge.with_env()
    common: dict[str, Any] = {"max_files": case.judged_files}
    patch, files = answer_changes(cfg, case, sample, execution)
    try:
        in_image = tree_in_image(case)
        tree = execute_stage.source_tree(cfg, case) if in_image is None else None
        if tree is None:
            raise TreeMissing(f"the case's tree is only in its image ({in_image})")
        changes = ranked(changed_files(tree, patch, files))
    except (TreeUnavailable, TreeMissing) as exc:
        return ChangesJudgeOutcome(status="judge_error", model=settings.model, rubric=rubric.name,
                                   error=f"not judged: the case's tree is not available here: {exc}", **common)
    except ChangeRejected as exc:
        return ChangesJudgeOutcome(**_decided(rubric, "unchanged", f"the answer does not apply ({exc})"), **common)
    judged = [c for c in changes if c.after is not None][: case.judged_files]
    if not judged:
        why = "the answer changed no file" if not changes else "the answer only deletes files"
        return ChangesJudgeOutcome(**_decided(rubric, "unchanged", why),
                                   files=[_record(c, False, None) for c in changes], **common)
    outcomes = {c.path: judge_migration(judge_item(case, c), client, settings, rubric) for c in judged}
    records = [_record(c, c.path in outcomes, outcomes.get(c.path)) for c in changes]
    return ChangesJudgeOutcome(**combine(rubric, settings, outcomes).model_dump(), files=records, **common)


def _decided(rubric: JudgeRubric, decided: str, why: str) -> dict[str, Any]:
    return decided_outcome(rubric, precheck="failed", decided=decided,
                           error=f"decided without a model: {why}").model_dump()


def _record(change: FileChange, judged: bool, outcome: JudgeOutcome | None) -> FileVerdict:
    base = {"path": change.path, "change": change.change, "changed_lines": change.changed_lines, "judged": judged}
    if outcome is None:
        return FileVerdict(**base)
    return FileVerdict(**base, status=outcome.status, scores=outcome.scores, flags=outcome.flags,
                       decided=outcome.decided, error=outcome.error)


def combine(rubric: JudgeRubric, settings: JudgeSettings, outcomes: dict[str, JudgeOutcome]) -> JudgeOutcome:
    """One outcome for the case from its files' (path -> outcome): see the module docstring."""

    spend: dict[str, Any] = {
        "usage": sum((o.usage for o in outcomes.values()), Usage()),
        "cost_usd": sum(o.cost_usd for o in outcomes.values()),
        "request_keys": [k for o in outcomes.values() for k in o.request_keys],
        "notices": list(dict.fromkeys(n for o in outcomes.values() for n in o.notices)),
        "raw_answers": [a for o in outcomes.values() for a in o.raw_answers],
        "fallback": any(o.fallback for o in outcomes.values()),
        "syntax_issues": [i for o in outcomes.values() for i in o.syntax_issues],
    }
    prechecks = {o.precheck for o in outcomes.values()}
    precheck = "failed" if "failed" in prechecks else "passed" if "passed" in prechecks else "skipped"
    models = list(dict.fromkeys(o.model for o in outcomes.values() if o.status == "judged" and o.model))
    base = {"model": "+".join(models) or settings.model, "rubric": rubric.name, "samples": settings.samples,
            "precheck": precheck, **spend}
    for status in FAILED_ORDER:
        failed = {p: o for p, o in outcomes.items() if o.status == status}
        if failed:
            return JudgeOutcome(status=status, error="; ".join(f"{p}: {o.error}" for p, o in failed.items()), **base)
    if all(o.status == "parser" for o in outcomes.values()):
        first = next(iter(outcomes.values()))
        return decided_outcome(rubric, decided=first.decided, error="decided without a model: " + "; ".join(
            f"{p}: {o.error}" for p, o in outcomes.items()), **{k: v for k, v in base.items() if k not in ("model", "rubric", "samples")})
    samples = max(len(o.verdicts) for o in outcomes.values() if o.status == "judged")
    verdicts = [_sample_verdict(rubric, outcomes, i, len(outcomes)) for i in range(samples)]
    outcome = JudgeOutcome(status="judged", source="judge", verdicts=verdicts,
                           reasoning=[f"{p}: {r}" for p, o in outcomes.items() for r in o.reasoning], **base)
    outcome = aggregate_outcome(outcome, rubric)
    return outcome.model_copy(update={"unstable": outcome.unstable or any(o.unstable for o in outcomes.values())})


def _sample_verdict(rubric: JudgeRubric, outcomes: dict[str, JudgeOutcome], index: int, n: int) -> RubricVerdict:
    """Sample ``index`` over the files: numeric fields their mean, a boolean field its better value when every file
    has it (a decided file counts with its decided values; a file with fewer samples with its last one)."""
    per_file = []
    for o in outcomes.values():
        if o.status == "judged" and o.verdicts:
            per_file.append(o.verdicts[min(index, len(o.verdicts) - 1)].model_extra or {})
        else:
            per_file.append({**(o.scores or {}), **o.flags})
    values: dict[str, Any] = {f.name: sum(float(v[f.name]) for v in per_file) / n for f in rubric.numeric}
    for f in rubric.booleans:
        worst = bool(f.worst())
        values[f.name] = worst if any(bool(v[f.name]) == worst for v in per_file) else not worst
    return RubricVerdict.model_validate({**values, "detailed_notes": f"combined over {n} changed file(s)"})


def planned_requests(cfg: Config, case: Case, sample: Sample, exact: bool, owner: str = "") -> list[tuple[LLMRequest, bool]]:
    """(request, exact) of the judge's first round for one output, for ``evalkit estimate`` and ``judge.mode:
    batch``: one item per file the answer changes (largest ``max_files``; files the pre-checks decide ask
    nothing). Where the changed files are not known (an answer not generated yet, or an e2e answer, whose final
    tree is known only after its iterations) the estimate is an upper bound: ``max_files`` items, the files the
    first answer changes and stand-ins for the rest, never exact. ``owner`` (the system) keeps one system's
    stand-ins apart from another's, so the count never merges them."""

    final_later = kind(case.kind).execution.final_tree_after_execute
    exact = exact and not final_later
    try:
        if tree_in_image(case) is not None:
            raise TreeMissing("tree only in the image")
        files = dict(sample.files or {}) if final_later else {}  # e2e: the first answer's patch and files
        changes = ranked(changed_files(execute_stage.source_tree(cfg, case), sample.patch, files))
    except (TreeUnavailable, TreeMissing, ChangeRejected):
        changes = []
    items = [judge_item(case, c) for c in changes if c.after is not None][: case.judged_files]
    if exact:
        items = [item for item in items if not decided_without_model(item)]
    else:  # up to max_files changed files, each judged: the bound
        items += [judge_item(case, FileChange(path=f"(changed file {i + 1})", before="",
                                              after=f"(answer of {owner or 'a system'} to {case.key}, file {i + 1}: "
                                                    "not known yet)"))
                  for i in range(len(items), case.judged_files)]
    settings, rubric = cfg.judge.with_env(), rubric_for(cfg, case)
    return [(r, exact) for item in items for r in migration_requests(item, settings, rubric)]
