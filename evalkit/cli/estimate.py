"""`evalkit estimate`: before spending, every model call the next run would make and its cost.

The calls come from ``evalkit.llm.plan``: ``anthropic`` systems under test (generate), the
migration judge, generation rubrics and ragas' metrics (grade), each ``samples`` times. Identical
requests share one cached answer and are counted once; cached ones are free. Input tokens come
from the count-tokens endpoint (a character estimate without a key or when it fails); output
tokens are each request's ``max_tokens`` (an upper bound). Grade calls are priced as a Message
Batch (half price) only when ``judge.mode: batch``, which the run then uses; generate calls and
repair requests always go one by one. Then the sandbox images the run needs with Docker's sizes, and for
SWE-bench cases whose tree is in SWE-bench's images the image plan (evalkit.swebench.image_plan: how many
images, how many GB, where the figure comes from). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from evalkit.artifacts import marked_for_retry
from evalkit.cli import command, config_arg
from evalkit.kind_registry import kind
from evalkit.llm.pricing import unpriced_models
from evalkit.models import Model
from evalkit.llm.keys import env_names
from evalkit.llm.pricing import Usage
from evalkit.llm.pricing import cost_usd
from evalkit.llm.pricing import price_for
from evalkit.llm.settings import configured
from evalkit.project import load
from evalkit.lazy_modules import later

if TYPE_CHECKING:
    from evalkit.llm.plan import Plan
    from evalkit.project import Loaded

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.llm import cache as cache_code
    from evalkit.llm import client as client_code
    from evalkit.stages import health as health_code
    from evalkit.llm import providers as providers_code
    from evalkit import run_plan as run_plan_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    cache_code = later("evalkit.llm.cache")
    client_code = later("evalkit.llm.client")
    health_code = later("evalkit.stages.health")
    providers_code = later("evalkit.llm.providers")
    run_plan_code = later("evalkit.run_plan")


class EstimateLine(Model):
    """The calls of one (stage, asker, system, suite) group."""

    stage: str
    """generate or grade."""
    asker: str
    """anthropic system, migration judge, rubric or ragas."""
    system: str
    """System under test."""
    suite: str
    """Suite."""
    calls: int = 0
    """Distinct requests (duplicates counted once, in the first group that asks)."""
    uncached_calls: int = 0
    """Requests that would be sent (not in the response cache)."""
    estimated_calls: int = 0
    """Uncached requests standing in for ones not known yet (answer not generated yet)."""
    input_tokens: int = 0
    """Input tokens of the uncached requests."""
    output_tokens: int = 0
    """Output tokens assumed for them (max_tokens each: an upper bound)."""
    tokens_estimated: bool = False
    """Some input count is characters / 3.5 rather than the count-tokens endpoint's."""
    batch: bool = False
    """Priced as a Message Batch (half price)."""
    cost_usd: float = 0.0
    """Estimated USD cost of the uncached requests."""


def estimate_plan(plan: Plan, cache: cache_code.ResponseCache, counter: client_code.ModelClient | None,
                  batch_grade: bool) -> list[EstimateLine]:
    """Price ``plan``'s calls: one line per group, duplicates counted once."""

    lines: dict[tuple[str, str, str, str], EstimateLine] = {}
    seen: set[str] = set()
    for call in plan.calls:
        group = (call.stage, call.asker, call.system, call.suite)
        line = lines.get(group)
        if line is None:
            line = lines[group] = EstimateLine(stage=call.stage, asker=call.asker, system=call.system,
                                               suite=call.suite, batch=batch_grade and call.stage == "grade")
        key = cache.key(call.request, providers_code.cache_scope(call.settings))
        if key in seen:
            continue
        seen.add(key)
        line.calls += 1
        if call.settings.use_cache and cache.get(key) is not None:
            continue
        line.uncached_calls += 1
        line.estimated_calls += 0 if call.exact else 1
        if counter is not None:
            counted = counter.count_tokens(call.request)
            tokens, rough = counted.input_tokens, counted.estimated
        else:
            tokens, rough = client_code.estimate_tokens(call.request), True
        line.tokens_estimated = line.tokens_estimated or rough
        line.input_tokens += tokens
        line.output_tokens += call.request.max_tokens
        usage = Usage(input_tokens=tokens, output_tokens=call.request.max_tokens)
        line.cost_usd += cost_usd(usage, price_for(call.request.model, call.settings.prices), batch=line.batch)
    return [lines[k] for k in sorted(lines)]


def ablation_containers(loaded: Loaded) -> tuple[int, int]:
    """(all, not run yet) sandbox runs of case health's ablations (evalkit.stages.health) over the project's
    cases whose kind checks ablations with its tests; a case with a health file has run them, unless the file is
    marked for retry (an infrastructure error: the next run checks them again)."""

    cfg = loaded.config
    total = pending = 0
    for case in loaded.project.cases:
        kd = kind(case.kind)
        if not case.ok or kd.ablations_checked_by != "tests" or not kd.execution.validated:
            continue
        n = len(kd.ablations(case)[:cfg.validation.ablations])
        total += n
        path = health_code.health_path(cfg.work_path, case)
        pending += 0 if path.exists() and not marked_for_retry(path) else n
    return total, pending


SHOWN_IMAGES = 12
"""Images listed one per line (the JSON line holds them all)."""


def image_lines(loaded: Loaded) -> dict[str, Any]:
    """Print the sandbox images the run needs with their sizes, and the SWE-bench image plan; their JSON."""
    from evalkit.run_images import image_rows, local_sizes, needed_images, swebench_rows  # deferred: this command's code, loaded when it runs (`evalkit run` starts small)

    cfg, cases = loaded.config, loaded.project.cases
    needed = needed_images(cfg, cases)
    sizes = local_sizes(needed) if needed else None
    rows = image_rows(needed, sizes or {})
    gb = 1e9
    if rows:
        where = "Docker's sizes on this host" if sizes is not None else "no Docker daemon answered: sizes unknown"
        print(f"sandbox images: {len(rows)} ({where})")
    for row in rows[:SHOWN_IMAGES]:
        size = f"{row.size_bytes / gb:.2f} GB" if row.size_bytes is not None else \
            ("not on this host" if sizes is not None else "size unknown")
        print(f"  {row.name:60} cases {row.cases:5}  {size}")
    if len(rows) > SHOWN_IMAGES:
        rest = rows[SHOWN_IMAGES:]
        print(f"  ... and {len(rest)} more ({sum(1 for r in rest if r.size_bytes is not None)} on this host; "
              "every one in the JSON line)")
    if sizes is not None and rows:
        print(f"  on this host: {sum(1 for r in rows if r.size_bytes is not None)} of {len(rows)}, "
              f"{sum(r.size_bytes or 0 for r in rows) / gb:.2f} GB (all layers, shared ones counted in each)")
    out: dict[str, Any] = {"images": [r.model_dump() for r in rows],
                           "image_bytes_local": sum(r.size_bytes or 0 for r in rows), "swebench_images": None}
    sw = swebench_rows(cfg, cases)
    if not sw:
        return out
    from evalkit.swebench.harness import HarnessUnavailable  # deferred: this command's code, loaded when it runs (`evalkit run` starts small)
    from evalkit.swebench.image_plan import image_plan  # deferred: this command's code, loaded when it runs (`evalkit run` starts small)

    try:
        plan = image_plan(sw, sizes or {}, cfg.sandbox.swebench_namespace.strip().strip("/") or None)
    except HarnessUnavailable as exc:
        print(f"SWE-bench image plan: not made ({exc})")
        return out
    envs = plan.environments
    print(f"SWE-bench image plan: {len(plan.images)} instance image(s) (sweb.eval.*, one per instance: the pinned "
          f"swebench 5.x builds no separate base or environment images), {plan.harness_named} named as the harness "
          f"names them; {len(envs)} repo+version group(s) (the 4.x harness's environment images), largest "
          + ", ".join(f"{repo} {ver or '?'} x{n}" for (repo, ver), n in envs.most_common(3)))
    print(f"  on this host: {len(plan.present)} image(s), {plan.local_bytes / gb:.1f} GB (Docker's sizes); "
          f"to pull: {len(plan.images) - len(plan.present)} image(s), about {plan.missing_bytes / gb:.1f} GB at "
          f"{plan.per_image_bytes / gb:.3f} GB each ({plan.size_source})")
    out["swebench_images"] = plan.as_json()
    return out


@command("estimate", "count every model call the next run would make (systems under test, judges, rubrics, "
         "ragas) and its cost, and the sandbox images it needs with their sizes; no call is paid", config_arg)
def cmd_estimate(args: argparse.Namespace) -> int:
    loaded = load(args.config)
    cfg = loaded.config
    settings = cfg.judge.with_env()
    counter = None
    if configured(settings):

        counter = client_code.ModelClient(settings, cfg.work_path / "cache")
    plan = run_plan_code.plan_run(loaded, selected=run_plan_code.key_selection())
    batch = settings.mode == "batch"
    lines = estimate_plan(plan, cache_code.ResponseCache(cfg.work_path / "cache"), counter, batch)
    print(f"judge model {settings.model} ({'Message Batches, half price' if batch else 'one request per call'});"
          " prices per million tokens from the config's price table; output tokens at max_tokens (an upper bound)")
    totals: dict[str, Any] = defaultdict(float)
    by_stage: dict[str, int] = defaultdict(int)
    by_asker: dict[str, int] = defaultdict(int)
    for line in lines:
        for name in ("calls", "uncached_calls", "estimated_calls", "input_tokens", "output_tokens", "cost_usd"):
            totals[name] += getattr(line, name)
        by_stage[line.stage] += line.uncached_calls
        by_asker[line.asker] += line.uncached_calls
        guessed = f" ({line.estimated_calls} for answers not generated yet)" if line.estimated_calls else ""
        print(f"{line.stage:8} {line.asker:16} {line.system:24} {line.suite:12} calls {line.calls:4}  "
              f"uncached {line.uncached_calls:4}{guessed}  input tokens {line.input_tokens:8}"
              f"{' (estimated)' if line.tokens_estimated else ''}  output tokens {line.output_tokens:7}"
              f"{'  batch' if line.batch else ''}  ${line.cost_usd:.4f}")
    if plan.unknown_outputs:
        print(f"{plan.unknown_outputs} (system, case) answers not generated yet: their grading is counted with a "
              "stand-in answer (identical answers would share a verdict); `evalkit run generate` first for an "
              "exact count")
    if counter is None:

        print(f"{env_names(settings.provider)[1]} is not set: the run would make none of these calls "
              "(judges not configured)")
    print("repair requests (one after an unusable answer) are not known in advance and not counted")
    unknown_cost = unpriced_models()
    if unknown_cost:
        print(f"cost unknown for {', '.join(unknown_cost)} (not in the price table): the total leaves them out")
    containers, pending = ablation_containers(loaded)
    print(f"case health: {containers} ablation container(s) ({pending} not run yet; validation.ablations "
          f"{cfg.validation.ablations} per case, once per case, not per system)")
    images = image_lines(loaded)
    print(json.dumps({**images, "ablation_containers": containers, "ablation_containers_pending": pending,
                      "cost_unknown_models": unknown_cost, "uncached_calls": int(totals["uncached_calls"]), "calls": int(totals["calls"]),
                      "estimated_calls": int(totals["estimated_calls"]),
                      "by_stage": dict(sorted(by_stage.items())), "by_asker": dict(sorted(by_asker.items())),
                      "batch": batch,
                      "input_tokens": int(totals["input_tokens"]), "output_tokens": int(totals["output_tokens"]),
                      "cost_usd": round(totals["cost_usd"], 6)}))
    return 0
