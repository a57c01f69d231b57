"""Judge rubrics as configuration: the declaration model, the shipped rubrics, the generated verdict model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalkit.errors import InputError
from evalkit.graders.rubric_config import (
    JudgeRubric,
    as_recorded,
    load_rubric,
    metric_infos,
    shipped,
    shipped_names,
    verdict_model,
)
from helpers import realdata



def test_three_rubrics_ship() -> None:
    assert {"codejudge", "kai_ci", "kai_eval"} <= set(shipped_names())
    for name in ("codejudge", "kai_ci", "kai_eval"):
        assert shipped(name).name == name


def test_codejudge_declares_todays_judge() -> None:
    rubric = shipped("codejudge")
    assert [f.name for f in rubric.numeric] == ["semantic_equivalence_score", "rule_adherence_score",
                                                "faithfulness_score", "code_quality_score"]
    assert [f.name for f in rubric.booleans] == ["is_compilable"]
    assert all(f.categories() == [1, 2, 3, 4, 5] and f.kappa_weights == "quadratic" for f in rubric.numeric)
    assert rubric.field("is_compilable").kappa_weights == "unweighted"
    # decided without a model: every score 0 and not compilable (Kai's judge prompt)
    assert {f.name: f.decided_value() for f in rubric.fields} == {
        "semantic_equivalence_score": 0, "rule_adherence_score": 0, "faithfulness_score": 0,
        "code_quality_score": 0, "is_compilable": False}
    assert rubric.overall_metric == "judge_mean"
    assert rubric.system_template == "migration_judge_system.md.j2"


def _real(*parts: str) -> Path:
    """A file of ../shared/realdata (`helpers.realdata`: fails in CI when absent, skips elsewhere)."""
    return realdata(*parts)


def _kai_ci_rows() -> list[dict]:
    path = _real("kai_judge", "kai-ci_report.json")
    return [row for report in json.loads(path.read_text()) for row in report["kaiEvalData"]]


def test_kai_ci_rubric_takes_every_real_report_row() -> None:
    """Every row of Konveyor's CI report validates against kai_ci, and averageScore is the rubric's overall score."""
    rubric = shipped("kai_ci")
    model = verdict_model(rubric)
    rows = _kai_ci_rows()
    assert len(rows) == 240
    for row in rows:
        verdict = model.model_validate({k: v for k, v in row.items() if k in model.model_fields})
        overall = rubric.overall({f.name: getattr(verdict, f.name) for f in rubric.numeric})
        assert overall == pytest.approx(row["averageScore"])
    assert rubric.field("unnecessaryChanges").direction == "lower"
    assert rubric.field("unnecessaryChanges").worst() is True
    assert rubric.field("validCode").worst() is False
    assert rubric.field("effectiveness").categories() == list(range(1, 11))


def test_kai_eval_rubric_takes_the_real_results() -> None:
    path = _real("kai_eval_pranavgaikwad", "runner", "tests", "test-data", "eval_results.json")
    rubric = shipped("kai_eval")
    model = verdict_model(rubric)
    experiments = [e for r in json.loads(path.read_text())["results"] for e in r["experiments"]]
    assert experiments
    for e in experiments:
        verdict = model.model_validate({k: m["score"] for k, m in e["metrics"].items()})
        assert all(f.is_continuous for f in rubric.fields)
        values = {f.name: getattr(verdict, f.name) for f in rubric.fields}
        # kai-eval's calculateFinalScore: 10 x (0.5 completeness + 0.3 functionalParity + 0.2 residualEffort)
        final = 10 * (0.5 * values["completeness"] + 0.3 * values["functionalParity"] + 0.2 * values["residualEffort"])
        assert 10 * rubric.overall(values) == pytest.approx(final)


@pytest.mark.parametrize("bad", [{"effectiveness": 11}, {"effectiveness": 0}, {"effectiveness": True},
                                 {"effectiveness": 7.5}, {"validCode": 1}, {"validCode": "maybe"}])
def test_verdicts_are_strict(bad: dict) -> None:
    model = verdict_model(shipped("kai_ci"))
    good = {"effectiveness": 8, "specificity": 8, "reasoning": 7, "competency": 9, "validCode": True,
            "unnecessaryChanges": False}
    model.model_validate(good)
    with pytest.raises(ValueError):
        model.model_validate({**good, **bad})


def test_unit_scale_is_strict() -> None:
    model = verdict_model(shipped("kai_eval"))
    ok = model.model_validate({"completeness": "0.6", "functionalParity": 1, "residualEffort": 0.5})
    assert ok.completeness == 0.6 and isinstance(ok.functionalParity, float)
    for bad in (1.01, -0.1, True, "high"):
        with pytest.raises(ValueError):
            model.model_validate({"completeness": bad, "functionalParity": 1, "residualEffort": 0.5})


def test_recorded_verdict_round_trips() -> None:
    model = verdict_model(shipped("codejudge"))
    verdict = model.model_validate({"semantic_equivalence_score": "4", "rule_adherence_score": 5,
                                    "faithfulness_score": 4, "code_quality_score": 3, "is_compilable": "true"})
    recorded = as_recorded(verdict)
    again = type(recorded).model_validate_json(recorded.model_dump_json())
    assert again.model_dump() == {"detailed_notes": "", "semantic_equivalence_score": 4, "rule_adherence_score": 5,
                                  "faithfulness_score": 4, "code_quality_score": 3, "is_compilable": True}


def test_metric_metadata_follows_the_declaration() -> None:
    infos = {i.name: i for i in metric_infos(shipped("kai_ci"))}
    assert infos["judge_unnecessary_changes"].higher_is_better is False
    assert infos["judge_unnecessary_changes"].aggregate == "rate" and infos["judge_unnecessary_changes"].binary
    assert infos["judge_effectiveness"].scale == "0-10" and infos["judge_effectiveness"].aggregate == "mean"
    assert infos["judge_kai_ci_mean"].headline


RUBRIC = """\
name: custom
description: a custom rubric
system_template: migration_judge_rubric_system.md.j2
user_template: prompts/user.md.j2
fields:
  - name: coverage
    description: share of incidents handled
    scale: {type: unit}
  - name: builds
    description: the file builds
    scale: {type: boolean}
  - name: churn
    description: lines changed needlessly, 1 none to 10 many
    scale: {type: integer, min: 1, max: 10}
    direction: lower
    weight: 0
"""


def test_custom_rubric_file_with_a_template_beside_it(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md.j2").write_text("Judge {{ generated_code | data('generated file') }} "
                                                     "with {{ rubric.fields | length }} fields\n")
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    rubric = load_rubric("rubric.yaml", tmp_path)
    assert [f.kind for f in rubric.fields] == ["continuous", "boolean", "ordinal"]
    assert rubric.field("churn").worst() == 10 and rubric.field("builds").worst() is False
    assert "with 3 fields" in rubric.render(rubric.user_template, generated_code="x = 1")
    assert "`churn` (an integer from 1 to 10, lower is better)" in rubric.render(rubric.system_template)
    before = rubric.version()
    (tmp_path / "prompts" / "user.md.j2").write_text("Changed {{ generated_code }}\n")
    assert load_rubric("rubric.yaml", tmp_path).version() != before


@pytest.mark.parametrize("edit, line, words", [
    (("    scale: {type: unit}\n", "    scale: {type: percent}\n", 1), 8, "scale"),
    (("max: 10}", "max: 0}", 1), 14, "max"),
    (("  - name: builds\n", "  - name: builds\n    colour: red\n", 1), 10, "unknown key"),
    (("name: custom\n", "name: custom\nname: again\n", 1), 2, "duplicate"),
    (("user_template: prompts/user.md.j2", "user_template: nowhere.j2", 1), 4, "not found"),
])
def test_bad_rubric_names_file_and_line(tmp_path: Path, edit: tuple[str, str, int], line: int, words: str) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md.j2").write_text("x\n")
    (tmp_path / "bad.yaml").write_text(RUBRIC.replace(*edit))
    with pytest.raises(InputError) as caught:
        load_rubric("bad.yaml", tmp_path, "suites/x")
    problem = caught.value.problems[0]
    assert problem.file == "suites/x/bad.yaml" and problem.line == line, str(caught.value)
    assert words in str(caught.value)


def test_unknown_rubric_name() -> None:
    with pytest.raises(InputError, match="unknown rubric 'nope'.*codejudge"):
        load_rubric("nope")


def test_rubric_rules() -> None:
    base = {"name": "r", "system_template": "a", "user_template": "b"}
    with pytest.raises(ValueError, match="share one scale"):
        JudgeRubric.model_validate({**base, "fields": [
            {"name": "a", "description": "", "scale": {"type": "unit"}},
            {"name": "b", "description": "", "scale": {"type": "integer", "min": 1, "max": 5}}]})
    with pytest.raises(ValueError, match="lower-is-better"):
        JudgeRubric.model_validate({**base, "fields": [
            {"name": "a", "description": "", "scale": {"type": "unit"}, "direction": "lower"}]})
    with pytest.raises(ValueError, match="duplicate field names"):
        JudgeRubric.model_validate({**base, "fields": [
            {"name": "a", "description": "", "scale": {"type": "unit"}},
            {"name": "a", "description": "", "scale": {"type": "unit"}}]})


def test_outcome_of_recorded_verdicts() -> None:
    """Verdicts given elsewhere (an imported report's rows) aggregate like the judge's own samples."""
    from evalkit.graders.migration_judge import outcome_of

    rubric = shipped("kai_ci")
    rows = [{"effectiveness": 8, "specificity": 8, "reasoning": 7, "competency": 9, "validCode": False,
             "unnecessaryChanges": False, "averageScore": 8.0, "file": "A.java"},
            {"effectiveness": 6, "specificity": 8, "reasoning": 8, "competency": 9, "validCode": True,
             "unnecessaryChanges": False}]
    outcome = outcome_of(rubric, rows, model="gpt-4o")
    assert outcome.rubric == "kai_ci" and outcome.samples == 2 and outcome.model == "gpt-4o"
    assert outcome.scores == {"effectiveness": 7.0, "specificity": 8.0, "reasoning": 7.5, "competency": 9.0}
    assert outcome.spread["effectiveness"] == 2 and outcome.unstable  # 2 points apart, and validCode differs
    assert outcome.flags == {"validCode": False, "unnecessaryChanges": False}  # a tie counts as the worse value
    assert outcome.is_compilable is None
    with pytest.raises(ValueError, match="effectiveness must be an integer from 1 to 10"):
        outcome_of(rubric, [{**rows[0], "effectiveness": 12}])


def test_a_rubric_cannot_redeclare_evalkits_metrics(tmp_path: Path) -> None:
    """A project's rubric may not give a built-in or shipped metric other metadata (file:line says which);
    its own metrics follow its file when the file changes."""
    from evalkit.metrics.registry import METRICS

    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md.j2").write_text("x\n")
    (tmp_path / "clash.yaml").write_text(RUBRIC.replace("    scale: {type: unit}\n",
                                                        "    scale: {type: unit}\n    metric: judge_mean\n", 1))
    with pytest.raises(InputError, match=r"clash.yaml:9: metric 'judge_mean' is already declared"):
        load_rubric("clash.yaml", tmp_path)
    (tmp_path / "own.yaml").write_text(RUBRIC.replace("name: custom", "name: own").replace("builds", "compiles"))
    load_rubric("own.yaml", tmp_path)
    assert METRICS["judge_compiles"].display == "Judge compiles"
    (tmp_path / "own.yaml").write_text(RUBRIC.replace("name: custom", "name: own").replace("builds", "compiles")
                                       .replace("    scale: {type: boolean}\n", "    scale: {type: boolean}\n    label: Compiles\n"))
    import time

    os.utime(tmp_path / "own.yaml", ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    load_rubric("own.yaml", tmp_path)
    assert METRICS["judge_compiles"].display == "Compiles"
    assert METRICS["judge_mean"].description.startswith("Mean of the judge's 4 scores under rubric codejudge")


def test_only_migration_suites_name_a_rubric(tmp_path: Path) -> None:
    from evalkit.cases import discover

    for kind, rubric, expected in [("generation", "kai_ci", "only migration suites have a judge rubric"),
                                   ("migration", "kai_cii", "unknown rubric 'kai_cii'")]:
        suite = tmp_path / kind / "s"
        suite.mkdir(parents=True)
        (suite / "suite.yaml").write_text(f"kind: {kind}\nlanguage: java\nrubric: {rubric}\n")
        project = discover(tmp_path / kind)
        problems = [str(p) for p in project.problems]
        assert any("s/suite.yaml:3: rubric: " in p and expected in p for p in problems), problems


def test_a_rubrics_overall_score_ranks_migration_suites_like_codejudges() -> None:
    from evalkit.metrics.registry import leaderboard_metric

    assert leaderboard_metric("migration", {"judge_kai_ci_mean", "codebleu_gain", "codebleu"}) == "judge_kai_ci_mean"
    assert leaderboard_metric("migration", {"judge_mean", "judge_kai_ci_mean"}) == "judge_mean"
    assert leaderboard_metric("migration", {"incidents_resolved", "judge_kai_eval_mean"}) == "incidents_resolved"


def test_codejudge_prompts_are_the_templates_as_before() -> None:
    """The default rubric asks exactly what the judge asked before rubrics (so cached verdicts stand)."""
    from evalkit.graders.migration_judge import Incident, MigrationJudgeInput, migration_requests
    from evalkit.llm.calls import system_blocks
    from evalkit.llm.prompts import render
    from evalkit.llm.settings import JudgeSettings

    item = MigrationJudgeInput(item_id="s/c", source_technology="Java EE", target_technology="Quarkus",
                               language="java", legacy_code="@Stateless class A {}\n",
                               incidents=[Incident(rule_id="r1", message="m", line=1)], solved_example="x",
                               generated_code="@ApplicationScoped class A {}\n")
    request = migration_requests(item, JudgeSettings())[0]
    assert request.system == system_blocks(render("migration_judge_system.md.j2"))
    context = item.model_dump(exclude={"item_id"})
    context["incidents"] = item.incidents
    assert request.messages[0]["content"] == render("migration_judge.md.j2", **context)
