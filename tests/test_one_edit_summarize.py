"""A rerun after one edited case (issue 32, item 3) takes what it can from earlier runs: summarize's statistics
and t quantiles (<work>/cache/stats.json), the case details' digests, the render's page index. What it writes is
the same bytes as a summarize and render that start from nothing.

The systems are the two demo rewriters (command systems, whose wall_s changes on every rerun, so the rerun
recomputes those means' intervals) and gold, over five cases (enough values for t and bootstrap intervals).
"""

from __future__ import annotations

import json
import multiprocessing
import random
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
                cache_dir=cfg.template_cache, workers=workers)


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
        if cached.name == "stats.json" or cached.name.startswith(("case-details-", "health-inputs-")) or cached.name == "jinja":
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
    # the site as this process renders it: once in a whole run (1 in about 12) the pages of the fixture's
    # `evalkit run` counted as stale here, two or more of five, cause not found (testing.md, stop 38); the
    # point here is what one stale page costs, from a site this process counts as up to date
    summarize_and_render_here(project, workers=1)
    before = site_files(project)
    (pages / "ejb-stateless.html").unlink()
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


# ---- summarize's per-case caches, as a property: any change, then the same bytes as a cold summarize ----------------

SUMMARIZE_CACHES = ("stats.json", "case-details-", "health-inputs-", "jinja")
"""What summarize and render keep in <work>/cache between runs (a cold summarize starts without them)."""


def _is_summarize_cache(path: Path) -> bool:
    return any(path.name == c or (c.endswith("-") and path.name.startswith(c)) for c in SUMMARIZE_CACHES)


def _move_aside(project: Path, dest: Path) -> None:
    """The site and summarize's caches moved (renamed: stats kept) into ``dest``."""
    dest.mkdir()
    (project / "site").rename(dest / "site")
    (dest / "cache").mkdir()
    for cached in (project / ".evalkit" / "cache").iterdir():
        if _is_summarize_cache(cached):
            cached.rename(dest / "cache" / cached.name)


def _put_back(project: Path, src: Path) -> None:
    """What `_move_aside` moved, back in place of what a cold summarize wrote."""
    shutil.rmtree(project / "site")
    for cached in (project / ".evalkit" / "cache").iterdir():
        if _is_summarize_cache(cached):
            shutil.rmtree(cached) if cached.is_dir() else cached.unlink()
    (src / "site").rename(project / "site")
    for cached in (src / "cache").iterdir():
        cached.rename(project / ".evalkit" / "cache" / cached.name)
    shutil.rmtree(src)


def _cold_site(project: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """The site a summarize and render write with no site, no summarize caches, no remembered statistics; the
    project's own site and caches are left as they were."""
    from evalkit import power

    aside = tmp / "aside"
    _move_aside(project, aside)
    try:
        with monkeypatch.context() as m:
            m.setattr(stats_code, "_T_QUANTILES", {})
            m.setattr(power, "_TTEST_EFFECTS", {})
            summarize_and_render_here(project, workers=1)
        return site_files(project)
    finally:
        _put_back(project, aside)


def _scores_files(project: Path) -> list[Path]:
    return sorted((project / ".evalkit" / "artifacts").glob("*/migration/*/scores.json"))


def _change_a_score(project: Path, rng: random.Random) -> str:
    path = rng.choice(_scores_files(project))
    data = json.loads(path.read_text())
    metric = rng.choice(sorted(m for m, v in data["metrics"].items() if v is not None))
    value = data["metrics"][metric]
    data["metrics"][metric] = (1.0 - value) if value in (0, 1) else round(value * 1.5 + 0.25, 6)
    path.write_text(json.dumps(data))  # in place: the same inode, another modification time and maybe size
    return f"score {metric} of {path.parent.name} ({path.parts[-4]})"


def _change_tags(project: Path, rng: random.Random) -> str:
    case = rng.choice(sorted(p.parent.name for p in (project / "cases" / "migration").glob("*/case.yaml")))
    edit(project, case, f"t{rng.randrange(3)}")
    return f"tags of {case}"


def _change_health(project: Path, rng: random.Random) -> str:
    path = rng.choice(sorted((project / ".evalkit" / "health" / "migration").glob("*.json")))
    data = json.loads(path.read_text())
    if rng.random() < 0.5:
        data["leaks"] = [f"the reference's line {rng.randrange(100)}"]
    else:
        data["strength"] = "weak" if data.get("strength") != "weak" else "strong"
        for ablation in data.get("ablations") or []:
            ablation["outcome"] = "passed" if data["strength"] == "weak" else "noticed"
    path.write_text(json.dumps(data, indent=1))
    return f"health of {path.stem}"


def _change_validation(project: Path, rng: random.Random) -> str:
    path = rng.choice(sorted((project / ".evalkit" / "validation" / "migration").glob("*.json")))
    data = json.loads(path.read_text())
    data["status"], data["reason"] = ("broken", f"gold fails ({rng.randrange(100)})") if data["status"] != "broken" \
        else ("valid", "")
    path.write_text(json.dumps(data, indent=1))
    return f"validation of {path.stem}"


def _add_case(project: Path, rng: random.Random) -> str:
    """A copy of a case under a new id: no scores of its own, the same legacy file (a duplicate)."""
    suite = project / "cases" / "migration"
    src = rng.choice(sorted(p.parent for p in suite.glob("*/case.yaml")))
    new = f"added-{rng.randrange(10**6)}"
    shutil.copytree(src, suite / new)
    text = (suite / new / "case.yaml").read_text()
    (suite / new / "case.yaml").write_text(text.replace(f"id: {src.name}", f"id: {new}", 1))
    return f"case {new} added (a copy of {src.name})"


def _remove_case(project: Path, rng: random.Random) -> str:
    suite = project / "cases" / "migration"
    cases = sorted(p.parent for p in suite.glob("*/case.yaml"))
    added = [c for c in cases if c.name.startswith("added-")]
    victim = rng.choice(added or cases[1:])
    shutil.rmtree(victim)
    return f"case {victim.name} removed"


def _change_legacy_file(project: Path, rng: random.Random) -> str:
    """Another legacy file: the case's digest and its duplicate key change (another case's file: now a duplicate)."""
    suite = project / "cases" / "migration"
    cases = sorted(p.parent for p in suite.glob("*/case.yaml"))
    case, other = rng.sample(cases, 2)
    mine = next((case / "legacy").glob("*.java"))
    if rng.random() < 0.5:
        mine.write_text(next((other / "legacy").glob("*.java")).read_text())  # a duplicate of the other's
    else:
        mine.write_text(mine.read_text() + f"\n// edited {rng.randrange(10**6)}\n")
    return f"legacy file of {case.name}"


def _corrupt_a_cache(project: Path, rng: random.Random) -> str:
    cache = project / ".evalkit" / "cache"
    files = sorted(p for p in cache.iterdir() if p.is_file() and p.suffix == ".pickle"
                   and p.name.startswith(("health-inputs-", "case-details-")))
    if not files:
        return "no cache to corrupt"
    path = rng.choice(files)
    data = path.read_bytes()
    cut = rng.choice([0, 1, len(data) // 2, len(data) - 1])
    path.write_bytes(data[:cut] + (b"\x80\x05garbage" if rng.random() < 0.5 else b""))
    return f"{path.name} corrupted (cut at {cut})"


def _forge_a_cache(project: Path, rng: random.Random) -> str:
    """The caches as other code would have left them: the same signatures (so a trusting reader would use them),
    every recorded value wrong, the salt not this code's."""
    import pickle

    from evalkit.report.health_cache import HealthInputs

    cache = project / ".evalkit" / "cache"
    health = cache / "health-inputs-r1.pickle"
    details = cache / "case-details-r1.cases.pickle"
    done = []
    if health.exists():
        data = pickle.loads(health.read_bytes())
        data["salt"] = ("other code",) + tuple(data["salt"][1:])
        data["entries"] = {k: (sig, HealthInputs(status=("broken", "forged"), health=None, duplicate_keys=()))
                           for k, (sig, _inputs) in data["entries"].items()}
        health.write_bytes(pickle.dumps(data))
        done.append(health.name)
    if details.exists():
        data = pickle.loads(details.read_bytes())
        data["salt"] = (data["salt"][0], "other code")
        data["cases"] = {k: (sig, "0" * 64, files) for k, (sig, _key, files) in data["cases"].items()}
        details.write_bytes(pickle.dumps(data))
        done.append(details.name)
    return "forged " + ", ".join(done) if done else "no cache to forge"


CHANGES = [_change_a_score, _change_tags, _change_health, _change_validation, _add_case, _remove_case,
           _change_legacy_file, _corrupt_a_cache, _forge_a_cache]


def test_summarize_after_any_change_writes_what_a_cold_summarize_writes(project: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Random changes one after another, each followed by an incremental summarize and render (the caches of the
    last: per-case health inputs, case-detail keys, statistics, page index) and compared, byte for byte, with a
    summarize and render from nothing. A corrupted cache or one of other code is not trusted."""
    from evalkit.report.health_cache import HealthInputsCache

    rng = random.Random(32)
    summarize_and_render_here(project, workers=1)  # the caches of this code
    steps = [change for _ in range(2) for change in CHANGES]
    rng.shuffle(steps)
    seen_hits = 0
    real_get = HealthInputsCache.get

    def counting_get(self: HealthInputsCache, *args: object, **kwargs: object) -> object:
        nonlocal seen_hits
        got = real_get(self, *args, **kwargs)  # type: ignore[arg-type]
        seen_hits += got is not None
        return got

    monkeypatch.setattr(HealthInputsCache, "get", counting_get)
    for step in steps:
        what = step(project, rng)
        summarize_and_render_here(project, workers=1)
        incremental = site_files(project)
        cold = _cold_site(project, tmp_path, monkeypatch)
        assert sorted(incremental) == sorted(cold), what
        assert [name for name in cold if cold[name] != incremental[name]] == [], what
    assert seen_hits > 0  # the caches were used, not only rebuilt
