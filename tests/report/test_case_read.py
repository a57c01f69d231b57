"""The case JSON read for a page (`CaseDetail.read`) is the model `model_validate_json` makes, faster, and the render
gives the garbage collector back what it froze (issue 32, item 4)."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalkit.case_detail import CaseDetail
from evalkit.report.render import render_site
from helpers import bench_site


def _case_json(tmp_path: Path) -> bytes:
    """A case JSON as summarize writes one: every artifact names its system, suite and case."""
    bench_site().synthesize(tmp_path, n_cases=3, n_systems=2, release="r1", seed=5)
    return (tmp_path / "r1" / "cases" / "patch" / "case-0000.json").read_bytes()


def _same(a: CaseDetail, b: CaseDetail) -> None:
    assert type(a) is type(b) is CaseDetail
    assert a == b and a.model_fields_set == b.model_fields_set
    assert a.model_dump_json() == b.model_dump_json()


def test_read_is_model_validate_json(tmp_path: Path) -> None:
    data = _case_json(tmp_path)
    full = CaseDetail.model_validate_json(data)
    assert full.systems["system-0"].execution is not None and full.systems["system-0"].execution.runs
    _same(CaseDetail.read(data), full)
    _same(CaseDetail.read(data.decode()), full)


def test_read_fills_in_what_an_older_case_json_left_out(tmp_path: Path) -> None:
    """An artifact that does not repeat its system, suite and case takes them from where it sits, as before."""
    raw = json.loads(_case_json(tmp_path))
    for arts in raw["systems"].values():
        for art in arts.values():
            if isinstance(art, dict):
                for key in ("system", "suite", "case_id"):
                    art.pop(key)
    data = json.dumps(raw).encode()
    got = CaseDetail.read(data)
    _same(got, CaseDetail.model_validate_json(data))
    assert got.systems["system-1"].scores is not None and got.systems["system-1"].scores.system == "system-1"
    assert got.systems["system-1"].scores.suite == "patch" and got.systems["system-1"].scores.case_id == "case-0000"


def test_read_of_a_bad_case_json_raises_the_models_own_error() -> None:
    with pytest.raises(ValidationError) as caught:
        CaseDetail.read(b'{"release": 1}')
    assert caught.value.title == "CaseDetail"
    with pytest.raises(ValidationError):
        CaseDetail.read(b"{not json")


@pytest.mark.parametrize("workers", [1, 2])
def test_render_leaves_nothing_frozen(tmp_path: Path, workers: int) -> None:
    """Case pages render with the heap frozen (gc.freeze); after the render, and after a render that failed, the
    collector has every object back."""
    assert gc.get_freeze_count() == 0
    bench_site().synthesize(tmp_path, n_cases=20, n_systems=2, release="r1", seed=6)
    render_site(tmp_path, "r1", workers=workers)
    assert gc.get_freeze_count() == 0
    (tmp_path / "r1" / "cases" / "migration" / "case-0010.json").write_text('{"release": 1}')
    with pytest.raises(ValidationError):
        render_site(tmp_path, "r1", workers=workers)
    assert gc.get_freeze_count() == 0


def test_render_in_a_run_leaves_the_runs_freeze(tmp_path: Path) -> None:
    """In a run the heap is frozen before the render task (evalkit.doitplus): the render does not give the run's
    frozen objects back to the collector (gc has no partial unfreeze), and the run's end gives back everything."""
    bench_site().synthesize(tmp_path, n_cases=5, n_systems=2, release="r1", seed=6)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        render_site(tmp_path, "r1", workers=1)
        assert gc.get_freeze_count() >= frozen > 0
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0
