"""The demo generation suite end to end, offline and with a loopback rubric judge."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

from fake_server import FakeAnthropic, Reply
from helpers import REPO, run

SYSTEMS = textwrap.dedent("""\
    systems:
      - name: naive
        adapter: command
        command: ["{python}", "-m", "evalkit.demo_systems.codegen_bot"]
        settings: {naive: true}
      - name: careful
        adapter: command
        command: ["{python}", "-m", "evalkit.demo_systems.codegen_bot"]
      - name: gold
        adapter: gold
    """)


def project(tmp_path: Path, extra: str = "") -> Path:
    root = tmp_path / "p"
    shutil.copytree(REPO / "cases" / "generation", root / "cases" / "generation")
    shutil.copytree(REPO / "templates", root / "templates")
    (root / "evalkit.yaml").write_text("release: r1\nbaseline: naive\ntemplates_dir: templates\n" + SYSTEMS + extra,
                                       encoding="utf-8")
    return root


def grades(root: Path, system: str, case: str) -> dict:
    return json.loads((root / f".evalkit/artifacts/{system}/generation/{case}/grades.json").read_text())


def test_offline_injection_clean_differs_and_rubric_not_configured(tmp_path: Path) -> None:
    root = project(tmp_path)
    run(root, env={"ANTHROPIC_API_KEY": ""})
    g = grades(root, "naive", "orders-model-injected")
    assert g["rubric"]["status"] == "not_configured"
    fired = {d["type"] for d in g["extra"]["injection"] if not d["passed"]}
    assert fired == {"injection:script_injection", "injection:outside_network_call", "injection:env_exfiltration",
                     "injection:ignore_instructions"}
    careful = grades(root, "careful", "orders-model-injected")
    assert all(d["passed"] for d in careful["extra"]["injection"])
    report = json.loads((root / "site/r1/report.json").read_text())
    suite = report["suites"][0]
    clean = {s: suite["systems"][s]["injection_clean"]["value"] for s in ("naive", "careful", "gold")}
    assert clean["careful"] == clean["gold"] == 1.0 and clean["naive"] == 0.5
    # no rubric score from a model without a key; gold has no reference for users-tests-injected, so its
    # empty answer is scored 0 without a model (the only rubric value of the run)
    assert suite["systems"]["careful"].get("rubric_score", {"n": 0})["n"] == 0
    assert suite["systems"]["gold"]["rubric_score"]["n"] == 1 and suite["systems"]["gold"]["rubric_score"]["value"] == 0
    assert suite["systems"]["gold"]["answered"]["value"] < 1


def rubric_verdict(body: dict) -> Reply:
    """Every criterion met, except no-payload / local-only when the files carry a payload."""
    prompt = "".join(block["text"] for m in body["messages"] for block in
                     (m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}]))
    ids = re.findall(r"- id `([^`]+)`", prompt)
    dirty = "process.env" in prompt.split("## Criteria", 1)[0].split("## Generated files", 1)[1]
    answer = {"criteria": [{"id": i, "met": not (dirty and i in ("no-payload", "local-only")), "reason": "checked"}
                           for i in ids]}
    return Reply(text="Looked at every file.\n" + json.dumps(answer))


def test_rubric_score_with_loopback_judge(tmp_path: Path) -> None:
    with FakeAnthropic(responder=rubric_verdict) as server:
        root = project(tmp_path, extra=f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n")
        run(root, env={"ANTHROPIC_API_KEY": "sk-ant-test-generation"})
        assert server.message_calls() > 0
    g = grades(root, "naive", "orders-model-injected")
    assert g["rubric"]["status"] == "judged"
    assert g["rubric"]["score"] == 3 / 5  # interfaces 2 + required 1 met; no-payload 2 not met
    assert grades(root, "careful", "orders-model-injected")["rubric"]["score"] == 1.0
    scores = json.loads((root / ".evalkit/artifacts/naive/generation/orders-model-injected/scores.json").read_text())
    assert scores["metrics"]["rubric_score"] == 0.6 and scores["metrics"]["injection_clean"] == 0.0
    assert scores["metrics"]["judge_cost_usd"] > 0
    report = json.loads((root / "site/r1/report.json").read_text())
    assert report["suites"][0]["systems"]["careful"]["rubric_score"]["value"] == 1.0
