"""Finding the JSON answer in a model's text."""

from __future__ import annotations

import pytest

from evalkit.llm.structured import AnswerError, last_json_object, reasoning_before


def test_json_inside_a_fence_after_reasoning_with_braces() -> None:
    text = 'Step 1: `void f() { return; }` keeps {"not": "this"} in mind.\n```json\n{"a": {"b": 1}}\n```\n'
    obj, start = last_json_object(text)
    assert obj == {"a": {"b": 1}}
    assert reasoning_before(text, start).endswith("in mind.")


def test_the_last_object_wins() -> None:
    assert last_json_object('{"x": 1} then {"x": 2}')[0] == {"x": 2}


def test_no_object_is_an_answer_error() -> None:
    with pytest.raises(AnswerError, match="no JSON object"):
        last_json_object("I think it scores four out of five. {broken")
