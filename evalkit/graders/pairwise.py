"""The pairwise judge: which of two systems' migrated files is better, for the same case.

Asked in both orders (a's output first, then b's) to measure how often the preferred system changes
with the order alone (evalkit.graders.audit). The answer is strict JSON: ``winner`` is "first",
"second" or "tie", with a reason; an unusable answer gets one repair request (evalkit.llm.structured).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from evalkit.llm.calls import LLMRequest, system_blocks
from evalkit.llm.prompts import render, template_digest
from evalkit.llm.settings import JudgeSettings
from evalkit.llm.structured import ask_structured, parse_model
from evalkit.models import Model

if TYPE_CHECKING:
    from evalkit.graders.migration_judge import MigrationJudgeInput
    from evalkit.llm.client import ModelClient
    from evalkit.llm.structured import StructuredAnswer

SYSTEM_TEMPLATE = "pairwise_judge_system.md.j2"
USER_TEMPLATE = "pairwise_judge.md.j2"
Winner = Literal["first", "second", "tie"]


class PairwiseVerdict(Model):
    """The pairwise judge's answer, strictly validated."""

    winner: Winner
    """Which output is the better migration: the one shown first, second, or neither (tie)."""
    reason: str = ""
    """The judge's reason in a sentence or two."""


def parse_pairwise(text: str) -> tuple[PairwiseVerdict, str]:
    """The verdict in ``text`` (its last JSON object) and the reasoning before it."""
    return parse_model(PairwiseVerdict, text)


def prompt_version() -> str:
    """Digest of the pairwise judge's templates."""
    return template_digest(SYSTEM_TEMPLATE, USER_TEMPLATE)


def pairwise_request(item: MigrationJudgeInput, first: str, second: str, settings: JudgeSettings,
                     item_id: str | None = None) -> LLMRequest:
    """The request comparing ``first`` and ``second`` (shown in that order) as migrations of ``item``'s legacy file."""
    settings = settings.with_env()
    user = render(USER_TEMPLATE, source_technology=item.source_technology, target_technology=item.target_technology,
                  language=item.language, legacy_code=item.legacy_code, incidents=item.incidents,
                  first=first, second=second)
    return LLMRequest(model=settings.model, system=system_blocks(render(SYSTEM_TEMPLATE)),
                      messages=[{"role": "user", "content": user}], max_tokens=settings.max_tokens,
                      item_id=item_id or f"pairwise:{item.item_id}")


def preferred(winner: Winner | None, first: str, second: str) -> str | None:
    """The system a ``winner`` answer prefers ('tie' for a tie; None without an answer)."""
    if winner is None:
        return None
    return {"first": first, "second": second, "tie": "tie"}[winner]


def ask_pairwise(client: ModelClient, request: LLMRequest) -> StructuredAnswer[PairwiseVerdict]:
    """Ask one pairwise request (one repair on an unusable answer); LLMError propagates."""
    return ask_structured(client, request, parse_pairwise)
