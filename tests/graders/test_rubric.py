"""Rubric grading of generation cases against the loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalkit.kinds.generation.judge import Criterion, GeneratedFile, RubricInput, grade_rubric
from evalkit.llm.client import ModelClient
from fake_server import FakeAnthropic, ok
from evalkit.llm.settings import JudgeSettings
from tests.fake_anthropic import fake_anthropic, judge_env  # noqa: F401 - fixtures

CRITERIA = [
    Criterion(id="tests-exist", text="The output contains unit tests.", weight=1),
    Criterion(id="edge-cases", text="Tests cover empty input.", weight=3),
]


def case(n: int = 0) -> RubricInput:
    return RubricInput(item_id=f"claude-prompt/gen-{n}", task="Write tests for parse()",
                       files=[GeneratedFile(path="test_parse.py", content="def test_parse():\n    assert parse('') == []\n")],
                       criteria=CRITERIA)


def answer(**met: bool) -> str:
    entries = [{"id": c.id, "met": met.get(c.id.replace("-", "_"), True), "reason": "seen"} for c in CRITERIA]
    return "Looked at both.\n" + json.dumps({"criteria": entries})


@pytest.fixture
def client_settings(fake_anthropic: FakeAnthropic, judge_env: str, tmp_path: Path):  # noqa: F811
    def make(**overrides: object) -> tuple[ModelClient, JudgeSettings]:
        settings = JudgeSettings(**{"base_url": fake_anthropic.base_url, "max_retries": 0, **overrides})
        return ModelClient(settings, tmp_path / "cache", sleep=lambda s: None), settings

    return make


def test_score_is_the_weighted_fraction_met(fake_anthropic: FakeAnthropic, client_settings) -> None:  # noqa: F811
    fake_anthropic.push(ok(answer(edge_cases=False)))
    outcome = grade_rubric(case(), *client_settings())
    assert outcome.status == "judged"
    assert outcome.score == pytest.approx(0.25)
    assert [(r.id, r.met) for r in outcome.results] == [("tests-exist", True), ("edge-cases", False)]
    assert outcome.reasoning == ["Looked at both."]


def test_a_missing_criterion_is_repaired(fake_anthropic: FakeAnthropic, client_settings) -> None:  # noqa: F811
    partial = json.dumps({"criteria": [{"id": "tests-exist", "met": True, "reason": "yes"}]})
    fake_anthropic.push(ok(partial), ok(answer()))
    outcome = grade_rubric(case(), *client_settings())
    assert outcome.status == "judged" and outcome.score == 1.0
    assert "missing criteria: ['edge-cases']" in fake_anthropic.requests[1]["body"]["messages"][2]["content"]


def test_unusable_answers_are_a_judge_error_with_raw_kept(fake_anthropic: FakeAnthropic,
                                                          client_settings) -> None:  # noqa: F811
    wrong = json.dumps({"criteria": [{"id": "tests-exist", "met": "yes"}, {"id": "made-up", "met": True}]})
    fake_anthropic.push(ok(wrong), ok(wrong))
    outcome = grade_rubric(case(), *client_settings())
    assert outcome.status == "judge_error"
    assert outcome.score is None
    assert outcome.raw_answers == [wrong, wrong]


def test_samples_vote_per_criterion_and_flag_disagreement(fake_anthropic: FakeAnthropic,
                                                          client_settings) -> None:  # noqa: F811
    fake_anthropic.push(ok(answer()), ok(answer(edge_cases=False)), ok(answer()))
    outcome = grade_rubric(case(), *client_settings(samples=3))
    assert fake_anthropic.counts["messages"] == 3
    assert outcome.sample_scores == [1.0, 0.25, 1.0]
    assert outcome.score == pytest.approx(0.75)
    edge = outcome.results[1]
    assert edge.met and edge.met_fraction == pytest.approx(2 / 3)
    assert outcome.unstable


def test_no_client_means_not_configured(client_settings) -> None:
    _, settings = client_settings()
    assert grade_rubric(case(), None, settings).status == "not_configured"


def test_criterion_ids_must_be_unique_and_plain() -> None:
    with pytest.raises(ValidationError, match="duplicate"):
        RubricInput(item_id="x", files=[], criteria=[CRITERIA[0], CRITERIA[0]])
    with pytest.raises(ValidationError):
        Criterion(id="has space`", text="t")
