"""prompt_text_of: the prompt text evalkit estimates tokens from (and the fake Messages server counts)."""

from __future__ import annotations

from evalkit.llm.calls import LLMRequest, prompt_text_of, system_blocks


def test_system_as_string_or_blocks_then_messages_in_order() -> None:
    messages = [{"role": "user", "content": "question?"},
                {"role": "assistant", "content": [{"type": "text", "text": " partial"},
                                                  {"type": "image", "source": {"data": "..."}}, "not a block"]}]
    blocks = system_blocks("Rules.", "More.")
    assert prompt_text_of(blocks, messages) == "Rules.More.question? partial"
    assert prompt_text_of("Rules.More.", messages) == prompt_text_of(blocks, messages)
    assert prompt_text_of(None, []) == ""
    request = LLMRequest(model="m", system=blocks, messages=messages, max_tokens=10)
    assert request.prompt_text() == "Rules.More.question? partial"
