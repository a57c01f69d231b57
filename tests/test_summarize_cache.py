"""summarize keeps its intervals and paired tests in <work>/cache/stats.json: a rerun on the same
scores computes none of them (and imports neither numpy nor scipy), a changed score recomputes what
it feeds, and the report is the same bytes as without the cache."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import evalkit, make_project

# each statistic, by the module of evalkit.report that calls it
STATS = {"rate": "aggregates", "mean_ci": "aggregates", "compare_binary": "comparisons",
         "compare_scores": "comparisons"}


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "p")
    evalkit(root, "run")
    return root


def _summarize(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, dict[str, int]]:
    """Summarize in this process; return report.json's bytes and how often each statistic was computed."""
    import importlib

    from evalkit.project import load
    from evalkit.report.summarize import summarize

    calls = dict.fromkeys(STATS, 0)

    def counting(name: str, module: object):
        fn = getattr(module, name)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)

        return wrapper

    with monkeypatch.context() as m:
        for name, where in STATS.items():
            module = importlib.import_module(f"evalkit.report.{where}")
            m.setattr(module, name, counting(name, module))
        loaded = load(str(root / "evalkit.yaml"), refresh=True)
        summarize(loaded.config, loaded.project)
    return (root / "site" / "r1" / "report.json").read_bytes(), calls


def _cache(root: Path) -> Path:
    return root / ".evalkit" / "cache" / "stats.json"


def test_rerun_reuses_every_statistic(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = (project / "site" / "r1" / "report.json").read_bytes()
    assert _cache(project).exists()
    after, calls = _summarize(project, monkeypatch)
    assert calls == dict.fromkeys(STATS, 0)
    assert after == before


def test_cached_summarize_needs_no_scipy(project: Path) -> None:
    code = ("import os, sys; from evalkit.project import load; from evalkit.report.summarize import summarize; "
            f"loaded = load({str(project / 'evalkit.yaml')!r}); summarize(loaded.config, loaded.project); "
            "print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_changed_score_recomputes_and_matches_a_cold_run(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = (project / "site" / "r1" / "report.json").read_bytes()
    scores = project / ".evalkit/artifacts/rules/migration/jpa-entity/scores.json"
    data = json.loads(scores.read_text())
    assert data["metrics"]["codebleu"] != 0.25
    data["metrics"]["codebleu"] = 0.25
    scores.write_text(json.dumps(data))

    changed, calls = _summarize(project, monkeypatch)
    assert changed != before
    assert calls["mean_ci"] > 0 and calls["compare_scores"] > 0, calls
    report = json.loads(changed)
    suite = next(s for s in report["suites"] if s["name"] == "migration")
    assert suite["systems"]["rules"]["codebleu"]["value"] == pytest.approx(
        (0.25 + json.loads((project / ".evalkit/artifacts/rules/migration/cdi-inject/scores.json").read_text())
         ["metrics"]["codebleu"]) / 2)

    # the same bytes as a summarize that starts without any cache
    _cache(project).unlink()
    cold, cold_calls = _summarize(project, monkeypatch)
    assert cold == changed
    assert sum(cold_calls.values()) > sum(calls.values())

    # and a settings change (resamples) is a different call: recomputed, not reused
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text() + "report:\n  bootstrap_resamples: 999\n")
    _, resampled = _summarize(project, monkeypatch)
    assert resampled["mean_ci"] > 0


def test_corrupt_or_foreign_cache_is_ignored(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = (project / "site" / "r1" / "report.json").read_bytes()
    _cache(project).write_text("{not json")
    after, calls = _summarize(project, monkeypatch)
    assert after == before and calls["mean_ci"] + calls["rate"] > 0
    # entries written under another salt (other statistics code or numpy/scipy) are not reused
    data = json.loads(_cache(project).read_text())
    data["salt"] = "something else"
    _cache(project).write_text(json.dumps(data))
    after, calls = _summarize(project, monkeypatch)
    assert after == before and calls["mean_ci"] + calls["rate"] > 0
