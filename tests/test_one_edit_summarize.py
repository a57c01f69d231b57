"""A rerun after one edited case (issue 32, item 3) takes what it can from earlier runs: summarize's statistics
and t quantiles (<work>/cache/stats.json), the case details' digests, the render's page index. What it writes is
the same bytes as a summarize and render that start from nothing.

The systems are the two demo rewriters (command systems, whose wall_s changes on every rerun, so the rerun
recomputes those means' intervals) and gold, over five cases (enough values for t and bootstrap intervals).
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit import stats as stats_code
from helpers import evalkit, make_project

CASES = ["jpa-entity", "cdi-inject", "ejb-stateless", "jaxrs-resource", "servlet-filter"]


def site_files(project: Path) -> dict[str, bytes]:
    """Every published file of the site (dot-files are evalkit's own indexes, not content)."""
    site = project / "site"
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(site).parts)}


def edit(project: Path, case: str, tag: str) -> None:
    path = project / "cases" / "migration" / case / "case.yaml"
    text = path.read_text()
    path.write_text(text.replace("tags: [", f"tags: [{tag}, ", 1) if "tags: [" in text else text + f"tags: [{tag}]\n")


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "p", cases=CASES)
    evalkit(root, "run")
    return root


def summarize_and_render_here(project: Path, workers: int) -> None:
    from evalkit.project import load
    from evalkit.report.render import render_site
    from evalkit.report.summarize import summarize

    loaded = load(str(project / "evalkit.yaml"), refresh=True)
    cfg = loaded.config
    summarize(cfg, loaded.project)
    render_site(cfg.site_path, cfg.release, cfg.resolve(cfg.templates_dir) if cfg.templates_dir else None,
                cache_dir=cfg.work_path / "cache" / "jinja", workers=workers)


def test_one_edit_rerun_writes_what_a_from_scratch_summarize_and_render_write(project: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    stats = project / ".evalkit" / "cache" / "stats.json"
    before = (project / "site" / "r1" / "report.json").read_bytes()
    edit(project, "jpa-entity", "edited")
    evalkit(project, "run")  # the incremental rerun: caches of statistics, t quantiles, digests, page index
    incremental = site_files(project)
    assert incremental["r1/report.json"] != before  # the tag and the command systems' wall_s changed
    assert '"edited"' in incremental["r1/report.json"].decode()
    assert '"t_quantiles":[[' in stats.read_text()  # the t quantile of 5 values, kept for the next rerun

    # from scratch: no site, no summarize caches, no t quantile known to this process
    shutil.rmtree(project / "site")
    for cached in (project / ".evalkit" / "cache").iterdir():
        if cached.name == "stats.json" or cached.name.startswith("case-details-") or cached.name == "jinja":
            shutil.rmtree(cached) if cached.is_dir() else cached.unlink()
    monkeypatch.setattr(stats_code, "_T_QUANTILES", {})
    summarize_and_render_here(project, workers=1)
    fresh = site_files(project)
    assert sorted(fresh) == sorted(incremental)
    assert [name for name in fresh if fresh[name] != incremental[name]] == []


def test_a_recomputed_interval_of_a_known_size_needs_no_scipy(project: Path) -> None:
    """A rerun's new wall_s of one case (a command system's) changes that system's mean: its interval is computed
    again (numpy), but the t quantile of five values comes from the cache: scipy (~0.2 s to import) is not."""
    scores = project / ".evalkit/artifacts/naive/migration/cdi-inject/scores.json"
    data = json.loads(scores.read_text())
    data["metrics"]["wall_s"] = data["metrics"]["wall_s"] + 0.123
    scores.write_text(json.dumps(data))
    code = ("import sys; from evalkit.project import load; from evalkit.report.summarize import summarize; "
            f"loaded = load({str(project / 'evalkit.yaml')!r}); summarize(loaded.config, loaded.project); "
            "print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['numpy']", out.stdout + out.stderr


def test_a_render_with_few_stale_pages_renders_them_without_forking(project: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers asked for, one stale case page of five: the render finds it here and renders it here (no pool of
    forked workers, each checking its share of every case again), the same bytes as before."""
    from evalkit.report import case_pages

    pages = project / "site" / "r1" / "cases" / "migration"
    before = site_files(project)
    (pages / "ejb-stateless.html").unlink()
    (pages / "ejb-stateless.compare.html").unlink()
    monkeypatch.setattr(case_pages, "PARALLEL_MIN_CASES", 2)

    def no_pool(*args: object, **kwargs: object) -> None:
        raise AssertionError("a pool was started for one stale page")

    monkeypatch.setattr(multiprocessing.get_context("fork"), "Pool", no_pool)
    summarize_and_render_here(project, workers=2)
    assert site_files(project) == before

    # two stale pages (the limit): the forked workers render (here: the refused pool says so)
    for name in ("ejb-stateless", "cdi-inject"):
        (pages / f"{name}.html").unlink()
    with pytest.raises(AssertionError, match="a pool was started"):
        summarize_and_render_here(project, workers=2)


def test_a_detectability_of_a_known_number_of_pairs_needs_no_scipy() -> None:
    """A one-edit rerun changes a command system's wall_s, so the SD of its paired differences: the detectable
    difference is the effect of n pairs (remembered in the statistics cache) times the new SD; the same number as
    computed from nothing, and scipy (~0.2-0.3 s to import) is not imported for it."""
    from evalkit import power

    fresh = power.score_detectability(40, 0.37)
    rows = power.ttest_effects()
    assert rows and all(len(row) == 4 for row in rows)
    code = ("import json, sys; from evalkit import power; "
            f"power.remember_ttest_effects(json.loads({json.dumps(rows)!r})); "
            "print(power.score_detectability(40, 0.37).model_dump_json()); "
            "print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    dumped, scipy_loaded = out.stdout.strip().rsplit("\n", 1)
    assert scipy_loaded == "False", out.stdout + out.stderr
    assert dumped == fresh.model_dump_json()
    code_cold = ("import sys; from evalkit import power; print(power.score_detectability(40, 0.37).model_dump_json()); "
                 "print('scipy' in sys.modules)")
    cold = subprocess.run([sys.executable, "-c", code_cold], capture_output=True, text=True, check=True)
    assert cold.stdout.strip().rsplit("\n", 1) == [fresh.model_dump_json(), "True"], "without the memo: scipy computes it"
