"""`anthropic` (and `openai`, evalkit.systems.openai_adapter): a prompt template sent to a model through
the shared, cached, retrying client.

The prompt (a Jinja template relative to the config file, else the packaged one of that name) is
rendered with the case's inputs; the answer's fenced code block becomes the main file of a
migration case, and ```path blocks become the files of a generation case. The provider is the
adapter's name; its keys come from the environment only (ANTHROPIC_API_KEY[S], OPENAI_API_KEY[S]);
without one the sample is an infra_error (retried on the next run). An answer of the system's
``fallback`` model is kept with that model's name (``Sample.model``, ``Sample.fallback``).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from evalkit.artifacts import Sample, Usage
from evalkit.cases import Case
from evalkit.kind_registry import kind
from evalkit.llm.calls import LLMError, LLMRequest
from evalkit.llm.client import Budget, ModelClient
from evalkit.llm.keys import env_names
from evalkit.llm.prompts import PROMPTS_DIR, environment
from evalkit.llm.settings import JudgeSettings, configured
from evalkit.systems.base import RunContext, adapter

if TYPE_CHECKING:
    from evalkit.config import AnthropicSystem, System

FENCE = re.compile(r"```([^\n`]*)\n(.*?)```", re.DOTALL)
_lock = threading.Lock()
_clients: dict[str, ModelClient] = {}


def settings_for(system: AnthropicSystem, judge: JudgeSettings | dict[str, Any] | None) -> JudgeSettings:
    """The client settings of a model system: the judge's limits, retries, prices and rate limits, with the
    system's provider (its adapter's name), model, base URL (else the judge's when it uses the same provider)
    and fallback; no budget, no samples, no batch."""

    base = judge if judge is not None else JudgeSettings()
    if isinstance(base, dict):
        base = JudgeSettings.model_validate(base)
    provider = system.adapter
    base_url = getattr(system, "base_url", None) or (base.base_url if base.provider == provider else None)
    return base.model_copy(update={"provider": provider, "model": system.model, "max_tokens": system.max_tokens,
                                   "samples": 1, "budget_usd": None, "mode": "sync", "base_url": base_url,
                                   "fallback": getattr(system, "fallback", None),
                                   "api_key": getattr(system, "api_key", "env")})


def _client(system: AnthropicSystem, ctx: RunContext) -> ModelClient:
    settings = settings_for(system, ctx.judge)
    key = f"{ctx.work}:{settings.model_dump_json()}"
    with _lock:
        if key not in _clients:
            _clients[key] = ModelClient(settings, ctx.work / "cache", budget=Budget(None))
        return _clients[key]


def render_prompt(system: AnthropicSystem, case: Case, ctx: RunContext) -> str:
    path = Path(system.prompt)
    path = path if path.is_absolute() else ctx.root / path
    if not path.exists():
        path = PROMPTS_DIR / Path(system.prompt).name
    context: dict[str, Any] = {"language": case.language, "case_id": case.id, **case.inputs.model_dump(mode="json")}

    context.update(kind(case.kind).prompt_context(case))  # e.g. migration: the legacy code, a solved example
    files = [(Path(p).relative_to(case.dir).as_posix() if Path(p).is_relative_to(case.dir) else Path(p).name,
              Path(p).read_text(encoding="utf-8", errors="replace"))
             for k, p in sorted(case.refs.items()) if k.startswith("inputs.") and Path(p).is_file()]
    context.setdefault("instructions", "")
    context.setdefault("output_path", None)
    context["files"] = files
    return environment(str(path.parent)).get_template(path.name).render(**context).strip() + "\n"


def parse_answer(text: str, case: Case) -> dict[str, str]:
    blocks = FENCE.findall(text)
    own = kind(case.kind).parse_answer(case, blocks)  # e.g. migration: the longest block is the case's file
    if own is not None:
        return own
    files: dict[str, str] = {}
    for info, body in blocks:
        path = next((t for t in info.split() if "/" in t or "." in t), None)
        if path is None and len(blocks) == 1 and (output_path := getattr(case.inputs, "output_path", None)):
            path = output_path
        if path:
            files[path] = body
    return files


def request_for(system: AnthropicSystem, case: Case, sample_index: int, ctx: RunContext) -> LLMRequest:
    """The one ``LLMRequest`` of sample ``sample_index`` (``evalkit estimate`` counts the same)."""

    return LLMRequest(model=system.model, messages=[{"role": "user", "content": render_prompt(system, case, ctx)}],
                      max_tokens=system.max_tokens, sample_index=sample_index, item_id=f"{system.name}/{case.key}")


def run_model(system: AnthropicSystem, case: Case, sample_index: int, ctx: RunContext) -> Sample:
    """One sample of a model system (any provider): the prompt sent, the answer's files parsed."""

    if not configured(settings_for(system, ctx.judge)):
        return Sample(status="infra_error", reason=f"{env_names(system.adapter)[1]} not set")
    request = request_for(system, case, sample_index, ctx)
    try:
        response = _client(system, ctx).call(request)
    except LLMError as exc:
        return Sample(status="infra_error", reason=f"model call failed: {exc}")
    u = response.usage
    usage = Usage(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                  cache_read_tokens=u.cache_read_tokens, cache_write_tokens=u.cache_write_tokens,
                  cost_usd=0.0 if response.cached else response.cost_usd)
    named = {"model": response.model, "fallback": True} if response.fallback else {}
    files = parse_answer(response.text, case)
    if not files:
        return Sample(status="error", reason="the answer has no fenced code block", text=response.text, usage=usage,
                      **named)
    return Sample(files=files, text=response.text, usage=usage, steps=1, **named)


def model_system(system: System) -> AnthropicSystem:
    """``system`` as the model system it is: its ``adapter: anthropic|openai`` tag made it an AnthropicSystem (or
    its subclass OpenAISystem) when evalkit.yaml was read (evalkit.config.System); nothing is checked here."""
    return cast("AnthropicSystem", system)


def plan_request(system: System, case: Case, sample_index: int, ctx: RunContext,
                 judge: JudgeSettings | dict[str, Any] | None) -> tuple[LLMRequest, JudgeSettings]:
    """The one model call of sample ``sample_index`` and the settings it goes out with (``evalkit estimate``)."""
    return request_for(model_system(system), case, sample_index, ctx), settings_for(model_system(system), judge)


@adapter("anthropic", {"migration", "generation"}, plan=plan_request)
def run_anthropic(system: System, case: Case, sample_index: int, ctx: RunContext) -> Sample:
    return run_model(model_system(system), case, sample_index, ctx)
