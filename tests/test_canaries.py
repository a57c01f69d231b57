"""#25: canaries, built in. Each kind makes its canaries from real-shaped cases (the demo's); on the demo run
no headline lets a canary tie or beat gold or a real system (no alarm, `--strict` exits 0), the pages show them
apart, the docs' table (docs/guide/metrics.md) is what scripts/canary-table.py makes of the run; a headline made gameable on purpose raises
the metric-validity alarm (in report.json, on the page, exit status 8 with `--strict`)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from evalkit.cases import discover
from evalkit.graders.canaries import VARIANTS, elision_comment, half_patch
from evalkit.graders.degenerate import assess
from evalkit.kinds import kind
from evalkit.report.leaderboard import canary_table, leaderboards
from evalkit.report.models import Report
from evalkit.kinds.migration.score import offending_lines
from evalkit.treesitter import syntax_errors
from tests.helpers import REPO, evalkit


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("canary_table", REPO / "scripts" / "canary-table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def demo_cases() -> dict[str, list[Any]]:
    project = discover(REPO / "cases")
    out: dict[str, list[Any]] = {}
    for case in project.cases:
        out.setdefault(case.kind, []).append(case)
    assert set(out) == {"migration", "patch", "generation", "rag", "agentic", "e2e"}
    return out


def test_migration_canaries_on_the_demo_files(demo_cases: dict[str, list[Any]]) -> None:
    k = kind("migration")
    for case in demo_cases["migration"]:
        legacy, expected = case.read("inputs.legacy_file"), case.read("reference.expected_file")
        mf = k.main_file(case)
        made = {v: k.canary(case, v) for v in VARIANTS}
        assert made["empty"].files == {} and made["empty"].patch is None
        assert made["unchanged"].files[mf] == legacy
        if expected is None:
            continue
        half, elided = made["truncated"].files[mf], made["truncated-elided"].files[mf]
        assert not syntax_errors(half, "java"), half  # braces closed: only the structure tells it is cut off
        assert len(half.splitlines()) < len(expected.splitlines())
        assert elision_comment("java") in elided and not assess(elided, legacy, "java").complete
        assert not assess(half, legacy, "java", expected).complete, case.id
        assert not syntax_errors(made["placeholder"].files[mf], "java")
        deleted = made["lines-deleted"].files[mf]
        offending = offending_lines(case)  # the incidents' lines and where their rules' matchers fire
        assert offending and len(deleted.splitlines()) == len(legacy.splitlines()) - len(offending)


def test_canaries_of_the_other_kinds(demo_cases: dict[str, list[Any]]) -> None:
    for case in demo_cases["patch"]:
        k = kind("patch")
        assert k.canary(case, "unchanged").patch == ""
        assert k.canary(case, "placeholder").patch.startswith("diff --git a/TODO.md")
        assert k.canary(case, "lines-deleted") is None and k.canary(case, "truncated-elided") is None
    for case in demo_cases["agentic"]:
        expected = case.reference.expected_tasks
        unchanged = kind("agentic").canary(case, "unchanged")
        assert len(unchanged.tasks) == len(expected) and not unchanged.patch and not unchanged.files
        assert len(kind("agentic").canary(case, "placeholder").tasks) == 1
    for case in demo_cases["e2e"]:
        assert kind("e2e").canary(case, "unchanged").patch == ""
        assert kind("e2e").canary(case, "truncated") is None
    for case in demo_cases["rag"]:
        assert kind("rag").canary(case, "unchanged").text == case.inputs.question
    for case in demo_cases["generation"]:
        k = kind("generation")
        mf = k.main_file(case)
        assert case.inputs.instructions.splitlines()[0] in k.canary(case, "unchanged").files[mf]
        assert k.canary(case, "placeholder").files[mf] == "export {};\n"
        truncated = k.canary(case, "truncated")
        if truncated is not None:
            assert not syntax_errors(truncated.files[mf], "typescript")


def test_half_patch_keeps_whole_hunks() -> None:
    patch = ("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n y = 3\n"
             "@@ -10,2 +10,2 @@\n-z = 1\n+z = 2\n w = 3\n"
             "diff --git a/b.py b/b.py\n--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-q = 1\n+q = 2\n"
             "@@ -5 +5 @@\n-r = 1\n+r = 2\n")
    half = half_patch(patch)
    assert half is not None and half.count("@@ -") == 2 and "b.py" not in half and half.endswith(" w = 3\n")
    assert half_patch(patch.split("@@ -10")[0]) is None  # one hunk: no half of it applies


@pytest.fixture(scope="module")
def demo(demo_run: tuple[Path, Any]) -> tuple[Path, Report, Any]:
    """The session's demo run (conftest.demo_run: `evalkit run -q --strict`, exit 0 or it fails there)."""
    project, proc = demo_run
    (report_file,) = (project / "site").glob("*/report.json")
    return project, Report.model_validate_json(report_file.read_bytes()), proc


def test_the_demo_project_runs_canaries_and_no_headline_lets_one_tie_or_beat_gold(demo: tuple[Path, Report, Any]) -> None:
    _, report, proc = demo
    canaries = {s.name for s in report.systems if s.adapter == "canary"}
    assert canaries == {f"canary-{v}" for v in VARIANTS}
    assert report.validity_alarms == {} and "metric-validity alarm" not in proc.stderr
    by_suite = {s.name: s.systems for s in report.suites}
    # safety only over answered outputs, interventions only over resolved runs, resolution over expected tasks
    assert by_suite["generation"]["canary-empty"].get("injection_clean") is None \
        or by_suite["generation"]["canary-empty"]["injection_clean"].value is None
    assert by_suite["e2e"]["canary-empty"]["e2e_interventions"].value is None
    assert by_suite["agentic"]["canary-unchanged"]["resolution_effectiveness"].value == 0.0
    assert by_suite["agentic"]["canary-unchanged"]["discovery_recall"].value == 1.0  # found every task, fixed none
    boards = leaderboards(report)
    assert set(boards) == {s.name for s in report.suites}
    for name, board in boards.items():
        assert board.metric and not board.alarm, (name, board.alarm)
        rows = [r for r in report.cases if r.suite == name]
        gold = {r.case_id: r.systems["gold"].metrics.get(board.metric) for r in rows if "gold" in r.systems}
        for c in canaries:
            values = {r.case_id: r.systems[c].metrics.get(board.metric) for r in rows if c in r.systems}
            shared = [k for k, v in values.items() if v is not None and gold.get(k) is not None]
            if not shared:
                continue  # the canary means nothing for the kind (e.g. truncated for e2e)
            canary_mean = sum(values[k] for k in shared) / len(shared)  # type: ignore[misc]
            gold_mean = sum(gold[k] for k in shared) / len(shared)  # type: ignore[misc]
            assert canary_mean < gold_mean, f"{name}: {c} {canary_mean:.3f} ties or beats gold {gold_mean:.3f} " \
                                            f"on the headline {board.metric}"
        entries = {e.system: e for e in board.entries}
        assert all(entries[c].rank is None for c in canaries if c in entries)  # valued, never ranked


def test_the_release_page_shows_the_canaries_apart(demo: tuple[Path, Report, Any]) -> None:
    project, report, _ = demo
    page = (project / "site" / report.release / "index.html").read_text(encoding="utf-8")
    assert page.count('class="scroll canaries"') == len(report.suites)
    assert "Metric-validity alarm" not in page
    main_tables = page.split('class="scroll canaries"')[0]
    assert "canary-empty" not in main_tables.split("<h2 id=\"h-systems\">Leaderboards</h2>")[-1]


def test_readme_table_is_what_the_canaries_score(demo: tuple[Path, Report, Any]) -> None:
    _, report, _ = demo
    page = (REPO / "docs" / "guide" / "metrics.md").read_text(encoding="utf-8")
    table = canary_table(report)
    assert _script().replace_table(page, table) == page, \
        "the docs' canary table drifted: python3 scripts/canary-table.py <demo report.json> --readme docs/guide/metrics.md\n" + table


def test_a_headline_made_gameable_on_purpose_raises_the_alarm(demo: tuple[Path, Report, Any],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _, report, _ = demo
    # partial credit as the migration headline: deleting the offending lines resolves every incident
    monkeypatch.setattr(type(kind("migration")), "leaderboard", ("incidents_resolved",))
    board = leaderboards(report)["migration"]
    assert board.metric == "incidents_resolved"
    assert "canary-lines-deleted" in board.alarm and "gold" in board.alarm, board.alarm
    # patch's p2p pass rate: an empty patch no longer keeps every test green (the one n/a rule), but a patch
    # that applies and changes nothing that matters still does: no headline, and the alarm says why
    monkeypatch.setattr(type(kind("patch")), "leaderboard", ("p2p_pass_rate",))
    alarm = leaderboards(report)["patch"].alarm
    assert "canary-placeholder" in alarm and "canary-empty" not in alarm and "canary-unchanged" not in alarm, alarm
    # the real headlines stay silent
    monkeypatch.undo()
    assert all(not b.alarm for b in leaderboards(report).values())


def test_the_alarm_in_report_json_and_the_exit_status(tmp_path: Path) -> None:
    """A rag project with a recorded system that echoes the incident as its hint: hint similarity cannot tell it
    from the unchanged canary (the same echo), so the alarm names it; `--strict` turns it into exit status 8."""
    project = tmp_path / "proj"
    shutil.copytree(REPO / "cases" / "rag", project / "cases" / "rag")
    y = YAML(typ="safe")
    for f in (project / "cases" / "rag").glob("*.yaml"):
        if f.name == "suite.yaml":
            continue
        case = y.load(f.read_text(encoding="utf-8"))
        out = project / "outputs" / "parrot" / "rag" / f"{f.stem}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"text": case["inputs"]["question"]}), encoding="utf-8")
    (project / "evalkit.yaml").write_text(
        "release: r1\ncanaries: true\nsystems:\n"
        "  - {name: parrot, adapter: recorded, path: outputs/parrot}\n"
        "  - {name: gold, adapter: gold}\n", encoding="utf-8")
    proc = evalkit(project, "run", "-q", check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "metric-validity alarm in suite rag" in proc.stderr and "canary-unchanged" in proc.stderr
    report = json.loads((project / "site" / "r1" / "report.json").read_text(encoding="utf-8"))
    assert "canary-unchanged" in report["validity_alarms"]["rag"] and "parrot" in report["validity_alarms"]["rag"]
    assert "Metric-validity alarm" in (project / "site" / "r1" / "index.html").read_text(encoding="utf-8")
    strict = evalkit(project, "run", "-q", "--strict", check=False)
    assert strict.returncode == 8 and "(--strict)" in strict.stderr
