"""Leaderboards (ranking by the kind's headline metric, ties, missing values, costs), the cross-suite
overview, paginated suite pages, and the modes of the files the site is made of."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from evalkit.kinds import names as kind_names
from evalkit.fsutil import atomic_write_text
from evalkit.metrics.registry import LEADERBOARD_METRICS, METRICS, leaderboard_metric
from evalkit.report import release_pages, render
from evalkit.report.leaderboard import overview, rank, suite_leaderboard
from evalkit.report.models import Aggregate, CaseCell, CaseRow, Coverage, SuiteSummary
from helpers import bench_site



def agg(metric: str, value: float | None, n: int = 10) -> Aggregate:
    return Aggregate(metric=metric, n=n if value is not None else 0, value=value,
                     low=None if value is None else max(0.0, value - 0.1), high=None if value is None else value + 0.1,
                     method="wilson")


def suite(kind: str, values: dict[str, dict[str, float | None]], n: int = 10,
          coverage: dict[str, Coverage] | None = None) -> SuiteSummary:
    return SuiteSummary(name=f"s-{kind}", kind=kind, language="python", description="", n_cases=n,
                        metrics=sorted({m for v in values.values() for m in v}),
                        systems={s: {m: agg(m, v, n) if METRICS[m].aggregate != "sum" else
                                     Aggregate(metric=m, n=n, value=v, method="total") for m, v in ms.items()}
                                 for s, ms in values.items()},
                        comparisons=[], broken=[], coverage=coverage or {})


def test_every_kind_declares_a_headline_metric_of_the_registry() -> None:
    for kind in kind_names():
        assert LEADERBOARD_METRICS.get(kind), kind
        for m in LEADERBOARD_METRICS[kind]:
            assert m in METRICS and (not METRICS[m].kinds or kind in METRICS[m].kinds), (kind, m)
    assert leaderboard_metric("patch", {"resolved", "codebleu"}) == "resolved"
    assert leaderboard_metric("migration", {"codebleu", "incidents_resolved"}) == "incidents_resolved"
    assert leaderboard_metric("agentic", {"resolution_effectiveness"}) == "resolution_effectiveness"
    assert leaderboard_metric("e2e", {"e2e_resolved", "e2e_pass_rate"}) == "e2e_resolved"
    assert leaderboard_metric("generation", {"assertion_score", "rubric_score"}) == "rubric_score"
    assert leaderboard_metric("rag", {"rag_faithfulness", "rag_answer_similarity"}) == "rag_faithfulness"
    # a rag suite judged by no LLM has only the similarity: ranked by it
    assert leaderboard_metric("rag", {"rag_answer_similarity", "answered"}) == "rag_answer_similarity"
    assert leaderboard_metric("patch", set()) is None


def test_rank_shares_ties_and_puts_missing_last() -> None:
    got = rank({"d": None, "c": 0.5, "a": 0.9, "b": 0.5, "e": 0.1}, True)
    assert got == [("a", 1), ("b", 2), ("c", 2), ("e", 4), ("d", None)]
    lower = rank({"slow": 9.0, "fast": 1.0, "none": None, "mid": 4.0}, False)
    assert lower == [("fast", 1), ("mid", 2), ("slow", 3), ("none", None)]
    assert rank({}, True) == []


def test_patch_leaderboard_ranks_by_resolved_with_costs_and_coverage() -> None:
    s = suite("patch", {
        "base": {"resolved": 0.2, "codebleu": 0.9, "cost_usd": 1.0},
        "good": {"resolved": 0.6, "codebleu": 0.1, "cost_usd": 3.0},
        "twin": {"resolved": 0.6, "codebleu": 0.5, "cost_usd": 0.0},
        "silent": {"resolved": None, "codebleu": 0.99, "cost_usd": None},
    }, coverage={"good": Coverage(attempted=8, cases=10), "base": Coverage(attempted=10, cases=10),
                 "twin": Coverage(attempted=10, cases=10), "silent": Coverage(attempted=0, cases=10)})
    lb = suite_leaderboard(s, [], {}, baseline="base")
    assert lb.metric == "resolved" and lb.has_resolved
    assert [(e.system, e.rank) for e in lb.entries] == [("good", 1), ("twin", 1), ("base", 3), ("silent", None)]
    good = lb.entries[0]
    assert (good.attempted, good.cases) == (8, 10)
    assert good.cost_per_case == pytest.approx(3.0 / 8)
    assert good.resolved == 6 and good.cost_per_resolved == pytest.approx(0.5)
    assert lb.entries[2].baseline and lb.entries[2].cost_per_resolved == pytest.approx(1.0 / 2)
    assert lb.entries[3].cost_per_case is None and lb.entries[3].cost_per_resolved is None


def test_mean_metric_kinds_have_no_cost_per_resolved_and_coverage_falls_back_to_rows() -> None:
    s = suite("agentic", {"a": {"resolution_effectiveness": 0.3, "cost_usd": 2.0},
                          "b": {"resolution_effectiveness": 0.7, "cost_usd": 2.0}}, n=2)
    rows = [CaseRow(suite=s.name, case_id=f"c{i}", systems={
        "a": CaseCell(status="ok" if i else "not_attempted"), "b": CaseCell(status="ok")}) for i in range(2)]
    lb = suite_leaderboard(s, rows, {})
    assert lb.metric == "resolution_effectiveness" and not lb.has_resolved
    assert [e.system for e in lb.entries] == ["b", "a"]
    a = lb.entries[1]
    assert (a.attempted, a.cases, a.cost_per_case, a.cost_per_resolved) == (1, 2, 2.0, None)


def test_overview_only_for_systems_on_the_same_cases() -> None:
    p = suite("patch", {"x": {"resolved": 0.5}, "y": {"resolved": 0.7}, "z": {"resolved": 0.9}})
    m = suite("migration", {"x": {"incidents_resolved": 0.8}, "y": {"incidents_resolved": 0.6}})
    rows = [CaseRow(suite=p.name, case_id="1", systems={n: CaseCell(status="ok") for n in "xyz"}),
            CaseRow(suite=m.name, case_id="1", systems={n: CaseCell(status="ok") for n in "xy"})]
    boards = [suite_leaderboard(p, rows, {}), suite_leaderboard(m, rows, {})]
    groups, note = overview(boards, rows, {})
    assert note == "" and len(groups) == 1
    g = groups[0]
    assert set(g.systems) == {"x", "y"} and g.suites == sorted([p.name, m.name])
    assert g.ranks["x"] == {p.name: 2, m.name: 1} and g.mean_rank["x"] == g.mean_rank["y"] == 1.5
    # z ran only the patch suite; x ran one migration case fewer: no two share a case set
    rows[1] = CaseRow(suite=m.name, case_id="1", systems={"y": CaseCell(status="ok")})
    groups, note = overview(boards, rows, {})
    assert groups == [] and "No cross-suite overview" in note
    assert overview(boards[:1], rows, {}) == ([], "")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lbsite") / "site"  # made by the writes (mktemp makes 0700 folders)
    old = os.umask(0o022)
    mp = pytest.MonkeyPatch()
    mp.setattr(release_pages, "CASES_PER_PAGE", 7)  # where the suite pages are cut
    try:
        bench_site().synthesize(root, n_cases=30, n_systems=3, release="r1", seed=3)
        render.render_site(root, "r1")
    finally:
        mp.undo()
        os.umask(old)
    return root


def test_release_page_shows_ranked_leaderboards(site: Path) -> None:
    from evalkit.report.models import Report

    report = Report.model_validate_json((site / "r1" / "report.json").read_bytes())
    html = (site / "r1" / "index.html").read_text(encoding="utf-8")
    assert 'class="grid systems"' not in html, "the old systems x metrics matrix is gone"
    for s in report.suites:
        m = re.search(rf'id="leaderboard-{s.name}".*?</table>', html, re.S)
        assert m, s.name
        table = m.group(0)
        metric = leaderboard_metric(s.kind, {k for a in s.systems.values() for k, v in a.items() if v.value is not None})
        shown = re.findall(r'<th scope="row" data-sort="([^"]+)"', table)
        want = sorted(s.systems, key=lambda n: -(s.systems[n][metric].value or 0))
        assert shown == want, (s.name, metric)
        assert table.count("aria-sort=") == 1 and table.count('<button type="button" class="sort"') >= 5
    assert 'src="../assets/sort.js"' in html and (site / "assets" / "sort.js").exists()
    assert "No cross-suite overview" not in html or len(report.suites) > 1


def test_suite_pages_are_paginated_and_list_every_case_once(site: Path) -> None:
    pages = sorted((site / "r1" / "suites").glob("migration*.html"))
    assert [p.name for p in pages] == ["migration.cases-2.html", "migration.cases-3.html", "migration.html"]
    linked = []
    for p in pages:
        html = p.read_text(encoding="utf-8")
        linked += re.findall(r'<a href="\.\./cases/migration/(case-\d+)\.html">', html)
        assert ('id="leaderboard"' in html) == (p.name == "migration.html")
        for k in (2, 3):
            assert f'href="migration.cases-{k}.html"' in html or f"{k}</strong>" in html
    assert sorted(linked) == sorted(set(linked)) and len(linked) == 20  # 2 of every 3 cases are migration ones


def test_site_files_are_readable_by_all(site: Path) -> None:
    files = [p for p in site.rglob("*") if p.is_file()]
    assert len(files) > 60
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o644, (p, oct(p.stat().st_mode))
    for d in [site, *[p for p in site.rglob("*") if p.is_dir()]]:
        assert stat.S_IMODE(d.stat().st_mode) == 0o755, (d, oct(d.stat().st_mode))


def test_atomic_writes_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        atomic_write_text(tmp_path / "private" / "a.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "private" / "a.txt").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "private").stat().st_mode) == 0o700
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "private" / "a.txt", "y")  # replacing a 0600 file
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "private" / "a.txt").stat().st_mode) == 0o644
    assert not [p for p in (tmp_path / "private").iterdir() if p.name.endswith(".tmp")]


def _rows(suite_name: str, cells: dict[str, dict[str, dict[str, float | None]]]) -> list[CaseRow]:
    """case id -> system -> metrics, as report rows."""
    return [CaseRow(suite=suite_name, case_id=c, systems={s: CaseCell(status="ok", metrics=m) for s, m in by.items()})
            for c, by in cells.items()]


def test_a_headline_only_some_systems_have_is_passed_over_and_the_ranking_is_over_shared_cases() -> None:
    """#25: offline, a judge-only headline held the free zero of the one system it was decided for (empty #1
    on five rubric leaderboards); now the next headline every system has ranks, over the cases all have."""
    s = suite("generation", {"empty": {"rubric_score": 0.0, "assertion_score": 0.0},
                             "real": {"rubric_score": None, "assertion_score": 0.75},
                             "partial": {"rubric_score": None, "assertion_score": 1.0}}, n=3)
    rows = _rows(s.name, {"c1": {"empty": {"rubric_score": 0.0, "assertion_score": 0.0},
                                 "real": {"assertion_score": 0.5}, "partial": {"assertion_score": 1.0}},
                          "c2": {"empty": {"assertion_score": 0.0}, "real": {"assertion_score": 1.0}},
                          "c3": {"empty": {"assertion_score": 0.0}, "real": {"assertion_score": 0.75}}})
    lb = suite_leaderboard(s, rows, {})
    assert lb.metric == "assertion_score" and "rubric_score" in lb.fell_back
    assert lb.common_cases == 1  # `partial` has a value on c1 only: everyone is ranked over c1
    by = {e.system: e for e in lb.entries}
    assert (by["real"].value, by["real"].n) == (0.5, 1) and by["partial"].rank == 1 and by["empty"].rank == 3


def test_no_headline_every_system_has_ranks_nobody() -> None:
    s = suite("generation", {"a": {"rubric_score": 0.5}, "b": {"rubric_score": None}}, n=2)
    rows = _rows(s.name, {"c1": {"a": {"rubric_score": 0.5}, "b": {}}, "c2": {"a": {}, "b": {}}})
    lb = suite_leaderboard(s, rows, {})
    assert lb.metric is None and all(e.rank is None for e in lb.entries) and "rubric_score" in lb.fell_back


def test_canaries_are_valued_not_ranked_and_raise_the_alarm_only_when_they_reach_a_real_system() -> None:
    values = {"gold": 1.0, "llm": 0.6, "weak": 0.0, "canary-empty": 0.0, "canary-placeholder": 0.0}
    s = suite("migration", {n: {"migrated": v} for n, v in values.items()}, n=2)
    rows = _rows(s.name, {c: {n: {"migrated": v} for n, v in values.items()} for c in ("c1", "c2")})
    canaries = {"canary-empty", "canary-placeholder"}
    lb = suite_leaderboard(s, rows, {}, canaries=canaries, gold={"gold"})
    assert [(e.system, e.rank) for e in lb.entries if not e.canary] == [("gold", 1), ("llm", 2), ("weak", 3)]
    assert {e.system for e in lb.entries if e.canary} == canaries and all(e.rank is None for e in lb.entries if e.canary)
    assert lb.alarm == ""  # a canary tying a real system that scored nothing is not the metric's fault
    gamed = {**values, "canary-placeholder": 0.6}
    s = suite("migration", {n: {"migrated": v} for n, v in gamed.items()}, n=2)
    rows = _rows(s.name, {c: {n: {"migrated": v} for n, v in gamed.items()} for c in ("c1", "c2")})
    lb = suite_leaderboard(s, rows, {}, canaries=canaries, gold={"gold"})
    assert "canary-placeholder" in lb.alarm and "llm" in lb.alarm and "canary-empty" not in lb.alarm
    assert [e.rank for e in lb.entries if e.system == "llm"] == [2]  # canaries never move a real system's rank


def test_the_console_table_shows_the_site_headline(tmp_path: Path) -> None:
    from evalkit.fsutil import atomic_write_json
    from evalkit.progress import summary_rows
    from evalkit.report.models import Report, SystemSummary

    s = suite("migration", {"a": {"migrated": 0.5, "judge_mean": 0.0}, "b": {"migrated": 1.0}}, n=2)
    rows = _rows(s.name, {"c1": {"a": {"migrated": 0.0, "judge_mean": 0.0}, "b": {"migrated": 1.0}},
                          "c2": {"a": {"migrated": 1.0}, "b": {"migrated": 1.0}}})
    systems = [SystemSummary(name=n, description="", adapter="recorded", is_baseline=n == "a", n_cases=2,
                             status_counts={}, metrics={}) for n in ("a", "b")]
    report = Report(release="r1", title="t", baseline="a", systems=systems, suites=[s], cases=rows,
                    metric_info={m: METRICS[m] for m in ("migrated", "judge_mean")})
    atomic_write_json(tmp_path / "r1" / "report.json", report)
    got = {r["system"]: r for r in summary_rows(tmp_path, "r1")}
    assert {r["metric"] for r in got.values()} == {METRICS["migrated"].display}
    assert got["b"]["value"].startswith("100.0%") and got["a"]["value"].startswith("50.0%")


def test_a_broken_case_is_counted_once_not_as_a_failed_run_per_system(tmp_path: Path) -> None:
    """#30: a broken case (bad input) showed as one "failed run (system errors)" per system."""
    from io import StringIO

    from rich.console import Console

    from evalkit.fsutil import atomic_write_json
    from evalkit.progress import print_summary, summary_rows
    from evalkit.report.models import Report, SystemSummary
    from evalkit.report.page_data import status_counts

    names = ("a", "b", "c")
    s = suite("migration", {n: {"migrated": 1.0} for n in names}, n=2)
    rows = _rows(s.name, {"c1": {n: {"migrated": 1.0} for n in names}})
    rows.append(CaseRow(suite=s.name, case_id="bad", systems={
        n: CaseCell(status="error", reason="broken case: case.yaml:3: reference: expected a mapping", excluded="broken")
        for n in names}))
    counts = status_counts(rows, list(names))
    assert counts["total"]["broken"] == 1 and counts["total"]["error"] == 0
    assert all(counts[n]["broken"] == 1 and counts[n]["error"] == 0 for n in names)
    systems = [SystemSummary(name=n, description="", adapter="recorded", is_baseline=n == "a", n_cases=2,
                             status_counts={}, metrics={}) for n in names]
    report = Report(release="r1", title="t", baseline="a", systems=systems, suites=[s], cases=rows,
                    metric_info={"migrated": METRICS["migrated"]})
    atomic_write_json(tmp_path / "r1" / "report.json", report)
    assert all(r["errors"] == 0 for r in summary_rows(tmp_path, "r1"))
    out = StringIO()
    print_summary(tmp_path, "r1", console=Console(file=out, width=200))
    text = out.getvalue()
    assert text.count("broken case") == 1 and "1 broken case(s)" in text
    assert "s-migration/bad: case.yaml:3" in text and "first error of" not in text
