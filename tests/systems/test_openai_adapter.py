"""`adapter: openai` and `judge.provider: openai` in real runs against a loopback Chat Completions server,
and `judge.fallback`: a primary judge that cannot be reached hands over to a fallback whose verdicts are
named by its model and counted apart from the primary's scores."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from evalkit.cases import discover
from evalkit.config import OpenAISystem
from fake_server import FakeAnthropic, Reply
from evalkit.llm.settings import FallbackSettings, JudgeSettings
from evalkit.systems.base import RunContext, run_system
from fake_openai import FakeOpenAI, windows
from helpers import evalkit, make_project, refused_port, run

KEY = "sk-openai-e2e-NEVER-SHOW-ME-77"
JAVA = ("package org.acme;\n\nimport jakarta.persistence.Entity;\n\n@Entity\npublic class Order {\n"
        "    private Long id;\n}\n")
VERDICT = {"semantic_equivalence_score": 4, "rule_adherence_score": 5, "faithfulness_score": 4,
           "code_quality_score": 4, "is_compilable": True, "detailed_notes": "fine"}


def answer(body: dict) -> Reply:
    """The system under test writes a fenced Java file; the judge (any other model) gives a verdict."""
    if body["model"].endswith("-sut"):
        return Reply(text=f"Migrated:\n```java\n{JAVA}```\n")
    return Reply(text="Step 1: fine.\n```json\n" + json.dumps(VERDICT) + "\n```")


def project(tmp_path: Path, systems: str, judge: str) -> Path:
    root = make_project(tmp_path / "p", cases=["jpa-entity", "ejb-stateless"])
    (root / "evalkit.yaml").write_text("release: r1\nbaseline: gold\ntemplates_dir: templates\n"
                                       + textwrap.dedent(systems) + textwrap.dedent(judge), encoding="utf-8")
    return root


def test_openai_system_and_openai_judge_end_to_end(tmp_path: Path) -> None:
    with FakeOpenAI(responder=answer) as server:
        root = project(tmp_path, f"""\
            systems:
              - name: gpt
                adapter: openai
                model: gpt-4o-sut
                base_url: {server.base_url}
              - name: gold
                adapter: gold
            """, f"""\
            judge:
              provider: openai
              model: gpt-judge
              base_url: {server.base_url}
              rate_limits: {{openai: {{rpm: 3, window_s: 1.0}}}}
            """)
        env = {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": "", "ANTHROPIC_API_KEYS": ""}
        run(root, "--jobs", "4", env=env)
        # one limiter for the system under test and the judge, across the run's four threads
        assert windows([r["at"] for r in server.requests], 1.0) <= 3
        sent = [r["body"]["model"] for r in server.requests]
        assert sent.count("gpt-4o-sut") == 2 and sent.count("gpt-judge") == 4  # two systems x two cases
        assert {r["key"] for r in server.requests} == {KEY}
        out = json.loads((root / ".evalkit/artifacts/gpt/migration/jpa-entity/output.json").read_text())
        sample = out["samples"][0]
        assert sample["status"] == "ok" and list(sample["files"].values()) == [JAVA]
        assert sample["usage"]["input_tokens"] > 0 and sample["usage"]["cost_usd"] > 0
        grades = json.loads((root / ".evalkit/artifacts/gpt/migration/jpa-entity/grades.json").read_text())
        assert grades["judge"]["status"] == "judged" and grades["judge"]["model"] == "gpt-judge"
        assert grades["judge"]["fallback"] is False
        report = json.loads((root / "site/r1/report.json").read_text())
        systems = report["suites"][0]["systems"]
        assert systems["gpt"]["judge_mean"]["n"] == 2 and systems["gpt"]["judge_mean"]["value"] == pytest.approx(4.25)
        assert "judge_fallback" not in systems["gpt"]
        # lose doit's state and every artifact: the response cache answers both the system and the judge
        calls = server.calls
        shutil.rmtree(root / ".evalkit" / "artifacts")
        (root / ".evalkit" / "doit.sqlite3").unlink()
        run(root, env=env)
        assert server.calls == calls
    for path in list((root / ".evalkit").rglob("*")) + list((root / "site").rglob("*")):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def dead_url() -> str:
    """A loopback address nothing listens on (connections are refused at once)."""
    return f"http://127.0.0.1:{refused_port()}"


def test_fallback_judge_verdicts_named_and_counted_apart(tmp_path: Path) -> None:
    with FakeOpenAI(responder=answer) as fallback:
        root = project(tmp_path, """\
            systems:
              - name: rules
                adapter: command
                command: ["{python}", "-m", "evalkit.demo_systems.rule_rewriter"]
              - name: gold
                adapter: gold
            """, f"""\
            judge:
              model: claude-primary
              base_url: {dead_url()}
              max_retries: 0
              circuit_after: 1
              fallback: {{provider: openai, model: gpt-fallback, base_url: {fallback.base_url}}}
            """)
        proc_env = {"ANTHROPIC_API_KEY": "sk-ant-primary-unused", "OPENAI_API_KEY": KEY}
        run(root, env=proc_env)
        assert fallback.calls >= 2 and {r["body"]["model"] for r in fallback.requests} == {"gpt-fallback"}
    for system in ("rules", "gold"):
        for case in ("jpa-entity", "ejb-stateless"):
            judge = json.loads((root / f".evalkit/artifacts/{system}/migration/{case}/grades.json").read_text())["judge"]
            assert judge["status"] == "judged" and judge["fallback"] is True and judge["model"] == "gpt-fallback"
    report = json.loads((root / "site/r1/report.json").read_text())
    for name, row in report["suites"][0]["systems"].items():
        assert row["judge_fallback"]["value"] == 2, name  # counted: both cases, by the fallback judge
        assert row["judge_fallback_score"]["value"] == pytest.approx(4.25)
        assert row.get("judge_mean", {}).get("n", 0) == 0  # never mixed into the primary judge's score
    assert "Fallback verdicts" in (root / "site/r1/suites/migration.html").read_text()
    assert "gpt-fallback" in (root / "site/r1/cases/migration/jpa-entity.html").read_text()  # the verdict names it
    # fallback verdicts are provisional: the next run asks the primary again; once it answers, its verdicts
    # replace the fallback's (while it still fails, the fallback answers from the response cache, unpaid)
    with FakeOpenAI(responder=answer) as fallback_again:
        config = root / "evalkit.yaml"
        config.write_text(config.read_text().replace(fallback.base_url, fallback_again.base_url))
        with FakeAnthropic(responder=lambda body: Reply(
                text="```json\n" + json.dumps({**VERDICT, "faithfulness_score": 5}) + "\n```")) as primary:
            config.write_text(re.sub(r"base_url: http://127.0.0.1:\d+\n", f"base_url: {primary.base_url}\n",
                                     config.read_text(), count=1))
            run(root, env=proc_env)
            assert primary.message_calls() >= 2 and fallback_again.calls == 0
    judge = json.loads((root / ".evalkit/artifacts/gold/migration/jpa-entity/grades.json").read_text())["judge"]
    assert judge["fallback"] is False and judge["model"] == "claude-primary"
    report = json.loads((root / "site/r1/report.json").read_text())
    for name, row in report["suites"][0]["systems"].items():
        assert "judge_fallback" not in row and row["judge_mean"]["n"] == 2, name
        assert row["judge_mean"]["value"] == pytest.approx(4.5)


def test_system_fallback_answer_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_project(tmp_path / "p", cases=["jpa-entity"])
    case = discover(root / "cases").cases[0]
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAI(responder=lambda body: Reply(status=502)) as primary, FakeOpenAI(responder=answer) as spare:
        system = OpenAISystem(name="gpt", adapter="openai", model="gpt-primary-sut", base_url=primary.base_url,
                              fallback=FallbackSettings(provider="openai", model="gpt-spare-sut",
                                                        base_url=spare.base_url))
        ctx = RunContext(root=root, work=tmp_path / "work", judge=JudgeSettings(max_retries=0, circuit_after=1))
        sample = run_system(system, case, 0, ctx)
        assert primary.calls == 1 and spare.calls == 1
    assert sample.status == "ok" and list(sample.files.values()) == [JAVA]
    assert sample.model_extra == {"model": "gpt-spare-sut", "fallback": True}


def test_model_missing_from_a_users_price_table_is_an_unknown_cost_not_a_bug(tmp_path: Path) -> None:
    """The README's own example: `prices:` lists the judge's model only, the system runs another model. The
    run completes (not exit 4, 'evalkit bug ... no price for model'), says once that the cost is unknown, and
    `evalkit estimate` prints its table and no traceback."""
    with FakeOpenAI(responder=answer) as server:
        root = project(tmp_path, f"""\
            systems:
              - name: llama
                adapter: openai
                model: meta-llama/Llama-3.1-8B-Instruct-sut
                base_url: {server.base_url}
              - name: gold
                adapter: gold
            """, f"""\
            judge:
              provider: openai
              model: gpt-4o
              base_url: {server.base_url}
              prices: {{gpt-4o: {{input: 2.5, output: 10, cache_read: 1.25, cache_write: 0}}}}
            """)
        env = {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": "", "ANTHROPIC_API_KEYS": ""}
        estimate = evalkit(root, "estimate", env=env, check=False)
        assert estimate.returncode == 0, estimate.stderr
        assert "Traceback" not in estimate.stderr and "cost unknown for meta-llama/Llama-3.1-8B-Instruct-sut" \
            in estimate.stdout
        assert json.loads(estimate.stdout.splitlines()[-1])["cost_unknown_models"] == [
            "meta-llama/Llama-3.1-8B-Instruct-sut"]
        proc = evalkit(root, "run", env=env, check=False)
        assert proc.returncode == 0, f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        assert "no price for model 'meta-llama/Llama-3.1-8B-Instruct-sut'" in proc.stderr
        assert "evalkit bug" not in proc.stdout + proc.stderr
        out = json.loads((root / ".evalkit/artifacts/llama/migration/jpa-entity/output.json").read_text())
        assert out["samples"][0]["status"] == "ok" and out["samples"][0]["usage"]["cost_usd"] == 0
        grades = json.loads((root / ".evalkit/artifacts/llama/migration/jpa-entity/grades.json").read_text())
        assert grades["judge"]["status"] == "judged" and grades["judge"]["cost_usd"] > 0, grades["judge"]


def test_an_endpoint_without_auth_needs_no_key(tmp_path: Path) -> None:
    """`api_key: none` (a local vLLM or Ollama without auth): with no OPENAI_API_KEY anywhere, the system and the
    judge are asked, no Authorization header is sent, and the verdicts count; without it the same run has no key
    and judges nothing."""
    with FakeOpenAI(responder=answer) as server:
        root = project(tmp_path, f"""\
            systems:
              - name: local
                adapter: openai
                model: llama-sut
                base_url: {server.base_url}
                api_key: none
              - name: gold
                adapter: gold
            """, f"""\
            judge:
              provider: openai
              model: llama-judge
              base_url: {server.base_url}
              api_key: none
            """)
        env = {"OPENAI_API_KEY": "", "OPENAI_API_KEYS": "", "ANTHROPIC_API_KEY": "", "ANTHROPIC_API_KEYS": ""}
        proc = evalkit(root, "run", env=env, check=False)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert server.requests and all(not r["key"] for r in server.requests)
        sent = [r["body"]["model"] for r in server.requests]
        assert sent.count("llama-sut") == 2 and sent.count("llama-judge") == 4
        report = json.loads((root / "site/r1/report.json").read_text())
        assert report["suites"][0]["systems"]["local"]["judge_mean"]["n"] == 2
