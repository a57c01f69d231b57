"""kill -9 of a run while judge calls are in flight, then a rerun against a healthy server.

"Paid" means answered and recorded: a call whose answer reached the response cache before the kill
is never made again; only the calls in flight at the kill (at most one per doit job) may be. No
temporary or corrupt file is left under .evalkit/ or site/.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from evalkit import interrupted, tempdirs
from evalkit.llm.cache import ResponseCache
from evalkit.llm.calls import RESERVED_PARAMS, LLMRequest
from fake_server import FakeAnthropic, Reply
from helpers import evalkit, make_project
from zygote import popen_evalkit

KEY = "sk-ant-test-kill-0000"
JOBS = 2
CASES = ["jpa-entity", "ejb-stateless", "cdi-inject", "jaxrs-resource", "servlet-filter", "persistence-context"]
VERDICT = {"semantic_equivalence_score": 4, "rule_adherence_score": 5, "faithfulness_score": 4,
           "code_quality_score": 4, "is_compilable": True, "detailed_notes": "fine"}


def slow_verdict(body: dict[str, Any]) -> Reply:
    return Reply(text="Checked.\n```json\n" + json.dumps(VERDICT) + "\n```", delay_s=0.8)


def cache_key(cache: ResponseCache, body: dict[str, Any]) -> str:
    """The response-cache key evalkit gives the request the server received."""
    extra = {k: v for k, v in body.items() if k not in RESERVED_PARAMS}
    request = LLMRequest(model=body["model"], system=body.get("system") or [], messages=body["messages"],
                         max_tokens=body["max_tokens"], extra=extra)
    return cache.key(request)


def recorded(cache: ResponseCache) -> set[str]:
    return {p.stem for p in cache.store.root.rglob("*.json")}


def test_kill_while_judging_pays_no_recorded_call_twice_and_leaves_no_temp_file(tmp_path: Path) -> None:
    with FakeAnthropic(responder=slow_verdict) as server:
        project = make_project(tmp_path / "p", cases=CASES, extra=(
            f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n"))
        cache = ResponseCache(project / ".evalkit" / "cache")
        env = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), "ANTHROPIC_API_KEY": KEY}
        proc = popen_evalkit(["run", "--jobs", str(JOBS)], tmp_path, env, start_new_session=True)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            # kill once some answers are recorded and more requests than that have been sent
            if cache.store.root.exists() and 2 <= len(recorded(cache)) < server.counts["messages"]:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before the kill: make the judge slower"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        paid = recorded(cache)
        first = [cache_key(cache, r["body"]) for r in server.requests if r["endpoint"] == "messages"]
        assert paid <= set(first) and len(paid) >= 2

        # a write the kill interrupted between the temporary file and the rename (timing one is luck)
        stale = next((project / ".evalkit" / "artifacts").rglob("output.json")).with_name(".grades.json.k1ll3d.tmp")
        stale.write_text('{"half": ')
        assert list((project / ".evalkit" / "running").iterdir())  # the killed run's marker
        server.responder = lambda body: Reply(text="Checked.\n```json\n" + json.dumps(VERDICT) + "\n```")
        rerun = evalkit(project, "run", env={"ANTHROPIC_API_KEY": KEY})
        assert "Traceback" not in rerun.stderr
        second = [cache_key(cache, r["body"]) for r in server.requests if r["endpoint"] == "messages"][len(first):]

    assert not paid & set(second), "a call answered and recorded before the kill was made again"
    in_flight = set(first) - paid
    assert set(second) & set(first) <= in_flight and len(in_flight) <= JOBS
    assert max(Counter(first + second).values()) <= 2  # nothing asked more than once per run
    statuses = Counter(json.loads(p.read_text())["judge"]["status"]
                       for p in (project / ".evalkit" / "artifacts").rglob("grades.json"))
    assert statuses["judged"] >= len(set(first + second)) and not statuses.keys() - {"judged", "parser"}
    assert not list((project / ".evalkit").rglob("*.retry"))
    leftovers = [p for root in (project / ".evalkit", project / "site") for p in root.rglob("*")
                 if p.name.endswith((".tmp", ".partial")) or p.name.startswith(".#")]
    assert not leftovers and not stale.exists()
    assert not list((project / ".evalkit" / "running").iterdir())
    for root in (project / ".evalkit", project / "site"):
        for path in root.rglob("*.json"):
            json.loads(path.read_text(encoding="utf-8"))  # no truncated JSON anywhere


def test_the_sweep_leaves_the_files_of_a_run_still_going(tmp_path: Path) -> None:
    work, site = tmp_path / ".evalkit", tmp_path / "site"
    (work / "running").mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (work / "running" / f"evalkit-run-{dead.pid}.1-marker").touch()
    tmp_file = site / "r1" / ".index.html.x.tmp"
    tmp_file.parent.mkdir(parents=True)
    tmp_file.write_text("<html")
    (work / "running" / f"{tempdirs.prefix('evalkit-run-')}marker").touch()  # another run, alive
    assert interrupted.sweep(work, site) == [] and tmp_file.exists()
    (work / "running" / f"{tempdirs.prefix('evalkit-run-')}marker").unlink()
    with interrupted.run_marker(work, site) as removed:
        assert removed == [tmp_file] and not tmp_file.exists()
        assert len(list((work / "running").iterdir())) == 1  # this run's own marker
    assert not list((work / "running").iterdir())
