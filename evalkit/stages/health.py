"""health: a case's reference against partial answers derived from it (ablations), and its tree's leaks.

Validation (evalkit.stages.validate) checks that the reference passes and an empty answer fails. Health asks
the finer question: would the case also accept a *partial* answer? The case's kind derives the partial
answers (``Kind.ablations``: patch, each hunk of the gold patch left out in turn and each file alone;
migration, the expected file with declarations removed; ...) and checks each with the case's own tests or
graders (``Kind.try_ablation``: patch runs them through the same sandbox path and content-addressed cache as
every run). A case that accepts one is **weak**; the ablation that passed names what the tests or reference
do not need. It runs once per case (not per system or release), as the `health` doit task, and only for a
case whose validation is `valid`.

Leaks (``Kind.leaks``): the tree a system is handed holding `.git` (history, future commits) or a file whose
content is the reference's post-image.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evalkit import tempdirs
from evalkit.cases import Case
from evalkit.config import Config
from evalkit.diffsplit import split_diff
from evalkit.health_models import AblationRun, CaseHealth
from evalkit.kind_registry import kind
from evalkit.stages.validate import validation_status

PARALLEL = 2
"""Ablations of one case checked at once (each patch ablation is one container)."""


def health_path(work: Path, case: Case) -> Path:
    return work / "health" / case.suite / f"{case.id}.json"


def case_health(cfg: Config, case: Case) -> CaseHealth:
    """The case's health (see the module docstring)."""
    kd = kind(case.kind)
    base = CaseHealth(suite=case.suite, case_id=case.id, checked_by=kd.ablations_checked_by)
    if not case.ok:
        return base.model_copy(update={"strength": "skipped", "reason": "the case is broken"})
    leaks = kd.leaks(cfg, case)
    base = base.model_copy(update={"leaks": leaks})
    status = validation_status(cfg, case) if kd.execution.validated else None
    if status is not None and status[0] != "valid":
        return base.model_copy(update={"strength": "skipped",
                                       "reason": f"validation is {status[0]}: ablations mean nothing until the "
                                                 "reference itself passes"})
    cap = cfg.validation.ablations
    if cap == 0:
        return base.model_copy(update={"strength": "skipped", "reason": "validation.ablations is 0"})
    derived = kd.ablations(case)
    chosen = derived[:cap]
    if not chosen:
        return base.model_copy(update={"reason": kd.no_ablation_reason(case)})
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=min(PARALLEL, len(chosen))) as pool:
        runs: list[AblationRun] = list(pool.map(lambda a: kd.try_ablation(cfg, case, a), chosen))
    # host checks take milliseconds: their time is left out (0), so the report stays a function of its inputs
    seconds = round(time.monotonic() - start, 3) if any(r.container for r in runs) else 0.0
    passed = [r for r in runs if r.outcome == "passed"]
    errors = [r for r in runs if r.outcome == "error"]
    lost = [r for r in errors if r.infra]
    capped = f" (the first {len(chosen)} of {len(derived)})" if len(derived) > len(chosen) else ""
    what = "tests" if kd.ablations_checked_by == "tests" else "graders"
    if passed:  # one accepted partial answer is enough: weak, whatever the others' fate
        strength, reason = "weak", (f"the case's {what} accept {len(passed)} of {len(runs)} partial answer(s)"
                                    f"{capped}: " + "; ".join(r.description for r in passed[:3]))
    elif lost:  # the lost one might have passed: not strong on the others' word (redone by the next run)
        strength, reason = "infra_error", (f"{len(lost)} of {len(runs)} ablation(s) could not be checked (an "
                                           f"infrastructure error): {lost[0].name}: {lost[0].detail}")
    elif errors and len(errors) == len(runs):  # each partial answer's own error (it does not apply...)
        strength, reason = "not_measured", f"no ablation could be checked: {errors[0].name}: {errors[0].detail}"
    else:
        strength = "strong"
        reason = f"the case's {what} reject each of {len(runs) - len(errors)} partial answer(s){capped}"
        if errors:
            reason += f"; {len(errors)} could not be checked ({errors[0].name}: {errors[0].detail})"
    return base.model_copy(update={"strength": strength, "reason": reason, "ablations": runs,
                                   "derived": len(derived), "seconds": seconds})


# ---- leaks --------------------------------------------------------------------------------------------------

MIN_LEAK_BYTES = 64
"""Post-image files shorter than this are not looked for (an `__init__.py` of one line is everywhere)."""


def post_images(tree: Path, patch: str) -> dict[str, bytes]:
    """path -> content after ``patch``, of each file it changes or adds (the files it deletes: none). The
    changed files are copied to a scratch folder and the patch applied there with `git apply`; a patch that
    does not apply gives nothing (validation says so)."""
    paths = [f.path for f in split_diff(patch) if f.path != "?"]
    with tempfile.TemporaryDirectory(prefix=tempdirs.prefix("evalkit-postimage-")) as tmp:
        scratch = Path(tmp)
        for rel in paths:
            src = tree / rel
            if src.is_file():
                dest = scratch / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(src.read_bytes())
        (scratch / ".evalkit-gold.diff").write_text(patch, encoding="utf-8")
        proc = subprocess.run(["git", "apply", "--whitespace=nowarn", "--unsafe-paths", ".evalkit-gold.diff"],
                              cwd=scratch, capture_output=True, text=True)
        if proc.returncode:
            return {}
        return {rel: (scratch / rel).read_bytes() for rel in paths if (scratch / rel).is_file()}


def tree_leaks(tree: Path, after: dict[str, bytes]) -> list[str]:
    """What ``tree`` (as handed to a system) gives away: a `.git` anywhere in it, and any file whose content
    is one of ``after`` (the reference's changed files, as they are after the fix) where that content differs
    from the file the tree has at that path."""
    found: list[str] = []
    wanted: dict[str, str] = {}
    for rel, content in after.items():
        before = tree / rel
        if len(content) < MIN_LEAK_BYTES or (before.is_file() and before.read_bytes() == content):
            continue
        wanted.setdefault(hashlib.sha256(content).hexdigest(), rel)
    sizes = {len(c) for rel, c in after.items() if hashlib.sha256(c).hexdigest() in wanted}
    for dirpath, dirnames, filenames in os.walk(tree):
        if ".git" in dirnames or ".git" in filenames:
            found.append(f"{os.path.relpath(os.path.join(dirpath, '.git'), tree)}: git metadata (history, "
                         "possibly the fix's own commit) in the tree handed to the system")
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                if os.path.islink(path) or os.path.getsize(path) not in sizes:
                    continue
                with open(path, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
            except OSError:
                continue
            if digest in wanted:
                found.append(f"{os.path.relpath(path, tree)}: holds the reference's {wanted[digest]} as it is "
                             "after the fix")
    return sorted(found)
