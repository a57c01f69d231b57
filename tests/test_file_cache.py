"""StatKeyedCache: the one cache of parsed input files (recorded predictions and grades, solved stores)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalkit.errors import InputError, Problem
from evalkit.file_cache import StatKeyedCache


def test_reused_while_unchanged_read_again_when_edited(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("one")
    reads: list[str] = []
    cache: StatKeyedCache[str] = StatKeyedCache()

    def load(p: Path) -> str:
        reads.append(p.read_text())
        return p.read_text().upper()

    assert cache.get(path, load) == "ONE" and cache.get(path, load) == "ONE"
    assert reads == ["one"]
    path.write_text("three")  # another size
    assert cache.get(path, load) == "THREE"
    st = path.stat()
    path.write_text("seven")  # the same size: only the mtime tells
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert cache.get(path, load) == "SEVEN"
    assert reads == ["one", "three", "seven"]


def test_a_failed_load_is_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("bad")
    cache: StatKeyedCache[int] = StatKeyedCache()
    calls = []

    def load(p: Path) -> int:
        calls.append(1)
        return int(p.read_text())

    for _ in range(2):
        with pytest.raises(ValueError):
            cache.get(path, load)
    assert len(calls) == 2


def test_missing_file_raises_what_the_caller_names(tmp_path: Path) -> None:
    cache: StatKeyedCache[str] = StatKeyedCache()
    with pytest.raises(FileNotFoundError):
        cache.get(tmp_path / "absent", lambda p: "x")
    with pytest.raises(InputError) as exc:
        cache.get(tmp_path / "absent", lambda p: "x", lambda: InputError(Problem("absent", None, "not found")))
    assert str(exc.value.problems[0]) == "absent: not found"


def test_the_three_input_caches_share_it(tmp_path: Path) -> None:
    """Recorded predictions, recorded grades and solved stores all go through a StatKeyedCache:
    an edited predictions file is read again, a missing grades file or store names itself."""
    from evalkit import recorded_judge, solved_store
    from evalkit.systems import recorded

    for module, name in ((recorded, "_predictions"), (recorded_judge, "_loaded"), (solved_store, "_stores")):
        assert isinstance(getattr(module, name), StatKeyedCache), module.__name__
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"instance_id": "a-1", "model_patch": "diff one"}\n')
    assert recorded.load_predictions(preds)["a-1"]["model_patch"] == "diff one"
    preds.write_text('{"instance_id": "a-1", "model_patch": "diff number two"}\n')
    assert recorded.load_predictions(preds)["a-1"]["model_patch"] == "diff number two"
    with pytest.raises(InputError) as exc:
        recorded_judge.load_recorded_grades(tmp_path / "grades.json", "grades.json")
    assert str(exc.value.problems[0]).startswith("grades.json: recorded grades file not found")
    with pytest.raises(InputError) as exc:
        solved_store.load_store(tmp_path / "store.json", "store.json")
    assert str(exc.value.problems[0]).startswith("store.json: solved-incident store not found")
