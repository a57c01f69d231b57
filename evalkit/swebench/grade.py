"""`evalkit swebench grade`: re-grade saved harness logs (DIR/<instance_id>/test_output.txt) with the
official harness, no container, into SWE-bench's report.json shape."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import InputError, Problem
from evalkit.fsutil import atomic_write_text, confine_writes
from evalkit.swebench.harness import (
    HarnessUnavailable,
    grade_text,
    harness_registry,
    harness_shaped,
    parser_for,
    test_spec,
)
from evalkit.swebench.rows import read_rows, test_list

LOG_NAME = "test_output.txt"


@dataclass
class Instance:
    """What grading needs of one SWE-bench row (4.x or 5.x)."""

    line: str
    instance_id: str
    repo: str
    parser: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    version: str = ""
    eval_type: str | None = None
    gold_patch: str = ""


@dataclass
class GradeResult:
    """The report and what could not be graded."""

    report: dict[str, Any] = field(default_factory=dict)
    missing_logs: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    no_prediction: list[str] = field(default_factory=list)
    unrecognized: list[str] = field(default_factory=list)
    """Logs in no format evalkit knows (the harness would grade them "patch not applied", silently)."""


def _where(shown: str, line: int | None, index: int) -> tuple[str, int | None, str]:
    return shown, line, "" if line is not None else f"row {index + 1}: "


def load_instances(path: Path) -> list[Instance]:
    """Rows of a SWE-bench instances file (JSON list or JSONL), 4.x or 5.x; all problems at once."""

    shown = str(path)
    out: list[Instance] = []
    problems: list[Problem] = []
    seen: dict[str, tuple[str, Any]] = {}
    for index, (line, raw) in enumerate(read_rows(path)):
        file, ln, pre = _where(shown, line, index)
        if not isinstance(raw, dict):
            problems.append(Problem(file, ln, f"{pre}expected a JSON object (a SWE-bench instance), got {type(raw).__name__}"))
            continue
        iid, repo = raw.get("instance_id"), raw.get("repo")
        bad = [k for k, v in (("instance_id", iid), ("repo", repo)) if not isinstance(v, str) or not v.strip()]
        lists = {k: test_list(raw.get(k)) for k in ("FAIL_TO_PASS", "PASS_TO_PASS")}
        bad += [k for k, v in lists.items() if v is None]
        log_parser = raw.get("log_parser")
        if log_parser is not None and not isinstance(log_parser, str):
            bad.append("log_parser")
        if bad or not isinstance(iid, str) or not isinstance(repo, str):  # (bad names both when not strings)
            problems.append(Problem(file, ln, f"{pre}{', '.join(bad)} missing or malformed (expected instance_id and "
                                              "repo strings, FAIL_TO_PASS and PASS_TO_PASS lists of test ids)"))
            continue
        try:
            parser = parser_for(repo, log_parser or None)
        except ValueError as exc:
            problems.append(Problem(file, ln, f"{pre}{iid}: {exc}"))
            continue
        if parser is None:
            problems.append(Problem(file, ln, f"{pre}{iid}: the harness has no log parser for repo {repo!r} "
                                              "and the row names no log_parser (a SWE-bench 5.x field)"))
            continue
        if iid in seen:
            if seen[iid][1] != raw:
                problems.append(Problem(file, ln, f"{pre}instance {iid!r} again, different from {seen[iid][0]}"))
            continue  # an identical duplicate counts once
        seen[iid] = (f"line {line}" if line is not None else f"row {index + 1}", raw)
        out.append(Instance(line=seen[iid][0], instance_id=iid, repo=repo, parser=parser,
                            fail_to_pass=lists["FAIL_TO_PASS"] or [], pass_to_pass=lists["PASS_TO_PASS"] or [],
                            version=str(raw.get("version") or ""), eval_type=raw.get("eval_type") or None,
                            gold_patch=patch if isinstance(patch := raw.get("patch"), str) else ""))
    if problems:
        raise InputError(problems)
    return out


def load_predictions(path: Path) -> dict[str, dict[str, Any]]:
    """SWE-bench predictions (JSON list, {id: prediction} or JSONL): instance_id -> prediction."""

    shown, out, problems = str(path), {}, []
    for index, (line, raw) in enumerate(read_rows(path)):
        file, ln, pre = _where(shown, line, index)
        if not isinstance(raw, dict) or not isinstance(raw.get("instance_id"), str) or \
                not (raw.get("model_patch") is None or isinstance(raw.get("model_patch"), str)):
            problems.append(Problem(file, ln, f"{pre}expected a prediction object with instance_id and "
                                              "model_patch (a string or null)"))
            continue
        out[raw["instance_id"]] = raw
    if problems:
        raise InputError(problems)
    return out


def grade_logs(instances: list[Instance], logs: Path, predictions: dict[str, dict[str, Any]] | None) -> GradeResult:
    """The harness's report entry for every instance with a saved log; one bad log never stops the others."""

    res = GradeResult()
    for inst in instances:
        if predictions is not None and inst.instance_id not in predictions:
            res.no_prediction.append(inst.instance_id)
            continue
        log = logs / inst.instance_id / LOG_NAME
        if not log.is_file():
            res.missing_logs.append(inst.instance_id)
            continue
        pred = (predictions or {}).get(inst.instance_id, {})
        patch = pred.get("model_patch") if predictions is not None else inst.gold_patch
        spec = test_spec(inst.instance_id, inst.repo, inst.parser, inst.fail_to_pass, inst.pass_to_pass,
                         version=inst.version, eval_type=inst.eval_type)
        try:
            shaped = harness_shaped(log.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError) as exc:
            res.unreadable.append(f"{log}: {exc}")
            continue
        if shaped is None:
            res.unrecognized.append(inst.instance_id)
            continue
        res.report[inst.instance_id] = grade_text(spec, shaped, patch,
                                                  str(pred.get("model_name_or_path") or "evalkit"))
    res.report = dict(sorted(res.report.items()))
    return res


def grade_command(instances: Path, logs: Path, out: Path, predictions: Path | None) -> GradeResult:
    """Load, grade, write ``out``; raise InputError for unusable inputs."""

    try:
        harness_registry()
    except HarnessUnavailable as exc:
        raise InputError(Problem("swebench", None, str(exc))) from None
    if not logs.is_dir():
        raise InputError(Problem(str(logs), None, "not a folder (expected the harness's logs: DIR/<instance_id>/test_output.txt)"))
    rows = load_instances(instances)
    preds = load_predictions(predictions) if predictions is not None else None
    result = grade_logs(rows, logs, preds)
    confine_writes(Path(out).resolve().parent)
    atomic_write_text(out, json.dumps(result.report, indent=2, sort_keys=True) + "\n")
    return result
