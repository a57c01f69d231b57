"""`anthropic`: a prompt template sent to a model through the shared, cached, retrying client.

The prompt (a Jinja template relative to the config file, else the packaged one of that name) is
rendered with the case's inputs; the answer's fenced code block becomes the main file of a
migration case, and ```path blocks become the files of a generation case. The API key comes from
ANTHROPIC_API_KEY only; without it the sample is an infra_error (retried on the next run).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from evalkit.artifacts import Sample, Usage
from evalkit.cases import Case
from evalkit.llm.prompts import PROMPTS_DIR, environment
from evalkit.systems.base import RunContext, adapter

FENCE = re.compile(r"```([^\n`]*)\n(.*?)```", re.DOTALL)
_lock = threading.Lock()
_clients: dict[str, Any] = {}


def _client(system: Any, ctx: RunContext) -> Any:
    from evalkit.llm.client import Budget, ModelClient
    from evalkit.llm.settings import JudgeSettings

    base = ctx.judge if ctx.judge is not None else JudgeSettings()
    if isinstance(base, dict):
        base = JudgeSettings.model_validate(base)
    settings = base.model_copy(update={"model": system.model, "max_tokens": system.max_tokens, "samples": 1,
                                       "budget_usd": None, "mode": "sync"})
    key = f"{ctx.work}:{settings.model_dump_json()}"
    with _lock:
        if key not in _clients:
            _clients[key] = ModelClient(settings, ctx.work / "cache", budget=Budget(None))
        return _clients[key]


def render_prompt(system: Any, case: Case, ctx: RunContext) -> str:
    path = Path(system.prompt)
    path = path if path.is_absolute() else ctx.root / path
    if not path.exists():
        path = PROMPTS_DIR / Path(system.prompt).name
    inputs = dict(case.inputs)
    context: dict[str, Any] = {"language": case.language, "case_id": case.id, **inputs}
    if case.kind == "migration":
        solved = None
        if case.ref_path("inputs.solved_example.before_file"):
            solved = (f"Before:\n{case.read('inputs.solved_example.before_file')}\n"
                      f"After:\n{case.read('inputs.solved_example.after_file')}")
        context.update(legacy_code=case.read("inputs.legacy_file") or "", solved_example=solved)
    files = [(Path(p).relative_to(case.dir).as_posix() if Path(p).is_relative_to(case.dir) else Path(p).name,
              Path(p).read_text(encoding="utf-8", errors="replace"))
             for k, p in sorted(case.refs.items()) if k.startswith("inputs.") and Path(p).is_file()]
    context.setdefault("instructions", "")
    context.setdefault("output_path", None)
    context["files"] = files
    return environment(str(path.parent)).get_template(path.name).render(**context).strip() + "\n"


def parse_answer(text: str, case: Case) -> dict[str, str]:
    blocks = FENCE.findall(text)
    if case.kind == "migration":
        if not blocks:
            return {}
        return {case.inputs["file_path"]: max(blocks, key=lambda b: len(b[1]))[1]}
    files: dict[str, str] = {}
    for info, body in blocks:
        path = next((t for t in info.split() if "/" in t or "." in t), None)
        if path is None and len(blocks) == 1 and case.inputs.get("output_path"):
            path = case.inputs["output_path"]
        if path:
            files[path] = body
    return files


def request_for(system: Any, case: Case, sample_index: int, ctx: RunContext) -> Any:
    """The one ``LLMRequest`` of sample ``sample_index`` (``evalkit estimate`` counts the same)."""
    from evalkit.llm.calls import LLMRequest

    return LLMRequest(model=system.model, messages=[{"role": "user", "content": render_prompt(system, case, ctx)}],
                      max_tokens=system.max_tokens, sample_index=sample_index, item_id=f"{system.name}/{case.key}")


@adapter("anthropic", {"migration", "generation"})
def run_anthropic(system: Any, case: Case, sample_index: int, ctx: RunContext) -> Sample:
    from evalkit.llm.calls import LLMError
    from evalkit.llm.settings import api_key

    if api_key() is None:
        return Sample(status="infra_error", reason="ANTHROPIC_API_KEY not set")
    request = request_for(system, case, sample_index, ctx)
    try:
        response = _client(system, ctx).call(request)
    except LLMError as exc:
        return Sample(status="infra_error", reason=f"model call failed: {exc}")
    u = response.usage
    usage = Usage(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                  cache_read_tokens=u.cache_read_input_tokens, cache_write_tokens=u.cache_creation_input_tokens,
                  cost_usd=0.0 if response.cached else response.cost_usd)
    files = parse_answer(response.text, case)
    if not files:
        return Sample(status="error", reason="the answer has no fenced code block", text=response.text, usage=usage)
    return Sample(files=files, text=response.text, usage=usage, steps=1)
