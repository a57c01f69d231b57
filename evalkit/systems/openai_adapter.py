"""`openai`: the `anthropic` adapter's prompt, parsing and client, sent to an OpenAI-compatible
Chat Completions endpoint (OpenAI, vLLM, Ollama, gateways; the system's `base_url`).

Everything but the provider is shared with evalkit.systems.anthropic_adapter. The key comes from
OPENAI_API_KEY (or OPENAI_API_KEYS, comma separated) only, never from evalkit.yaml.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit.artifacts import Sample
from evalkit.cases import Case
from evalkit.systems.anthropic_adapter import model_system, plan_request, run_model
from evalkit.systems.base import RunContext, adapter

if TYPE_CHECKING:
    from evalkit.config import System


@adapter("openai", {"migration", "generation"}, plan=plan_request)
def run_openai(system: System, case: Case, sample_index: int, ctx: RunContext) -> Sample:
    return run_model(model_system(system), case, sample_index, ctx)
