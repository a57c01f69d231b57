"""Asking a model for a JSON answer: find it, validate it, repair once, keep the raw text.

The discipline shared by every model-graded step: the answer's last JSON object is validated
strictly; on a bad answer one repair request sends the answer back with the validation error;
if that fails too, the caller records an error with the raw answers — never a default score — and
both answers are dropped from the response cache, so a later ask is a new question to the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the SDK takes a second to import: only when a client exists
    from evalkit.llm.client import ModelClient

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from evalkit.llm.calls import LLMError, LLMRequest, LLMResponse
from evalkit.llm.pricing import Usage

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

REPAIR_INSTRUCTION = (
    "Your previous answer could not be used: {error}\n"
    "Reply again with only the corrected JSON object, in the format the instructions require."
)


class AnswerError(ValueError):
    """The model's answer is not the JSON the step requires (the message goes into the repair request)."""


def last_json_object(text: str) -> tuple[dict[str, Any], int]:
    """The last top-level JSON object in ``text`` (inside a ```json fence or after reasoning) and
    where it starts. Raise ``AnswerError`` when there is none."""
    decoder = json.JSONDecoder()
    found: tuple[dict[str, Any], int] | None = None
    i = text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            found = (obj, i)
        i = text.find("{", end)
    if found is None:
        raise AnswerError("no JSON object found in the answer")
    return found


def reasoning_before(text: str, start: int) -> str:
    """The free text before the JSON answer (without a dangling ```json fence)."""
    head = text[:start].rstrip()
    for fence in ("```json", "```JSON", "```"):
        if head.endswith(fence):
            head = head[: -len(fence)].rstrip()
            break
    return head


def validation_message(exc: ValidationError) -> str:
    """A pydantic error as one line the model can act on ('field: problem; ...')."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'answer'}: {err['msg']}" for err in exc.errors()
    )


def parse_model(model: type[M], text: str, *, ignore_unknown: bool = True) -> tuple[M, str]:
    """Validate the answer's last JSON object as ``model`` and return it with the reasoning before it.

    Keys the model does not know are dropped when ``ignore_unknown`` (a judge adding a note of its
    own is not a wrong answer); missing or invalid values raise ``AnswerError``.
    """
    obj, start = last_json_object(text)
    if ignore_unknown:
        obj = {key: value for key, value in obj.items() if key in model.model_fields}
    try:
        value = model.model_validate(obj)
    except ValidationError as exc:
        raise AnswerError(validation_message(exc)) from None
    return value, reasoning_before(text, start)


@dataclass
class StructuredAnswer(Generic[T]):
    """Outcome of one structured question (with at most one repair)."""

    value: T | None
    """The validated answer, or None when even the repaired answer was unusable."""
    reasoning: str = ""
    """Free text before the accepted JSON."""
    responses: list[LLMResponse] = field(default_factory=list)
    """Every response received (first answer, then the repair if any)."""
    error: str | None = None
    """The last validation error when ``value`` is None."""

    @property
    def raw(self) -> list[str]:
        return [response.text for response in self.responses]


def ask_structured(
    client: ModelClient, request: LLMRequest, parse: Callable[[str], tuple[T, str]]
) -> StructuredAnswer[T]:
    """Ask, validate with ``parse`` (raising ``AnswerError``), and on failure repair once.

    ``LLMError`` (including ``BudgetExceeded``) propagates: it is infrastructure, not an answer.
    """
    first = client.call(request)
    try:
        value, reasoning = parse(first.text)
        return StructuredAnswer(value=value, reasoning=reasoning, responses=[first])
    except AnswerError as exc:
        error = str(exc)
    second = client.call(repair_request(request, first.text, error))
    try:
        value, reasoning = parse(second.text)
        return StructuredAnswer(value=value, reasoning=reasoning, responses=[first, second])
    except AnswerError as exc:
        # judge_error: the raw answers go to the outcome, never into the cache as something to replay
        # as an answer; they are set aside (paid for, kept: a rerun of this grading gets them back
        # instead of paying again) until `evalkit run --retry-judge-errors` drops them and asks anew.
        for response in (first, second):
            client.cache.set_aside(response.request_key)
        return StructuredAnswer(value=None, responses=[first, second], error=str(exc))


def repair_request(request: LLMRequest, answer: str, error: str) -> LLMRequest:
    """The one repair request after ``answer`` to ``request`` failed validation with ``error``."""
    return request.model_copy(
        update={
            "messages": [
                *request.messages,
                {"role": "assistant", "content": answer or "(empty answer)"},
                {"role": "user", "content": REPAIR_INSTRUCTION.format(error=error)},
            ],
            "item_id": f"{request.item_id}#repair" if request.item_id is not None else None,
        }
    )


@dataclass
class Sampled(Generic[T]):
    """Every sample of one structured question: accepted answers, failures, and what they cost."""

    values: list[T] = field(default_factory=list)
    """Accepted answers, in sample order."""
    reasoning: list[str] = field(default_factory=list)
    """Free text before each accepted answer."""
    raw: list[str] = field(default_factory=list)
    """Raw responses of samples that stayed unusable after their repair."""
    errors: list[str] = field(default_factory=list)
    """Why those samples were unusable."""
    usage: Any = None
    """Tokens of every response (evalkit.llm.pricing.Usage)."""
    cost_usd: float = 0.0
    """Cost of every response."""
    request_keys: list[str] = field(default_factory=list)
    """Cache keys of every response."""
    stopped: Exception | None = None
    """The LLMError (or BudgetExceeded) that ended the sampling early, if any."""
    notices: list[str] = field(default_factory=list)
    """Deprecation notices the provider sent with any response (evalkit.llm.deprecation)."""
    models: list[str] = field(default_factory=list)
    """Models that gave the responses (as the API names them), in order of first answer."""
    fallback: bool = False
    """True when some response came from the fallback model: the outcome is the fallback judge's."""

    @property
    def model(self) -> str | None:
        """The model that answered (several joined with '+'), or None before any answer."""
        return "+".join(self.models) or None

    def named(self) -> dict[str, Any]:
        """The outcome fields naming who answered: ``model`` (when some response came) and ``fallback``."""
        return {"fallback": self.fallback, **({"model": self.model} if self.models else {})}


def ask_samples(client: ModelClient, requests: list[LLMRequest], parse: Callable[[str], tuple[T, str]]) -> Sampled[T]:
    """Ask each request (one per sample) with `ask_structured`; an API error or the budget stops early."""

    out: Sampled[T] = Sampled(usage=Usage())
    try:
        for request in requests:
            answer = ask_structured(client, request, parse)
            for response in answer.responses:
                out.usage, out.cost_usd = out.usage + response.usage, out.cost_usd + response.cost_usd
                out.request_keys.append(response.request_key)
                out.notices.extend(n for n in response.notices if n not in out.notices)
                if response.model not in out.models:
                    out.models.append(response.model)
                out.fallback = out.fallback or response.fallback
            if answer.value is None:
                out.raw.extend(answer.raw)
                out.errors.append(f"sample {request.sample_index}: {answer.error}")
            else:
                out.values.append(answer.value)
                out.reasoning.append(answer.reasoning)
    except LLMError as exc:  # BudgetExceeded is an LLMError too
        out.stopped = exc
    return out
