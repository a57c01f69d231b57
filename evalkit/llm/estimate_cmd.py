"""`evalkit estimate`: before spending, how many judge calls are uncached and what they will cost."""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from evalkit.cli import _config_arg, command


@command("estimate", "count uncached judge calls and their cost per system and suite (no call is paid)",
         _config_arg)
def cmd_estimate(args: argparse.Namespace) -> int:
    from evalkit.artifacts import OutputArtifact, artifact_path
    from evalkit.graders.judge import migration_requests
    from evalkit.graders.judging import migration_input
    from evalkit.llm.client import ModelClient
    from evalkit.project import load
    from evalkit.stages.grade import main_file
    from evalkit.systems.base import participating

    loaded = load(args.config)
    cfg = loaded.config
    settings = cfg.judge.with_env()
    client = ModelClient(settings, cfg.work_path / "cache")
    groups: dict[tuple[str, str], list] = defaultdict(list)
    seen: set[str] = set()  # identical requests share one cached answer: count them once
    missing = 0
    for system, case in participating(cfg, loaded.project):
        if case.kind != "migration" or not case.ok:
            continue
        path = artifact_path(cfg.work_path, "generate", system.name, case.suite, case.id)
        if not path.exists():
            missing += 1
            continue
        output = OutputArtifact.model_validate_json(path.read_bytes())
        if output.status != "ok":
            continue
        for request in migration_requests(migration_input(case, output.first, main_file(case)), settings):
            key = client.key(request)
            if key not in seen:
                seen.add(key)
                groups[(system.name, case.suite)].append(request)
    total_calls = total_cost = 0.0
    total_input = total_output = 0
    print(f"judge model {settings.model}; prices per million tokens from the config's price table")
    for (system, suite), requests in sorted(groups.items()):
        est = client.estimate(requests)
        total_calls += est.uncached_calls
        total_cost += est.cost_usd
        total_input += est.input_tokens
        total_output += est.output_tokens
        print(f"{system:24} {suite:12} calls {est.calls:4}  uncached {est.uncached_calls:4}  "
              f"input tokens {est.input_tokens:8}{' (estimated)' if est.tokens_estimated else ''}  "
              f"output tokens {est.output_tokens:7} ({est.output_basis})  ${est.cost_usd:.4f}")
    if missing:
        print(f"{missing} (system, case) outputs not generated yet: run `evalkit run generate` first to include them")
    print(json.dumps({"uncached_calls": int(total_calls), "input_tokens": total_input,
                      "output_tokens": total_output, "cost_usd": round(total_cost, 6)}))
    return 0
