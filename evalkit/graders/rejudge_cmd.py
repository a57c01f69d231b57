"""`evalkit rejudge --judge MODEL`: estimate, then (with --yes) judge a release's outputs again into a side release.

Without ``--yes`` it only prints the estimate (requests and cost, as `evalkit estimate` prices them) and
exits 0: nothing is sent, so CI can run it to see the price. With ``--yes`` it asks the new judge
(cached answers are free, so a second run sends nothing) and writes ``site/<label>/rejudge.json`` and
its page. The last line printed is one JSON object either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import argparse
import json
import os
import sys

from evalkit.cli import config_arg, command
from evalkit.errors import InputError, Problem
from evalkit.llm.settings import MODEL_ENV
from evalkit.llm.settings import configured
from evalkit.project import load
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.llm import cache as cache_code
    from evalkit.llm import client as client_code
    from evalkit.cli import estimate as estimate_code
    from evalkit.graders import rejudge as rejudge_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    cache_code = later("evalkit.llm.cache")
    client_code = later("evalkit.llm.client")
    estimate_code = later("evalkit.cli.estimate")
    rejudge_code = later("evalkit.graders.rejudge")


def _args(p: argparse.ArgumentParser) -> None:
    config_arg(p)
    p.add_argument("--judge", required=True, metavar="MODEL", help="the new judge model id")
    p.add_argument("--release", help="the release whose outputs are judged again (default: the config's release; "
                                     "the work folder must hold its outputs)")
    p.add_argument("--into", metavar="LABEL", help="side release label (default: RELEASE+rejudge-MODEL)")
    p.add_argument("--yes", "-y", action="store_true",
                   help="ask the new judge (without it: print the estimate and exit 0, nothing sent)")


@command("rejudge", "judge a release's outputs again with another judge model into a side release, with the "
         "agreement of old and new judge per field (estimate first; --yes to pay)", _args)
def cmd_rejudge(args: argparse.Namespace) -> int:
    model = args.judge.strip()
    if not model:
        raise InputError(Problem("--judge", None, "expected a model id, got an empty string"))
    if args.release:
        os.environ["EVALKIT_RELEASE"] = args.release
    loaded = load(args.config)
    cfg, project = loaded.config, loaded.project
    release = cfg.release
    label = args.into or rejudge_code.side_label(release, model)
    rejudge_code.check_label(label)
    if label == release or (cfg.site_path / label / "report.json").exists():
        raise InputError(Problem(f"--into {label!r}", None, f"{cfg.site_path / label} holds a release's report; "
                                 "a side release must not overwrite a release: choose another label"))
    rejudge_code.check_release(cfg, project, release)
    os.environ[MODEL_ENV] = model  # every judge call of this process goes to the new model
    cfg_new = rejudge_code.new_config(cfg, model)
    found = rejudge_code.targets(cfg, project)
    plan = rejudge_code.planned_calls(cfg_new, found)
    counter = None
    if configured(cfg_new.judge):

        counter = client_code.ModelClient(cfg_new.judge.with_env(), cfg.work_path / "cache")
    lines = estimate_code.estimate_plan(plan, cache_code.ResponseCache(cfg.work_path / "cache"), counter, False)
    uncached = sum(line.uncached_calls for line in lines)
    cost = sum(line.cost_usd for line in lines)
    tokens_rough = any(line.tokens_estimated for line in lines)
    print(f"evalkit rejudge_code.rejudge: release {release}, {len(found)} judged output(s), new judge {model} -> side release {label}")
    for line in lines:
        print(f"  {line.system:24} {line.suite:12} requests {line.calls:4}  uncached {line.uncached_calls:4}  "
              f"input tokens {line.input_tokens:8}{' (estimated)' if line.tokens_estimated else ''}  "
              f"output tokens {line.output_tokens:7}  ${line.cost_usd:.4f}")
    print(f"estimate: {uncached} request(s) to send, ${cost:.4f} (output tokens at max_tokens, an upper bound"
          f"{'; input tokens estimated from characters' if tokens_rough else ''}; repair requests not counted)")
    summary = {"release": release, "label": label, "judge": model, "outputs": len(found),
               "calls": sum(line.calls for line in lines), "uncached_calls": uncached, "cost_usd": round(cost, 6)}
    if not args.yes:
        print("nothing sent: run again with --yes to ask the new judge")
        print(json.dumps({**summary, "sent": False}))
        return 0
    if not configured(cfg_new.judge):
        print(f"evalkit: rejudge_code.rejudge --yes needs an API key of the judge's provider ({cfg_new.judge.provider}) in the "
              "environment (e.g. ANTHROPIC_API_KEY); none is set", file=sys.stderr)
        return 2
    result = rejudge_code.rejudge(cfg, cfg_new, release, label, found)
    page = rejudge_code.write_side_release(cfg, result)
    for f in result.fields:
        kappa = f.agreement.kappa if f.agreement is not None else None
        print(f"  {f.field:28} n {f.n:4}  kappa {'–' if kappa is None else f'{kappa:.2f}':>5}  "
              f"mean {'–' if f.old_mean is None else f'{f.old_mean:.2f}'} -> "
              f"{'–' if f.new_mean is None else f'{f.new_mean:.2f}'}  changed {f.changed}")
    print(f"evalkit rejudge_code.rejudge: side release {label} -> open {os.path.relpath(page)}")
    print(f"sent {result.calls_sent} request(s), ${result.cost_usd:.4f}")
    print(json.dumps({**summary, "sent": True, "calls_sent": result.calls_sent, "page": str(page)}))
    return 0
