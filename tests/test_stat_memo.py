"""evalkit.stat_memo: a fact read from a file is kept from one run to the next exactly while the file's stat is."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalkit import stat_memo
from evalkit.fsutil import atomic_write_text
from evalkit.stat_memo import StatMemo

READS: list[bytes] = []


def isolation(data: bytes) -> object:
    READS.append(data)
    return json.loads(data).get("isolation")


def run(memo_file: Path, files: list[Path]) -> list[object]:
    """One 'run': a new memo from the file, every fact asked for, the memo saved."""
    memo: StatMemo[object] = StatMemo(memo_file)
    got = [memo.get(str(f), isolation) for f in files]
    memo.save()
    return got


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    out = []
    for i, where in enumerate(["docker", "local", "docker"]):
        f = tmp_path / "artifacts" / f"c{i}" / "execution.json"
        f.parent.mkdir(parents=True)
        atomic_write_text(f, json.dumps({"isolation": where, "n": i}))
        out.append(f)
    READS.clear()
    return out


def test_a_fact_is_read_once_while_its_file_is_unchanged(tmp_path: Path, files: list[Path]) -> None:
    memo_file = tmp_path / "cache" / "facts.pickle"
    assert run(memo_file, files) == ["docker", "local", "docker"] and len(READS) == 3
    assert run(memo_file, files) == ["docker", "local", "docker"] and len(READS) == 3, "the next run reads none"
    mtime = memo_file.stat().st_mtime_ns
    run(memo_file, files)
    assert memo_file.stat().st_mtime_ns == mtime, "nothing changed: the memo is not written again"


def test_a_changed_file_is_read_again_however_it_changed(tmp_path: Path, files: list[Path]) -> None:
    memo_file = tmp_path / "facts.pickle"
    run(memo_file, files)
    READS.clear()
    # an atomic rewrite of the same size and modification time: a new inode
    st = files[0].stat()
    atomic_write_text(files[0], json.dumps({"isolation": "local", "n": 0}).replace('"local"', '"locax"'))
    os.utime(files[0], ns=(st.st_atime_ns, st.st_mtime_ns))
    # an edit in place of the same size: a new modification time
    text, before = files[1].read_text().replace("local", "LOCAL"), files[1].stat()
    with open(files[1], "r+", encoding="utf-8") as fh:
        fh.write(text)
    os.utime(files[1], ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))  # the file system's clock is coarse
    files[2].unlink()  # a file gone: None, and not kept
    assert run(memo_file, files) == ["locax", "LOCAL", None]
    assert len(READS) == 2
    READS.clear()
    assert run(memo_file, files[:2]) == ["locax", "LOCAL"] and READS == []


def test_a_damaged_memo_or_other_code_starts_cold(tmp_path: Path, files: list[Path],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    memo_file = tmp_path / "facts.pickle"
    run(memo_file, files)
    memo_file.write_bytes(memo_file.read_bytes()[:20])  # truncated
    READS.clear()
    assert run(memo_file, files) == ["docker", "local", "docker"] and len(READS) == 3
    monkeypatch.setattr(stat_memo, "code_digest", lambda: "other code")
    READS.clear()
    assert run(memo_file, files) == ["docker", "local", "docker"] and len(READS) == 3, "another evalkit: read anew"


def test_the_memo_keeps_only_the_facts_a_run_used(tmp_path: Path, files: list[Path]) -> None:
    memo_file = tmp_path / "facts.pickle"
    run(memo_file, files)
    run(memo_file, files[:1])
    assert set(StatMemo(memo_file).old) == {str(files[0])}
    assert StatMemo(memo_file).get(str(tmp_path / "artifacts"), isolation) is None, "a folder is no file"
