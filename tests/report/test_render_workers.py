"""render: case pages rendered by forked worker processes are the bytes one process renders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit import fsutil
from evalkit.report.render import case_workers, render_site
from helpers import bench_site



def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".pages.json"}


def test_workers_render_the_same_pages_and_index(tmp_path: Path) -> None:
    bench = bench_site()
    one, two = tmp_path / "one", tmp_path / "two"
    for root in (one, two):
        bench.synthesize(root, n_cases=30, n_systems=3, release="r1", seed=3)
    render_site(one, "r1", workers=1)

    seen: list[str] = []

    class Listener:
        def forget(self, path: str) -> None:
            seen.append(path)

    listener = Listener()
    fsutil.on_replace(listener.forget)
    render_site(two, "r1", workers=2)
    assert _files(one) == _files(two)
    index = lambda root: json.loads((root / "r1" / "cases" / ".pages.json").read_text())  # noqa: E731
    assert sorted(index(one)) == sorted(index(two)) and len(index(two)) == 30  # digests hold file times
    # the workers' writes reach the parent's listeners (doit's stat memo) too
    assert str(two / "r1" / "cases" / "patch" / "case-0000.html") in seen
    # nothing changed: no worker writes a page again
    before = {p: p.stat().st_mtime_ns for p in two.rglob("*.html") if "/cases/" in str(p)}
    render_site(two, "r1", workers=2)
    assert before == {p: p.stat().st_mtime_ns for p in two.rglob("*.html") if "/cases/" in str(p)}


def test_a_broken_case_json_raises_its_own_error_from_a_worker(tmp_path: Path) -> None:
    from pydantic import ValidationError

    bench_site().synthesize(tmp_path, n_cases=30, n_systems=2, release="r1", seed=4)
    (tmp_path / "r1" / "cases" / "migration" / "case-0010.json").write_text('{"release": 1}')
    with pytest.raises(ValidationError):
        render_site(tmp_path, "r1", workers=2)


def test_small_sites_render_in_one_process() -> None:
    assert case_workers(10) == 1
    assert 1 <= case_workers(10_000) <= 4
