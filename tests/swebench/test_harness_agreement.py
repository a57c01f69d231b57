"""Differential test: `evalkit swebench grade` (the CLI) against the official `swebench` package called
directly, on harness logs in every log format of the Lite/Verified repositories (ids from real rows)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import in_process


def _load_logs_module():
    """tests/swebench/harness_logs.py (tests/ is on sys.path, but `swebench` is the official package's name)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("evalkit_test_harness_logs", Path(__file__).with_name("harness_logs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


harness_log = _load_logs_module().harness_log

import swebench  # noqa: E402,F401  CI installs it (the test extra): a missing package fails here
from swebench.harness.constants import FAIL_TO_PASS, PASS_TO_PASS, EvalType, ResolvedStatus  # noqa: E402
from swebench.harness.grading import get_eval_tests_report, get_logs_eval, get_resolution_status  # noqa: E402
from swebench.harness.log_parsers import PARSER_REGISTRY  # noqa: E402
from swebench.harness.log_parsers.python import MAP_REPO_TO_PARSER_PY  # noqa: E402
from swebench.types import TestSpec as HarnessSpec  # noqa: E402

ROWS = json.loads((Path(__file__).parent / "lite_rows.json").read_text(encoding="utf-8"))
LISTS = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")

# scenario -> (how the F2P/P2P tests come out, exit code, cut, apply failed); the harness's
# expected verdict where the runner's format can express the outcome
SCENARIOS = {
    "gold": dict(f2p="passed", p2p="passed"),
    "f2p_failed": dict(f2p="failed", p2p="passed"),
    "f2p_error": dict(f2p="error", p2p="passed"),
    "p2p_failed": dict(f2p="passed", p2p="failed"),
    "p2p_skipped": dict(f2p="passed", p2p="skipped"),
    "f2p_skipped": dict(f2p="skipped", p2p="passed"),
    "p2p_absent": dict(f2p="passed", p2p="absent"),
    "f2p_partial": dict(f2p="partial", p2p="passed"),       # one F2P passes, one fails: RESOLVED_PARTIAL at best
    "cut": dict(f2p="passed", p2p="passed", cut=True),      # killed midway: no end marker
    "lying_exit": dict(f2p="passed", p2p="passed", exit_code=1),  # 5.x exit-code cross-check
    "apply_failed": dict(f2p="passed", p2p="passed", apply_failed=True),
}
MUST_RESOLVE = {"gold": True, "f2p_failed": False, "f2p_error": False, "p2p_failed": False, "p2p_absent": False,
                "cut": False, "lying_exit": False, "apply_failed": False}


def outcomes(row: dict, sc: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    for i, t in enumerate(row["FAIL_TO_PASS"]):
        st = sc["f2p"]
        if st == "partial":
            st = "passed" if i == 0 else "failed"
        out[t] = st
    for i, t in enumerate(row["PASS_TO_PASS"]):
        st = sc["p2p"]
        if i == 0 and st in ("failed", "skipped", "absent"):
            if st != "absent":
                out[t] = st
            continue
        out[t] = "passed"
    out.setdefault("tests/test_unrelated.py::test_other" if "::" in row["FAIL_TO_PASS"][0]
                   else "test_unrelated_helper", "passed")
    return out


def iid(row: dict, scenario: str) -> str:
    return f"{row['instance_id']}.{scenario}"


def parser_name(repo: str) -> str:
    fn = MAP_REPO_TO_PARSER_PY[repo]
    return next(k for k, v in PARSER_REGISTRY.items() if v is fn)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict:
    """4.x and 5.x instance files and a log folder: every row under every scenario."""
    root = tmp_path_factory.mktemp("harness")
    logs = root / "logs"
    rows4, rows5 = [], []
    for row in ROWS:
        for name, sc in SCENARIOS.items():
            if name == "f2p_partial" and len(row["FAIL_TO_PASS"]) < 2:
                continue
            inst = {**row, "instance_id": iid(row, name)}
            rows4.append(inst)
            rows5.append({**inst, "log_parser": parser_name(row["repo"]), "eval_type": "pass_and_fail",
                          "image": f"swebench/sweb.eval.x86_64.{row['instance_id']}:latest", "eval_script": "#!/bin/bash\n"})
            d = logs / inst["instance_id"]
            d.mkdir(parents=True)
            outs = outcomes(row, sc)
            rc = sc.get("exit_code", int(any(st in ("failed", "error") for st in outs.values())))
            (d / "test_output.txt").write_text(
                harness_log(row["repo"], outs, exit_code=rc,
                            cut=sc.get("cut", False), apply_failed=sc.get("apply_failed", False)), encoding="utf-8")
    (root / "rows4.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows4), encoding="utf-8")
    (root / "rows5.json").write_text(json.dumps(rows5), encoding="utf-8")
    return {"root": root, "logs": logs, "rows4": rows4, "rows5": rows5}


def cli(*args: str) -> subprocess.CompletedProcess:
    """`python -m evalkit swebench grade ARGS`'s exit status, stdout and stderr, from this process (helpers.in_process:
    no interpreter to start and no evalkit to import, 1 to 2 s of CPU per call; an escaping exception is still a
    traceback on stderr with status 1)."""
    return in_process(["swebench", "grade", *args], cwd=Path.cwd(), env=dict(os.environ))


def official(inst: dict, log: Path) -> dict:
    """The package's own grading, called directly: get_logs_eval -> get_eval_tests_report -> resolution."""
    spec = HarnessSpec(instance_id=inst["instance_id"], image="", eval_script_list=[], repo=inst["repo"],
                    version=inst["version"], FAIL_TO_PASS=inst["FAIL_TO_PASS"], PASS_TO_PASS=inst["PASS_TO_PASS"],
                    log_parser=inst.get("log_parser") or parser_name(inst["repo"]),
                    eval_type=EvalType.PASS_AND_FAIL.value)
    status_map, found = get_logs_eval(spec, str(log))
    if not found:
        return {"applied": False, "resolved": False, "tests_status": None}
    report = get_eval_tests_report(status_map, {FAIL_TO_PASS: spec.FAIL_TO_PASS, PASS_TO_PASS: spec.PASS_TO_PASS})
    return {"applied": True, "resolved": get_resolution_status(report) == ResolvedStatus.FULL.value,
            "tests_status": report}


@pytest.mark.parametrize("version", ["rows4.jsonl", "rows5.json"])
def test_cli_agrees_with_the_official_package(corpus, version) -> None:
    out = corpus["root"] / f"report-{version}.json"
    proc = cli(str(corpus["root"] / version), "--logs", str(corpus["logs"]), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = corpus["rows4"] if version.endswith("jsonl") else corpus["rows5"]
    assert sorted(report) == sorted(r["instance_id"] for r in rows)
    repos_checked, lists_compared = set(), 0
    for inst in rows:
        mine, ref = report[inst["instance_id"]], official(inst, corpus["logs"] / inst["instance_id"] / "test_output.txt")
        assert mine["resolved"] == ref["resolved"], inst["instance_id"]
        assert mine["patch_successfully_applied"] == ref["applied"], inst["instance_id"]
        assert set(mine) >= {"patch_is_None", "patch_exists", "patch_successfully_applied", "resolved", "infra_failure"}
        if ref["tests_status"] is None:
            assert "tests_status" not in mine
        else:
            for k in LISTS:
                for side in ("success", "failure"):
                    assert mine["tests_status"][k][side] == ref["tests_status"][k][side], (inst["instance_id"], k, side)
                    lists_compared += 1
        scenario = inst["instance_id"].rsplit(".", 1)[1]
        if scenario in MUST_RESOLVE:  # and both are right, not just equal
            assert mine["resolved"] is MUST_RESOLVE[scenario], inst["instance_id"]
        repos_checked.add(inst["repo"])
    assert len(repos_checked) == 14 and lists_compared > 400
    # what the formats make of the nuanced outcomes, as the harness defines them
    for inst in rows:
        scenario = inst["instance_id"].rsplit(".", 1)[1]
        st = report[inst["instance_id"]].get("tests_status")
        if scenario == "f2p_partial":
            assert st["FAIL_TO_PASS"]["success"] == inst["FAIL_TO_PASS"][:1] and not report[inst["instance_id"]]["resolved"]
        if scenario == "p2p_absent":
            assert inst["PASS_TO_PASS"][0] in st["PASS_TO_PASS"]["failure"]


def test_sympy_and_django_are_graded_not_just_pytest(corpus) -> None:
    out = corpus["root"] / "r.json"
    assert cli(str(corpus["root"] / "rows4.jsonl"), "--logs", str(corpus["logs"]), "--out", str(out)).returncode == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["django__django-15202.gold"]["resolved"] and report["sympy__sympy-14774.gold"]["resolved"]
    dj = report["django__django-15202.p2p_skipped"]["tests_status"]["PASS_TO_PASS"]
    assert "test_urlfield_clean (forms_tests.field_tests.test_urlfield.URLFieldTest)" in dj["success"]  # skipped = kept
    sy = report["sympy__sympy-14774.f2p_failed"]["tests_status"]["FAIL_TO_PASS"]
    assert sy["failure"] == ["test_latex_functions"]


def test_missing_logs_predictions_and_bad_input(corpus, tmp_path) -> None:
    rows = corpus["rows4"][:3]
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    logs = tmp_path / "logs"
    import shutil

    shutil.copytree(corpus["logs"] / rows[0]["instance_id"], logs / rows[0]["instance_id"])
    shutil.copytree(corpus["logs"] / rows[1]["instance_id"], logs / rows[1]["instance_id"])
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"instance_id": rows[0]["instance_id"], "model_patch": None, "model_name_or_path": "m"})
                     + "\n" + json.dumps({"instance_id": rows[1]["instance_id"], "model_patch": "diff",
                                          "model_name_or_path": "m"}) + "\n"
                     + json.dumps({"instance_id": rows[2]["instance_id"], "model_patch": "diff"}) + "\n",
                     encoding="utf-8")
    out = tmp_path / "report.json"
    proc = cli(str(src), "--logs", str(logs), "--out", str(out), "--predictions", str(preds))
    assert proc.returncode == 0, proc.stderr
    assert "1 instance(s) with no log" in proc.stderr and rows[2]["instance_id"] in proc.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report[rows[0]["instance_id"]]["patch_is_None"] is True and not report[rows[0]["instance_id"]]["resolved"]
    assert report[rows[1]["instance_id"]]["patch_exists"] is True
    # a broken row: file:line, exit 2, no traceback
    src.write_text(json.dumps(rows[0]) + "\n" + json.dumps({"instance_id": "x", "repo": "nobody/knows",
                                                            "FAIL_TO_PASS": [], "PASS_TO_PASS": []}) + "\n{oops\n",
                   encoding="utf-8")
    proc = cli(str(src), "--logs", str(logs), "--out", str(out))
    assert proc.returncode == 2 and f"{src}:3" in proc.stderr and "Traceback" not in proc.stderr
    src.write_text(json.dumps(rows[0]) + "\n" + json.dumps({"instance_id": "x", "repo": "nobody/knows",
                                                            "FAIL_TO_PASS": [], "PASS_TO_PASS": []}) + "\n",
                   encoding="utf-8")
    proc = cli(str(src), "--logs", str(logs), "--out", str(out))
    assert proc.returncode == 2 and f"{src}:2" in proc.stderr and "no log parser" in proc.stderr
    src.write_text(json.dumps({**rows[0], "log_parser": "parse_log_nonesuch"}) + "\n", encoding="utf-8")
    proc = cli(str(src), "--logs", str(logs), "--out", str(out))
    assert proc.returncode == 2 and f"{src}:1" in proc.stderr and "parse_log_nonesuch" in proc.stderr
