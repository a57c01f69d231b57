"""The `recorded` adapter on a SWE-bench predictions file: bad rows are errors naming file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.cases import Case
from evalkit.config import RecordedSystem
from evalkit.errors import InputError
from evalkit.systems.base import RunContext
from evalkit.systems.recorded import load_predictions, recorded


def _case(case_id: str) -> Case:
    return Case(suite="swe", id=case_id, kind="patch", language="python", path="x", dir="x", files=[])


def _run(root: Path, name: str, case_id: str = "a-1"):
    system = RecordedSystem(name="bot", adapter="recorded", path=name)
    return recorded(system, _case(case_id), 0, RunContext(root=root, work=root))


def test_good_predictions_load(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text(json.dumps({"instance_id": "a-1", "model_patch": "diff"}) + "\n\n"
                                      + json.dumps({"instance_id": "b-2", "model_patch": None}) + "\n")
    assert _run(tmp_path, "p.jsonl").patch == "diff"
    empty = _run(tmp_path, "p.jsonl", "b-2")
    assert empty.status == "ok" and empty.patch == ""


def test_malformed_json_line_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text(json.dumps({"instance_id": "a-1", "model_patch": "diff"}) + "\n"
                                      + '{"instance_id": "b-2", "model_patch": \n')
    sample = _run(tmp_path, "p.jsonl")
    assert sample.status == "error"
    assert sample.reason.startswith("predictions file is not valid: p.jsonl:2: malformed JSON: Expecting value")
    assert "expected one prediction per line" in sample.reason
    with pytest.raises(InputError) as exc:
        load_predictions(tmp_path / "p.jsonl")
    (problem,) = exc.value.problems
    assert (problem.file, problem.line) == (str(tmp_path / "p.jsonl"), 2)


def test_rows_missing_fields_or_not_objects(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text("\n".join([
        json.dumps({"instance_id": "a-1", "model_patch": "diff"}),
        json.dumps({"instance_id": "b-2", "model_name_or_path": "bot"}),
        json.dumps(["not", "an", "object"]),
        json.dumps({"model_patch": "diff"}),
        json.dumps({"instance_id": "c-3", "model_patch": 7}),
    ]) + "\n")
    with pytest.raises(InputError) as exc:
        load_predictions(tmp_path / "p.jsonl", "p.jsonl")
    got = [str(p) for p in exc.value.problems]
    assert got[0].startswith("p.jsonl:2: prediction: model_patch missing (expected a JSON object with instance_id")
    assert got[1].startswith("p.jsonl:3: prediction: expected a JSON object") and got[1].endswith("got list")
    assert got[2].startswith("p.jsonl:4: prediction: instance_id missing")
    assert got[3] == "p.jsonl:5: prediction: model_patch must be a string (a diff) or null, not int"
    # every case of the system is an error that says why (no silently missing prediction, no traceback)
    sample = _run(tmp_path, "p.jsonl")
    assert sample.status == "error" and "p.jsonl:2: prediction: model_patch missing" in sample.reason
    assert sample.reason.endswith("(and 1 more)")


def test_json_list_rows_are_numbered(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text(json.dumps([{"instance_id": "a-1", "model_patch": "d"}, {"instance_id": "b-2"}]))
    sample = _run(tmp_path, "p.json")
    assert sample.status == "error" and "p.json: row 2: model_patch missing" in sample.reason
    (tmp_path / "q.json").write_text('[{"instance_id": "a-1",\n "model_patch": }]')
    assert "q.json:2: malformed JSON" in _run(tmp_path, "q.json").reason
    (tmp_path / "r.json").write_text('"just a string"')
    assert "r.json:1: expected a JSON list" in _run(tmp_path, "r.json").reason


def test_fixed_file_is_read_again(tmp_path: Path) -> None:
    import os

    path = tmp_path / "p.jsonl"
    path.write_text("{oops\n")
    assert _run(tmp_path, "p.jsonl").status == "error"
    path.write_text(json.dumps({"instance_id": "a-1", "model_patch": "diff"}) + "\n")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert _run(tmp_path, "p.jsonl").patch == "diff"


def test_check_reports_a_malformed_predictions_file_before_a_run(tmp_path: Path) -> None:
    from helpers import make_project, evalkit

    root = make_project(tmp_path / "p", systems="systems:\n  - {name: naive, adapter: recorded, path: preds.jsonl}\n")
    (root / "preds.jsonl").write_text('{"instance_id": "a-1", "model_patch": "diff"}\n{"instance_id": 7}\n')
    proc = evalkit(root, "check", check=False)
    assert proc.returncode == 2
    assert f"{root / 'preds.jsonl'}:2:" in proc.stderr and "instance_id" in proc.stderr
