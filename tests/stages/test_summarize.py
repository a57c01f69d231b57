"""summarize(cfg, project), called directly on scores written by hand: rates, n, exclusions, comparisons with
the baseline, case rows. (Release diffs, the stats cache and byte-identical reruns: tests/test_summarize*.py.)"""

from __future__ import annotations

import json

import pytest

from evalkit.artifacts import ScoresArtifact, artifact_path
from evalkit.fsutil import atomic_write_json
from evalkit.report.summarize import summarize

# system -> case id -> (status, metrics, excluded); naive is the project's baseline, `fails` has no scores
SCORES = {
    "naive": {"jpa-entity": ("ok", {"answered": 1.0, "assertion_pass": 1.0, "cost_usd": 0.25}, None),
              "cdi-inject": ("ok", {"answered": 1.0, "assertion_pass": 0.0, "cost_usd": 0.5}, None)},
    "counter": {"jpa-entity": ("ok", {"answered": 1.0, "assertion_pass": 1.0, "cost_usd": 0.0}, None),
                "cdi-inject": ("error", {"answered": 0.0, "assertion_pass": 0.0, "cost_usd": 0.0}, None)},
    "gold": {"jpa-entity": ("ok", {"answered": 1.0, "assertion_pass": 1.0, "cost_usd": 0.0}, None),
             "cdi-inject": ("broken", {}, "broken")},
}


@pytest.fixture()
def report(migration):
    for system, cases in SCORES.items():
        for case_id, (status, metrics, excluded) in cases.items():
            atomic_write_json(artifact_path(migration.cfg.work_path, "score", system, "migration", case_id),
                              ScoresArtifact(system=system, suite="migration", case_id=case_id, status=status,
                                             reason="the reference fails" if excluded else "", metrics=metrics,
                                             excluded=excluded))
    return summarize(migration.cfg, migration.project)


def test_rates_n_and_exclusions_per_system_and_suite(report) -> None:
    (suite,) = report.suites
    assert suite.name == "migration" and suite.n_cases == 2
    assert list(suite.systems) == ["naive", "counter", "gold"]  # config order; `fails` has no scores here
    naive, counter, gold = (suite.systems[n] for n in ("naive", "counter", "gold"))
    assert (naive["assertion_pass"].value, naive["assertion_pass"].n) == (0.5, 2)
    assert (naive["answered"].value, naive["answered"].n) == (1.0, 2)
    assert (counter["answered"].value, counter["answered"].n) == (0.5, 2)
    assert (gold["assertion_pass"].value, gold["assertion_pass"].n) == (1.0, 1)
    assert gold["assertion_pass"].excluded == {"broken": 1} and naive["assertion_pass"].excluded == {}
    a = naive["assertion_pass"]
    assert a.method == "wilson" and a.low is not None and a.high is not None and a.low < 0.5 < a.high
    assert naive["cost_usd"].method == "total" and naive["cost_usd"].value == 0.75
    assert suite.broken == ["cdi-inject: the reference fails"]


def test_system_summaries_count_statuses_over_all_cases(report) -> None:
    systems = {s.name: s for s in report.systems}
    assert [s.name for s in report.systems] == ["naive", "counter", "fails", "gold"]
    assert systems["naive"].is_baseline and not systems["counter"].is_baseline
    assert systems["counter"].status_counts == {"error": 1, "ok": 1}
    assert systems["gold"].status_counts == {"broken": 1, "ok": 1} and systems["gold"].n_cases == 2
    assert systems["fails"].n_cases == 0 and systems["fails"].metrics == {}


def test_each_system_is_compared_with_the_baseline_on_the_cases_both_have(report) -> None:
    (suite,) = report.suites
    pairs = {(c.metric, c.baseline, c.system): c for c in suite.comparisons}
    assert {(m, s) for m, b, s in pairs if b == "naive"} == {
        (m, s) for m in ("answered", "assertion_pass") for s in ("counter", "gold")}
    assert all(b == "naive" for _, b, _ in pairs)
    assert pairs[("assertion_pass", "naive", "gold")].n_pairs == 1  # gold's broken case is left out
    answered = pairs[("answered", "naive", "counter")]
    assert (answered.n_pairs, answered.kind, answered.baseline_value, answered.system_value) == (2, "binary", 1.0, 0.5)
    assert answered.discordant == (1, 0)  # naive answered cdi-inject, counter did not
    assert "cost_usd" not in {m for m, _, _ in pairs}  # totals are not compared
    for system in ("counter", "gold"):  # Holm within each system's family: adjusted p never below the raw one
        family = [c for c in suite.comparisons if c.system == system and c.p_value is not None]
        assert family and all(c.holm_family == len(family) and c.p_holm is not None and c.p_holm >= c.p_value
                              for c in family)


def test_rows_tags_and_the_written_report(report, migration) -> None:
    rows = {r.case_id: r for r in report.cases}
    assert set(rows) == {"jpa-entity", "cdi-inject"}
    assert set(rows["cdi-inject"].systems) == {"naive", "counter", "gold"}
    assert rows["cdi-inject"].systems["gold"].excluded == "broken"
    # breakdowns by the cases' tags (jpa-entity: javax-to-jakarta, jpa; cdi-inject: javax-to-jakarta, cdi), headline metrics
    assert set(report.breakdowns) == {t for c in migration.project.cases for t in c.tags} == {
        "javax-to-jakarta", "jpa", "cdi"}
    jpa, cdi, both = (report.breakdowns[t]["counter"]["answered"] for t in ("jpa", "cdi", "javax-to-jakarta"))
    assert (jpa.value, jpa.n, cdi.value, cdi.n, both.value, both.n) == (1.0, 1, 0.0, 1, 0.5, 2)
    assert "assertion_pass" not in report.breakdowns["jpa"]["counter"]  # not a headline metric
    written = json.loads((migration.cfg.site_path / "r1" / "report.json").read_text())
    assert written == json.loads(report.model_dump_json())
    case_json = migration.cfg.site_path / "r1" / "cases" / "migration" / "cdi-inject.json"
    assert json.loads(case_json.read_text())["case_id"] == "cdi-inject"
