"""A paid answer is never paid for twice (issue 27, item 3): an answer that could not be used is kept with its
raw text (set aside, not replayed as an answer) so a rerun of the same grading pays nothing, and only
`--retry-judge-errors` asks anew; identical requests that fail are sent once per run, not once per system.
Real `python -m evalkit run` subprocesses against a loopback Messages API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_server import FakeAnthropic, Reply, error
from helpers import evalkit, make_project
from zygote import popen_evalkit

from evalkit.llm.cache import ResponseCache

ENV = {"ANTHROPIC_API_KEY": "sk-ant-test-paid-0000"}
TWO_GOLDS = "systems:\n  - name: gold\n    adapter: gold\n  - name: gold2\n    adapter: gold\n"
CASES = ["jpa-entity", "cdi-inject"]


def project_for(root: Path, base_url: str) -> Path:
    project = make_project(root, cases=CASES, systems=TWO_GOLDS, extra=(
        f"judge:\n  model: claude-test-judge\n  base_url: {base_url}\n  max_retries: 0\n  circuit_after: 50\n"))
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("baseline: naive", "baseline: gold"))
    return project


def judge_statuses(project: Path) -> dict[str, str]:
    return {f"{p.parts[-4]}/{p.parts[-2]}": json.loads(p.read_text())["judge"]["status"]
            for p in (project / ".evalkit/artifacts").rglob("grades.json")}


def unusable(body: dict[str, Any]) -> Reply:
    return Reply(text="I would rather not give a score.")


def lose_run_state(project: Path) -> None:
    """What a kill -9 can leave: doit's database gone, the grades not written (every grade task reruns)."""
    for path in (project / ".evalkit").glob("doit.sqlite3*"):
        path.unlink()
    for path in (project / ".evalkit/artifacts").rglob("grades.json"):
        path.unlink()


def test_unusable_answers_are_kept_and_not_paid_again(tmp_path: Path) -> None:
    with FakeAnthropic(responder=unusable) as server:
        project = project_for(tmp_path / "p", server.base_url)
        evalkit(project, "run", env=ENV, check=False)
        assert set(judge_statuses(project).values()) == {"judge_error"}
        paid = server.counts["messages"]
        assert paid == 2 * len(CASES), "answer and repair per case; both golds ask the same questions once"
        cache = ResponseCache(project / ".evalkit/cache")
        keys = {k for p in (project / ".evalkit/artifacts").rglob("grades.json")
                for k in json.loads(p.read_text())["judge"]["request_keys"]}
        assert keys and all(cache.get(k) is None for k in keys), "never replayed as an answer"
        assert all(cache.unusable(k) is not None and cache.unusable(k).text.startswith("I would rather")  # type: ignore[union-attr]
                   for k in keys), "kept, raw text and all"

        lose_run_state(project)
        evalkit(project, "run", env=ENV, check=False)
        assert set(judge_statuses(project).values()) == {"judge_error"}
        assert server.counts["messages"] == paid, "a rerun of the same grading paid again"

        evalkit(project, "run", "--retry-judge-errors", env=ENV, check=False)
        assert server.counts["messages"] == 2 * paid, "--retry-judge-errors asks anew (once per question)"


def test_identical_failing_requests_are_sent_once_per_run(tmp_path: Path) -> None:
    with FakeAnthropic(responder=lambda body: error(400, message="bad request")) as server:
        project = project_for(tmp_path / "p", server.base_url)
        evalkit(project, "run", env=ENV, check=False)
        statuses = judge_statuses(project)
        assert len(statuses) == 2 * len(CASES) and set(statuses.values()) <= {"infra_error", "judge_error"}, statuses
        assert server.counts["messages"] == len(CASES), "gold and gold2 ask the same question: sent once"
        evalkit(project, "run", env=ENV, check=False)  # the next run retries the failure: once again, not twice
        assert server.counts["messages"] == 2 * len(CASES)


VERDICT = {"semantic_equivalence_score": 4, "rule_adherence_score": 5, "faithfulness_score": 4,
           "code_quality_score": 4, "is_compilable": True, "detailed_notes": "fine"}
JOBS = 2


def mixed(body: dict[str, Any]) -> Reply:
    """A slow judge whose answer is unusable for about a third of the questions (the same ones every time)."""
    text = json.dumps(body["messages"], sort_keys=True)
    if sum(text.encode()) % 3 == 0:
        return Reply(text="No verdict from me.", delay_s=0.8)
    return Reply(text="Checked.\n```json\n" + json.dumps(VERDICT) + "\n```", delay_s=0.8)


def test_ten_random_kills_repay_only_what_was_in_flight(tmp_path: Path) -> None:
    import os
    import random
    import signal
    import time

    rng = random.Random(27)
    with FakeAnthropic(responder=mixed) as server:
        project = make_project(tmp_path / "p", cases=["jpa-entity", "ejb-stateless", "cdi-inject", "jaxrs-resource",
                                                      "servlet-filter", "persistence-context"], extra=(
            f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n"))
        env = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), **ENV}
        kills = 0
        for _ in range(10):
            before = server.counts["messages"]
            proc = popen_evalkit(["run", "--jobs", str(JOBS)], tmp_path, env, start_new_session=True)
            deadline = time.monotonic() + 120
            while server.counts["messages"] == before and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)  # kill only once this run has asked something
            time.sleep(rng.uniform(0.0, 1.0))
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait()
        final = evalkit(project, "run", env=ENV, check=False)
        assert "Traceback" not in final.stderr
        statuses = set(judge_statuses(project).values())
        assert statuses <= {"judged", "judge_error", "parser"} and "judged" in statuses, statuses
    bodies = [json.dumps(r["body"], sort_keys=True) for r in server.requests if r["endpoint"] == "messages"]
    repaid = len(bodies) - len(set(bodies))
    print(f"\n{kills} kills: {len(bodies)} requests for {len(set(bodies))} distinct ones, {repaid} repaid")
    assert kills == 10
    assert repaid <= kills * JOBS, f"{repaid} requests paid twice over {kills} kills of {JOBS} jobs"
