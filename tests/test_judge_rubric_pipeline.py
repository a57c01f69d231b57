"""A custom judge rubric end to end: a migration suite naming its own rubric, judged by a loopback
Messages API inside a real run; its fields become metrics with the rubric's labels, scales and directions
in report.json and on the pages; invalid values get one repair; a bad rubric file stops the run (exit 2)
at its file:line; changing the rubric regrades."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fake_server import FakeAnthropic, Reply, text_of
from helpers import evalkit, evalkit_here, make_project, run

KEY = "sk-ant-test-rubric-0000"

RUBRIC = """\
name: custom
description: A team's own migration rubric.
system_template: migration_judge_rubric_system.md.j2
user_template: prompts/review.md.j2
mean_label: Team score
fields:
  - name: coverage
    description: share of the incidents the change resolves
    scale: {type: unit}
    label: Coverage
  - name: builds
    description: the file builds as part of its project
    scale: {type: boolean}
    label: Builds
  - name: churn
    description: lines changed that the migration did not need (1 none, 10 most of the file)
    scale: {type: integer, min: 1, max: 10}
    direction: lower
    weight: 0
    label: Churn
"""

REVIEW = """\
Review the migration from {{ source_technology | data("source technology") }} to {{ target_technology | data("target technology") }}.

{{ generated_code | data("generated file") }}

Give {{ rubric.fields | map(attribute="name") | join(", ") }}, then the JSON object.
"""


def respond(body: dict) -> Reply:
    """The team's judge: leftover javax or EJB halves coverage; a repair request gets a valid answer."""
    system = json.dumps(body.get("system", ""))
    if "`churn`" not in system:
        return Reply(text="not a rubric request")
    text = text_of(body)
    generated = text.split(": generated file>>>", 1)[1]
    leftover = "import javax." in generated or "@Stateless" in generated
    answer = {"coverage": 0.5 if leftover else 1.0, "builds": not leftover, "churn": 2 if leftover else 1,
              "detailed_notes": "checked"}
    repair = len(body["messages"]) > 1
    if "EJB_FIRST_ANSWER_INVALID" in text and not repair:  # never in a case: see the test that plants it
        answer["churn"] = 11
    if "class Hello" in generated and "TeamMarker" in generated:
        answer["coverage"] = "most"  # always invalid: judge_error after the repair
    return Reply(text="Coverage, builds, churn considered.\n```json\n" + json.dumps(answer) + "\n```")


@pytest.fixture
def server():
    with FakeAnthropic(responder=respond) as s:
        yield s


def rubric_project(tmp_path: Path, base_url: str) -> Path:
    project = make_project(tmp_path / "p", cases=["jpa-entity", "ejb-stateless"],
                           extra=f"judge:\n  model: claude-test-judge\n  base_url: {base_url}\n")
    suite = project / "cases" / "migration"
    (suite / "_rubric" / "prompts").mkdir(parents=True)
    (suite / "_rubric" / "custom.yaml").write_text(RUBRIC)
    (suite / "_rubric" / "prompts" / "review.md.j2").write_text(REVIEW)
    with (suite / "suite.yaml").open("a") as f:
        f.write("rubric: _rubric/custom.yaml\n")
    return project


def test_custom_rubric_end_to_end(tmp_path: Path, server: FakeAnthropic) -> None:
    project = rubric_project(tmp_path, server.base_url)
    env = {"ANTHROPIC_API_KEY": KEY}
    run(project, env=env)
    grades = json.loads((project / ".evalkit/artifacts/naive/migration/jpa-entity/grades.json").read_text())
    judge = grades["judge"]
    assert judge["status"] == "judged" and judge["rubric"] == "custom"
    assert set(judge["scores"]) == {"coverage", "churn"} and set(judge["flags"]) == {"builds"}
    assert judge["is_compilable"] is None  # no such field in this rubric
    assert judge["verdicts"][0]["churn"] in (1, 2)

    report = json.loads((project / "site/r1/report.json").read_text())
    suite = next(s for s in report["suites"] if s["suite"] == "migration") if "suite" in report["suites"][0] \
        else report["suites"][0]
    gold, naive = suite["systems"]["gold"], suite["systems"]["naive"]
    assert gold["judge_coverage"]["value"] == 1.0 and gold["judge_builds"]["value"] == 1.0
    assert gold["judge_churn"]["value"] == 1.0
    assert gold["judge_custom_mean"]["value"] == 1.0  # coverage is the only weighted field
    # naive leaves @Stateless in ejb-stateless: less coverage, more churn (the judge was asked)
    assert naive["judge_coverage"]["value"] < 1.0 and naive["judge_churn"]["value"] > 1.0
    assert "judge_mean" not in gold and "judge_semantic_equivalence" not in gold  # not CodeJudge's fields
    info = report["metric_info"]
    assert info["judge_churn"]["higher_is_better"] is False and info["judge_churn"]["scale"] == "1-10"
    assert info["judge_churn"]["display"] == "Churn"
    assert info["judge_builds"]["aggregate"] == "rate" and info["judge_builds"]["binary"] is True
    assert info["judge_coverage"]["scale"] == "0-1" and info["judge_custom_mean"]["display"] == "Team score"
    assert "lines changed that the migration did not need" in info["judge_churn"]["description"]

    page = (project / "site/r1/index.html").read_text()
    assert "Team score" in page  # the rubric's overall score is a headline column
    pages = "".join(p.read_text() for p in (project / "site/r1").rglob("*.html"))
    for label in ("Coverage", "Builds", "Churn"):
        assert re.search(rf">\s*{label}\s*<", pages), label
    # case pages: the verdict per field, the rubric named, its boolean fields shown
    assert "rubric custom" in pages and re.search(r"builds: <span class=\"badge [^\"]*\">. (yes|no)<", pages)

    # the prompt the judge saw is the rubric's own template, with its fields
    asked = [r["body"] for r in server.requests if r["endpoint"] == "messages"]
    assert asked and all(b["messages"][0]["content"].startswith("Review the migration") for b in asked)
    assert all("`churn` (an integer from 1 to 10, lower is better)" in json.dumps(b["system"]) for b in asked)

    # changing the rubric (its template) regrades; the run asks again
    calls = server.message_calls()
    (project / "cases/migration/_rubric/prompts/review.md.j2").write_text(REVIEW.replace("Review", "Check"))
    executed = run(project, env=env)
    assert any(t.startswith("grade:") for t in executed)
    assert server.message_calls() > calls


def test_invalid_values_get_one_repair(tmp_path: Path, server: FakeAnthropic) -> None:
    project = rubric_project(tmp_path, server.base_url)
    case = project / "cases" / "migration" / "ejb-stateless"
    legacy = case / "legacy" / "InvoiceService.java"
    legacy.write_text(legacy.read_text() + "\n// EJB_FIRST_ANSWER_INVALID\n")
    run(project, env={"ANTHROPIC_API_KEY": KEY})
    judge = json.loads((project / ".evalkit/artifacts/rules/migration/ejb-stateless/grades.json").read_text())["judge"]
    assert judge["status"] == "judged"  # the first answer had churn 11; the repair was valid
    assert judge["verdicts"][0]["churn"] in (1, 2)
    assert judge["usage"]["input_tokens"] > 0


def test_a_value_off_the_scale_after_the_repair_is_a_judge_error(tmp_path: Path, server: FakeAnthropic) -> None:
    from evalkit.graders.migration_judge import Incident, MigrationJudgeInput, judge_migration
    from evalkit.graders.rubric_config import load_rubric
    from evalkit.llm.client import ModelClient
    from evalkit.llm.settings import JudgeSettings

    project = rubric_project(tmp_path, server.base_url)
    rubric = load_rubric("_rubric/custom.yaml", project / "cases" / "migration")
    settings = JudgeSettings(base_url=server.base_url, max_retries=0, timeout_s=5)
    item = MigrationJudgeInput(item_id="x", source_technology="Java EE", target_technology="Quarkus", language="java",
                               legacy_code="class Hello {}\n", incidents=[Incident(rule_id="r")],
                               generated_code="// TeamMarker\nclass Hello { }\n")
    import os

    os.environ["ANTHROPIC_API_KEY"] = KEY
    try:
        client = ModelClient(settings, tmp_path / "cache", sleep=lambda s: None)
        outcome = judge_migration(item, client, settings, rubric)
    finally:
        del os.environ["ANTHROPIC_API_KEY"]
    assert outcome.status == "judge_error" and outcome.rubric == "custom"
    assert "coverage must be a number from 0 to 1" in (outcome.error or "")
    assert server.message_calls() == 2  # the answer and one repair
    assert len(outcome.raw_answers) == 2


def test_bad_rubric_file_is_named_at_its_line(tmp_path: Path, server: FakeAnthropic) -> None:
    project = rubric_project(tmp_path, server.base_url)
    bad = RUBRIC.replace("    scale: {type: integer, min: 1, max: 10}\n", "    scale: {type: integer, min: 1}\n")
    (project / "cases/migration/_rubric/custom.yaml").write_text(bad)
    line = bad.splitlines().index("    scale: {type: integer, min: 1}") + 1
    proc = evalkit_here(project, "check", env={"ANTHROPIC_API_KEY": KEY}, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert f"cases/migration/_rubric/custom.yaml:{line}: fields.2.scale.integer.max: required key is missing" in out
    assert "Traceback" not in out
    # a run treats it like any broken suite.yaml: the suite's cases are recorded as broken, with the same message
    proc = evalkit(project, "run", env={"ANTHROPIC_API_KEY": KEY}, check=False)
    out = proc.stdout + proc.stderr
    assert f"_rubric/custom.yaml:{line}" in out and "Traceback" not in out, out
    assert server.message_calls() == 0
    for path in (project / ".evalkit/artifacts").rglob("grades.json"):
        grades = json.loads(path.read_text())
        assert grades["status"] == "error" and grades["judge"] is None and "broken suite.yaml" in grades["reason"]


def test_judge_config_names_a_rubric(tmp_path: Path, server: FakeAnthropic) -> None:
    """judge.rubric in evalkit.yaml (path relative to the config); unknown names are refused at their line."""
    project = make_project(tmp_path / "p", cases=["jpa-entity"],
                           extra=f"judge:\n  base_url: {server.base_url}\n  rubric: nosuch\n")
    proc = evalkit_here(project, "check", check=False)
    assert proc.returncode == 2 and re.search(r"evalkit\.yaml:\d+: judge\.rubric: unknown rubric 'nosuch'",
                                              proc.stdout + proc.stderr), proc.stdout + proc.stderr
    (project / "r").mkdir()
    (project / "r/custom.yaml").write_text(RUBRIC.replace("prompts/review.md.j2", "review.md.j2"))
    (project / "r/review.md.j2").write_text(REVIEW)
    config = project / "evalkit.yaml"
    config.write_text(config.read_text().replace("rubric: nosuch", "rubric: r/custom.yaml"))
    run(project, env={"ANTHROPIC_API_KEY": KEY})
    judge = json.loads((project / ".evalkit/artifacts/gold/migration/jpa-entity/grades.json").read_text())["judge"]
    assert judge["rubric"] == "custom" and judge["scores"]["coverage"] == 1.0
