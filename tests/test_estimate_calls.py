"""`evalkit estimate` against what the run then sends, on a loopback Messages API.

One project holds every suite kind of the demo whose run asks a model: migration (the judge, and
an `anthropic` system under test), generation (rubric criteria) and rag (ragas' metrics). The
server sorts each message request by who sent it (judge, rubric, ragas, system under test); the
estimate taken after generate must be within 10 % of those counts per asker, the one taken before
generate too where the answers are known or model-made, and an upper bound where a command
system's identical answers share a verdict; 0 once the run is done.
"""

from __future__ import annotations

import collections
import hashlib
import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from fake_server import FakeAnthropic, Reply, ragas_reply, text_of
from evalkit.llm.pricing import Usage, cost_usd, default_prices, price_for
from evalkit.llm.prompts import render
from helpers import REPO, evalkit, evalkit_here, make_project, run

KEY = "sk-ant-test-estimate-0000"
JUDGE_SYSTEM = render("migration_judge_system.md.j2")[:60]
RUBRIC_SYSTEM = render("rubric_judge_system.md.j2")[:60]
ASKERS = ("anthropic system", "migration judge", "rubric", "ragas")


def asker_of(body: dict) -> str:
    system = "".join(block.get("text", "") for block in body.get("system") or [])
    if ragas_reply(body) is not None:
        return "ragas"
    if system.startswith(JUDGE_SYSTEM):
        return "migration judge"
    if system.startswith(RUBRIC_SYSTEM):
        return "rubric"
    return "anthropic system"


class Responder:
    """Answers each kind of prompt validly and counts the requests per asker."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()

    def __call__(self, body: dict) -> Reply:
        asker = asker_of(body)
        self.counts[asker] += 1
        if asker == "ragas":
            return ragas_reply(body)
        prompt = text_of(body)
        if asker == "migration judge":
            answer = {"semantic_equivalence_score": 4, "rule_adherence_score": 4, "faithfulness_score": 4,
                      "code_quality_score": 4, "is_compilable": True, "detailed_notes": "ok"}
            return Reply(text="Reviewed.\n```json\n" + json.dumps(answer) + "\n```")
        if asker == "rubric":
            ids = re.findall(r"- id `([^`]+)`", prompt)
            return Reply(text=json.dumps({"criteria": [{"id": i, "met": True, "reason": "ok"} for i in ids]}))
        name = "C" + hashlib.sha256(prompt.encode()).hexdigest()[:8]
        return Reply(text=f"```java\npackage demo;\n\nimport jakarta.inject.Inject;\n\npublic class {name} {{\n"
                          f"    @Inject\n    Object service;\n}}\n```\n")


def project(root: Path, base_url: str, judge_extra: str = "") -> Path:
    systems = textwrap.dedent("""\
        systems:
          - name: naive
            adapter: command
            command: ["{python}", "-m", "evalkit.demo_systems.naive_rewriter"]
            suites: [migration]
          - name: rules
            adapter: command
            command: ["{python}", "-m", "evalkit.demo_systems.rule_rewriter"]
            suites: [migration]
          - name: plain-model
            adapter: anthropic
            model: claude-test-system
            prompt: templates/prompts/system_migration.md.j2
            suites: [migration]
          - name: codegen
            adapter: command
            command: ["{python}", "-m", "evalkit.demo_systems.codegen_bot"]
            suites: [generation]
          - name: hint-bot
            adapter: command
            command: ["{python}", "-m", "evalkit.demo_systems.hint_bot"]
            suites: [rag]
          - name: gold
            adapter: gold
        """)
    make_project(root, cases=["jpa-entity", "ejb-stateless", "cdi-inject"], systems=systems,
                 extra=f"judge:\n  model: claude-test-judge\n  base_url: {base_url}\n  batch_poll_s: 0.05\n{judge_extra}")
    gen = root / "cases" / "generation"
    gen.mkdir(parents=True)
    shutil.copy(REPO / "cases" / "generation" / "suite.yaml", gen / "suite.yaml")
    for case in ("petstore-model", "orders-model-injected"):
        shutil.copytree(REPO / "cases" / "generation" / case, gen / case)
    shutil.copytree(REPO / "cases" / "rag", root / "cases" / "rag")
    return root


def estimate(root: Path) -> dict:
    return json.loads(evalkit_here(root, "estimate", env={"ANTHROPIC_API_KEY": KEY}).stdout.strip().splitlines()[-1])


def within(estimated: int, actual: int) -> bool:
    return abs(estimated - actual) <= 0.1 * actual


def test_estimate_counts_every_call_of_every_suite_kind(tmp_path: Path) -> None:
    responder = Responder()
    with FakeAnthropic(responder=responder) as server:
        root = project(tmp_path / "p", server.base_url)
        before = estimate(root)
        assert server.message_calls() == 0  # estimating pays nothing
        evalkit(root, "run", "generate", env={"ANTHROPIC_API_KEY": KEY})
        generated = dict(responder.counts)
        after_generate = estimate(root)
        run(root, env={"ANTHROPIC_API_KEY": KEY})
        actual = dict(responder.counts)
        done = estimate(root)
    figures = {a: (before["by_asker"].get(a, 0), actual.get(a, 0),
                   after_generate["by_asker"].get(a, 0), actual.get(a, 0) - generated.get(a, 0)) for a in ASKERS}
    print("estimate before generate / calls of the run / estimate after generate / calls after generate:", figures)
    assert set(actual) == set(ASKERS) and all(actual[a] > 0 for a in ASKERS)
    assert generated == {"anthropic system": actual["anthropic system"]}  # generate asks only the system
    for asker, (est_before, calls, est_after, calls_after) in figures.items():
        assert within(est_after, calls_after), (asker, est_after, calls_after)
        # Before generate a command system's answers are unknown: each gets its own stand-in, an upper
        # bound, since identical answers share one verdict. The demo's rule rewriter reproduces gold
        # on some cases, so the migration judge then makes fewer calls than planned.
        assert calls <= est_before, (asker, est_before, calls)
        if asker != "migration judge":
            assert within(est_before, calls), (asker, est_before, calls)
    assert after_generate["by_asker"].get("anthropic system", 0) == 0  # its answers are cached now
    assert within(before["uncached_calls"], server.message_calls())
    assert done["uncached_calls"] == 0 and done["cost_usd"] == 0


@pytest.mark.parametrize("mode", ["sync", "batch"])
def test_batch_pricing_only_when_the_run_batches(tmp_path: Path, mode: str) -> None:
    with FakeAnthropic(responder=Responder()) as server:
        root = project(tmp_path / "p", server.base_url, judge_extra=f"  mode: {mode}\n")
        evalkit(root, "run", "generate", env={"ANTHROPIC_API_KEY": KEY})
        system_calls = server.counts["messages"]  # the anthropic system under test: never batched
        est = estimate(root)
        run(root, env={"ANTHROPIC_API_KEY": KEY})
        if mode == "batch":  # every grade call went in a batch: ragas needs two (statements, then verification)
            assert server.counts["batch_create"] == 2 and server.counts["messages"] == system_calls
            assert max(server.batch_custom_ids.values()) == 1
        else:
            assert server.counts["batch_create"] == 0
    half = 0.5 if mode == "batch" else 1.0
    price = price_for("claude-test-judge", default_prices())
    paid = 0.0
    for path in (root / ".evalkit" / "artifacts").rglob("grades.json"):
        grades = json.loads(path.read_text())
        judged = grades.get("rubric") or grades.get("judge") or {}
        if judged.get("status") == "judged":  # what the run paid: half price in batch mode
            usage = Usage(**judged["usage"])
            assert judged["cost_usd"] == pytest.approx(cost_usd(usage, price) * half)
            paid += judged["cost_usd"]
    assert paid > 0
    # after generate every uncached call is a grade call: priced at half only when the run batches
    assert est["batch"] is (mode == "batch") and est["by_stage"] == {"grade": est["uncached_calls"]}
    usage = Usage(input_tokens=est["input_tokens"], output_tokens=est["output_tokens"])
    assert est["cost_usd"] == pytest.approx(cost_usd(usage, price) * half, rel=1e-4)
