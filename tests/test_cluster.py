"""Stage calls on a real Dask cluster (a scheduler and two workers as processes on 127.0.0.1).

- the demo's cases of every suite kind run with ``--cluster`` give, case by case, every number the local
  run of the whole demo gave them (``demo_run``, whose report test_report_identical.py holds to its golden
  copy), both workers made artifacts, and each names its worker;
- a worker SIGKILLed mid-run: the run completes with the numbers of a local run, and no model
  call is paid twice (a loopback Messages API counts the judge's requests);
- the caches stay on the coordinator: nothing is cached in a worker's folder, and a rerun after
  losing the artifacts makes no model call and no container run.
"""

from __future__ import annotations

import collections
import json
import re
import shutil
import time
from pathlib import Path

import pytest

from evalkit import procs
from cluster_procs import LocalCluster
from fake_server import FakeAnthropic, Reply
from helpers import REPO, evalkit, make_project, refused_port
from zygote import popen_evalkit
from report_numbers import differences, numbers

KEY = "sk-ant-test-cluster-0000"


def workers_named(work: Path) -> collections.Counter[str]:
    """How many artifacts each worker made (provenance.worker; '' = the coordinator)."""
    found: collections.Counter[str] = collections.Counter()
    for path in (work / "artifacts").rglob("*.json"):
        prov = json.loads(path.read_text(encoding="utf-8")).get("provenance") or {}
        found[prov.get("worker", "")] += 1
    return found


def report_of(project: Path) -> dict:
    """The project's one release report (site/<release>/report.json)."""
    (report_file,) = (project / "site").glob("*/report.json")
    return json.loads(report_file.read_text(encoding="utf-8"))


def report_numbers(project: Path) -> object:
    return numbers(report_of(project))


CLUSTER_SELECT = ["migration/cdi-inject", "generation/petstore-tests", "rag/ejb-stateless-to-cdi",
                  "patch/round-half-up", "patch/truncate-limit", "agentic/catalog", "e2e/ledger"]
"""Cases of every suite kind of the demo (the patch suite's validated and health-checked in Docker; there the
empty system fails both and patch-bot resolves both): what the cluster runs of the demo. The whole demo once more would cost a minute of CPU
and say nothing more about where stages run; its numbers are held to the golden copy by test_report_identical."""


def case_numbers(report: dict, cases: set[tuple[str, str]]) -> object:
    """The numbers of ``report``'s rows of ``cases`` (suite, case id), pruned as the golden copy is."""
    rows = sorted((c for c in report["cases"] if (c["suite"], c["case_id"]) in cases),
                  key=lambda c: (c["suite"], c["case_id"]))
    assert [(c["suite"], c["case_id"]) for c in rows] == sorted(cases), rows
    return numbers({"cases": rows})


def test_demo_on_two_workers_gives_the_local_numbers(docker_engine: str, tmp_path: Path,
                                                     request: pytest.FixtureRequest) -> None:
    project = tmp_path / "demo"
    project.mkdir()
    shutil.copy(REPO / "evalkit.yaml", project / "evalkit.yaml")
    shutil.copytree(REPO / "cases", project / "cases")
    selected = {tuple(s.split("/")) for s in CLUSTER_SELECT}
    with LocalCluster(tmp_path / "cluster") as cluster:
        evalkit(project, "run", "-q", "--cluster", cluster.address,
                *(a for s in CLUSTER_SELECT for a in ("--select", s)), timeout=1500)
        made = workers_named(project / ".evalkit")
        addresses = set(cluster.worker_pids())
    local, _ = request.getfixturevalue("demo_run")  # asked for after the cluster run: it is usually done by then
    report = report_of(project)
    moved = differences(case_numbers(report_of(local), selected), case_numbers(report, selected))
    assert not moved, "numbers of cases run on the cluster differ from the local run's:\n" + "\n".join(moved)
    kinds = {s["kind"] for s in report["suites"] if s["name"] in {suite for suite, _ in selected}}
    assert kinds == {"migration", "generation", "rag", "patch", "agentic", "e2e"}, kinds
    on_workers = {w: n for w, n in made.items() if w}
    assert set(on_workers) == addresses and all(n > 0 for n in on_workers.values()), made
    # score artifacts are made on the coordinator; generate/execute/grade on the workers
    for path in (project / ".evalkit" / "artifacts").rglob("*.json"):
        worker = (json.loads(path.read_text(encoding="utf-8")).get("provenance") or {}).get("worker", "")
        if path.name == "scores.json":
            assert worker == "", path
        elif path.name in ("output.json", "execution.json", "grades.json"):
            assert worker in addresses, path
    release = next((project / "site").glob("*/report.json")).parent
    rows = {w["address"]: w for w in report["workers"]}
    assert set(rows) == addresses and sum(w["calls"] for w in rows.values()) == sum(on_workers.values()), rows
    assert all(w["last_run_calls"] and w["last_run_seconds"] > 0 for w in rows.values()), rows
    page = (release / "index.html").read_text(encoding="utf-8")  # the release page's run section, per worker
    for address, w in rows.items():
        assert re.search(rf"<code>{re.escape(address)}</code></td><td class=\"num\">{w['calls']}</td>", page), address
    for folder in (tmp_path / "cluster").glob("w*/evalkit/scratch/work"):
        assert not (folder / "cache").exists() or not any((folder / "cache").rglob("*.json")), \
            f"a worker kept cache entries of its own in {folder}"


SLOW_SYSTEM = """\
import os, pathlib, runpy, sys, time
marks = pathlib.Path(sys.argv[1])
marks.mkdir(parents=True, exist_ok=True)
(marks / f"{os.getppid()}-{time.monotonic_ns()}-{os.getpid()}").write_text(os.environ["EVALKIT_CASE"])
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline and not (marks / "go").exists():
    time.sleep(0.05)
sys.argv = sys.argv[:1]
runpy.run_module("evalkit.demo_systems.rule_rewriter", run_name="__main__")
"""


def verdict(body: dict) -> Reply:
    answer = {"semantic_equivalence_score": 5, "rule_adherence_score": 4, "faithfulness_score": 4,
              "code_quality_score": 4, "is_compilable": True, "detailed_notes": "ok"}
    return Reply(text="```json\n" + json.dumps(answer) + "\n```")


def judged_project(root: Path, marks: Path, sleep_s: float) -> Path:
    cases = ["jpa-entity", "cdi-inject", "ejb-stateless", "jaxrs-resource", "servlet-filter", "persistence-context"]
    systems = (
        "systems:\n"
        "  - name: naive\n    adapter: command\n"
        '    command: ["{python}", "-m", "evalkit.demo_systems.naive_rewriter"]\n'
        "  - name: slow\n    adapter: command\n"
        f'    command: ["{{python}}", "slow_system.py", "{marks}", "{sleep_s}"]\n'
        "  - name: gold\n    adapter: gold\n")
    project = make_project(root, cases=cases, systems=systems)
    (project / "slow_system.py").write_text(SLOW_SYSTEM, encoding="utf-8")
    return project


def prompts_paid(server: FakeAnthropic) -> collections.Counter[str]:
    """Each distinct message request body the server answered, with how many times."""
    return collections.Counter(json.dumps(r["body"], sort_keys=True) for r in server.requests
                               if r["path"].startswith("/v1/messages") and "body" in r
                               and "count_tokens" not in r["path"])


def test_worker_killed_mid_run_same_numbers_no_call_paid_twice(docker_engine: str, tmp_path: Path) -> None:
    with FakeAnthropic(responder=verdict) as local_server:
        local = judged_project(tmp_path / "local", tmp_path / "marks-local", 0.0)
        with open(local / "evalkit.yaml", "a", encoding="utf-8") as fh:
            fh.write(f"judge:\n  model: claude-test-judge\n  base_url: {local_server.base_url}\n")
        evalkit(local, "run", "-q", env={"ANTHROPIC_API_KEY": KEY}, timeout=900)
    marks = tmp_path / "marks"
    with FakeAnthropic(responder=verdict) as server, \
            LocalCluster(tmp_path / "cluster", env={"ANTHROPIC_API_KEY": KEY}) as cluster:
        project = judged_project(tmp_path / "remote", marks, 3.0)
        with open(project / "evalkit.yaml", "a", encoding="utf-8") as fh:
            fh.write(f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n")
        pids = cluster.worker_pids()
        env = {**__import__("os").environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), "ANTHROPIC_API_KEY": KEY}
        run = popen_evalkit(["run", "-q", "--cluster", cluster.address], tmp_path, env)
        # kill a worker while it runs the slow system's generate call (no model call of its own in flight)
        deadline, victim = time.monotonic() + 300, None
        while victim is None and time.monotonic() < deadline and run.poll() is None:
            started = [int(p.name.split("-")[0]) for p in marks.glob("*-*")] if marks.is_dir() else []
            victim = next((pid for pid in started if pid in pids.values()), None)
            time.sleep(0.05)
        assert victim is not None, "no worker started the slow system"
        cluster.kill(victim)
        out, err = run.communicate(timeout=900)
        assert run.returncode == 0, out + err
        paid = prompts_paid(server)
        made = workers_named(project / ".evalkit")
    killed = next(addr for addr, pid in pids.items() if pid == victim)
    survivor = next(addr for addr in pids if addr != killed)
    assert made[survivor] > 0
    assert paid and all(n == 1 for n in paid.values()), "a model call was paid twice"
    assert len(paid) == len(prompts_paid(local_server))
    moved = differences(report_numbers(local), report_numbers(project))
    assert not moved, "\n".join(moved)


@pytest.fixture
def two_workers(tmp_path: Path):
    with LocalCluster(tmp_path / "cluster", env={"ANTHROPIC_API_KEY": KEY}) as cluster:
        yield cluster


def test_caches_stay_on_the_coordinator(docker_engine: str, tmp_path: Path, two_workers: LocalCluster) -> None:
    with FakeAnthropic(responder=verdict) as server:
        project = make_project(tmp_path / "p", cases=["jpa-entity", "ejb-stateless"],
                               extra=f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n")
        env = {"ANTHROPIC_API_KEY": KEY}
        evalkit(project, "run", "-q", "--cluster", two_workers.address, env=env)
        first = server.message_calls()
        assert first >= 3
        cache = project / ".evalkit" / "cache"
        assert any((cache / "llm").rglob("*.json")) and any((cache / "generate").rglob("*.json"))
        for folder in (tmp_path / "cluster").glob("w*/evalkit/scratch/work"):
            assert not any(folder.rglob("cache/**/*.json")), f"cache entries kept on a worker: {folder}"
        # lose every artifact and doit's state: the coordinator's caches answer, on the workers
        shutil.rmtree(project / ".evalkit" / "artifacts")
        (project / ".evalkit" / "doit.sqlite3").unlink()
        evalkit(project, "run", "-q", "--cluster", two_workers.address, env=env)
        assert server.message_calls() == first
        assert sum(n for w, n in workers_named(project / ".evalkit").items() if w) > 0


def test_call_lost_on_two_workers_is_an_infra_error_redone_next_run(docker_engine: str, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    project = make_project(tmp_path / "p", cases=["jpa-entity"], systems=(
        "systems:\n  - name: naive\n    adapter: command\n"  # make_project's baseline
        f'    command: ["{{python}}", "slow_system.py", "{marks}", "300"]\n'))
    (project / "slow_system.py").write_text(SLOW_SYSTEM, encoding="utf-8")
    output = project / ".evalkit" / "artifacts" / "naive" / "migration" / "jpa-entity" / "output.json"
    # the workers' temporary folders apart from the coordinator's, as on hosts of their own: only a worker's sweep
    # reaches what a killed worker left running
    worker_tmp = tmp_path / "worker-tmp"
    worker_tmp.mkdir()
    with LocalCluster(tmp_path / "cluster", env={"TMPDIR": str(worker_tmp)}) as cluster:
        env = {**__import__("os").environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml")}
        run = popen_evalkit(["run", "-q", "--cluster", cluster.address], tmp_path, env)
        killed: list[int] = []
        pids = set(cluster.worker_pids().values())
        deadline = time.monotonic() + 300
        while len(killed) < 2 and time.monotonic() < deadline and run.poll() is None:
            started = [int(p.name.split("-")[0]) for p in marks.glob("*-*")] if marks.is_dir() else []
            for pid in started:
                if pid in pids and pid not in killed:
                    cluster.kill(pid)  # the slow generate call's worker, each time the call starts
                    killed.append(pid)
            time.sleep(0.05)
        assert len(killed) == 2, f"the call did not start on both workers: {killed}\n{run.poll() and run.communicate()}"
        cluster.add_worker("w-late")  # the later stages need a worker
        out, err = run.communicate(timeout=600)
        first = json.loads(output.read_text(encoding="utf-8"))
        assert first["status"] == "infra_error", first
        assert "lost with its workers" in first["reason"]
        assert Path(str(output) + ".retry").exists()
        # each killed worker's system outlived it (a session of its own; it waits for the "go" mark) until a worker
        # of the same host swept: the second worker's sweep before its call may find the first worker's system (its
        # first sweep, or one a minute after its last), only the late worker's can find the second's. Whoever killed a
        # system said so in its log.
        orphan_of = {int(p.name.split("-")[0]): int(p.name.split("-")[2]) for p in marks.glob("*-*-*")}
        assert set(orphan_of) >= set(killed), sorted(p.name for p in marks.iterdir())
        logs = {path.stem: path.read_text(encoding="utf-8", errors="replace")
                for path in (tmp_path / "cluster").glob("*.log")}
        for worker_pid in killed:
            orphan = orphan_of[worker_pid]
            sweepers = [name for name, log in logs.items() if f"killed pid {orphan} (" in log]
            assert sweepers, f"no worker swept {orphan}: " + logs["w-late"][-3000:]
            assert _gone(orphan)
        assert f"killed pid {orphan_of[killed[-1]]} (" in logs["w-late"], logs["w-late"][-3000:]
        # the next run redoes it (on the worker left)
        (marks / "go").write_text("", encoding="utf-8")  # the system answers at once now (its files unchanged)
        evalkit(project, "run", "-q", "--cluster", cluster.address, timeout=600)
        second = json.loads(output.read_text(encoding="utf-8"))
        assert second["status"] == "ok" and second["provenance"]["worker"], second


def _gone(pid: int, within_s: float = 5.0) -> bool:
    """Whether ``pid`` is dead within ``within_s`` (a SIGKILLed process takes a moment to be reaped)."""
    deadline = time.monotonic() + within_s
    while procs.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not procs.alive(pid)


def test_no_scheduler_is_an_infra_error_and_no_address_is_exit_2(tmp_path: Path) -> None:
    port = refused_port()  # a port nothing listens on
    project = make_project(tmp_path / "p", cases=["jpa-entity"])
    lost = evalkit(project, "run", "-q", "--cluster", f"tcp://127.0.0.1:{port}", timeout=300, check=False)
    assert lost.returncode == 5, lost.stderr  # infrastructure errors remain (issue 27: never exit 0)
    output = json.loads((project / ".evalkit/artifacts/naive/migration/jpa-entity/output.json").read_text())
    assert output["status"] == "infra_error" and f"no Dask scheduler at tcp://127.0.0.1:{port}" in output["reason"]
    with open(project / "evalkit.yaml", "a", encoding="utf-8") as fh:
        fh.write("executor: cluster\n")
    proc = evalkit(project, "run", "-q", check=False)
    assert proc.returncode == 2 and "executor: cluster" in proc.stderr and "tcp://HOST:PORT" in proc.stderr, proc.stderr


def test_judge_budget_holds_across_workers(tmp_path: Path, two_workers: LocalCluster) -> None:
    # The run is sequential (-n 1, so no two calls race for the budget's first dollar). A first run makes the
    # answers and judges them without a budget; the budgeted run asks with another max_tokens (new requests), so
    # it submits grade calls only: when each generate call was followed by its grade (sandbox-first dispatch),
    # the scheduler handed every grade to one worker. The property needs grades on both, so a run that had them
    # all on one worker is made again in a fresh project (at most three times).
    judge = "judge:\n  model: claude-test-judge\n  base_url: {url}\n  concurrency: 1\n"
    for attempt in range(3):
        with FakeAnthropic(responder=verdict) as server:
            project = make_project(tmp_path / f"p{attempt}",
                                   cases=["jpa-entity", "ejb-stateless", "cdi-inject", "servlet-filter"],
                                   extra=judge.format(url=server.base_url))
            evalkit(project, "run", "-q", "-n", "1", "--cluster", two_workers.address, env={"ANTHROPIC_API_KEY": KEY})
            paid = server.message_calls()
            with open(project / "evalkit.yaml", "a", encoding="utf-8") as fh:
                fh.write("  budget_usd: 0.000001\n  max_tokens: 1024\n")
            evalkit(project, "run", "-q", "-n", "1", "--cluster", two_workers.address, env={"ANTHROPIC_API_KEY": KEY})
            assert server.message_calls() - paid == 1  # the first call spends past the budget, on whichever worker
        grades = [json.loads(p.read_text()) for p in (project / ".evalkit/artifacts").rglob("grades.json")]
        by_status: dict[str, set[str]] = collections.defaultdict(set)
        for g in grades:
            by_status[g["judge"]["status"]].add(g["provenance"]["worker"])
        if len(set().union(*by_status.values())) == 2:
            break
    assert by_status["judged"] and by_status["not_judged_budget"]
    # a worker that never paid was refused too: the budget is the run's, not each worker's
    assert by_status["not_judged_budget"] - by_status["judged"], dict(by_status)


def test_containers_per_worker_bounded_by_its_resources(docker_engine: str, tmp_path: Path) -> None:
    from distributed import get_task_stream

    from helpers import patch_project

    project = patch_project(tmp_path / "p", cases=["round-half-up", "slug-lowercase", "truncate-limit",
                                                   "parse-thousands"])
    with LocalCluster(tmp_path / "cluster", workers=1, threads=3, containers=1) as cluster, cluster.client() as c:
        with get_task_stream(client=c) as stream:
            evalkit(project, "run", "-q", "--cluster", cluster.address, timeout=900)
        tasks = stream.data
    containers = ("execute-", "validate-")  # the calls that run containers
    spans = sorted((s["start"], s["stop"]) for t in tasks if str(t["key"]).startswith(containers)
                   for s in t["startstops"] if s["action"] == "compute")
    assert sum(str(t["key"]).startswith("validate-") for t in tasks) == 4, tasks  # each case's validation
    assert len(spans) >= 12, tasks  # 4 validations, 4 cases x patch-bot, gold (and empty's short ones)
    # the worker stamps a call's stop after the next call started (the resource is freed first): 0-50 ms
    # apart here, 120 ms seen on a loaded CI machine, over 0.5 s on a machine at load 14; two calls really
    # sharing the one slot overlap by most of the shorter one's run, so an overlap counts when it is over half a
    # second and over half of the shorter call
    overlaps = [(a, b) for a, b in zip(spans, spans[1:])
                if a[1] - b[0] > max(0.5, 0.5 * min(a[1] - a[0], b[1] - b[0]))]
    assert not overlaps, f"two container calls ran at once on a worker sized for one container: {overlaps}"
    others = sorted((s["start"], s["stop"]) for t in tasks if not str(t["key"]).startswith(containers)
                    for s in t["startstops"] if s["action"] == "compute")
    assert others  # generate and grade calls hold no container: they are not serialized by the resource


def test_coordinator_killed_mid_run_rerun_pays_only_what_was_in_flight(tmp_path: Path) -> None:
    import os
    import signal

    with FakeAnthropic(responder=verdict) as server, \
            LocalCluster(tmp_path / "cluster", env={"ANTHROPIC_API_KEY": KEY}) as cluster:
        project = judged_project(tmp_path / "p", tmp_path / "marks", 0.5)
        with open(project / "evalkit.yaml", "a", encoding="utf-8") as fh:
            fh.write(f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n")
        env = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), "ANTHROPIC_API_KEY": KEY}
        run = popen_evalkit(["run", "-q", "--cluster", cluster.address], tmp_path, env)
        deadline = time.monotonic() + 300
        while server.message_calls() < 3 and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.02)
        assert run.poll() is None, "the run ended before the coordinator could be killed"
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
        before = prompts_paid(server)
        evalkit(project, "run", "-q", "--cluster", cluster.address, env={"ANTHROPIC_API_KEY": KEY}, timeout=900)
        after = prompts_paid(server)
    assert set(before) < set(after)  # the rerun judged what was left
    repaid = [p for p, n in after.items() if n > 1]
    assert len(repaid) <= 2, f"{len(repaid)} prompts paid again; at most the 2 workers' calls in flight may be"
    grades = [json.loads(p.read_text()) for p in (project / ".evalkit/artifacts").rglob("grades.json")]
    assert grades and all(g["judge"]["status"] == "judged" for g in grades if g["judge"])


def test_a_worker_sweeps_its_host_before_its_first_call_then_at_most_every_interval(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    """In this process, as in a worker: the first call sweeps the host's temporary folders; a dead owner's folder
    that appears later is swept once `SWEEP_EVERY_S` has passed, not at every call."""
    import subprocess
    import sys
    import tempfile

    from evalkit.executors import cluster as cluster_code

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(cluster_code, "_last_sweep", None)

    def dead_owners_folder(tag: str) -> Path:
        owner = subprocess.Popen([sys.executable, "-c", "pass"])
        start = procs.start_time(owner.pid)
        owner.wait()
        folder = tmp_path / f"evalkit-run-{owner.pid}.{start}-{tag}"
        folder.mkdir()
        return folder

    first = dead_owners_folder("a")
    cluster_code._sweep_host()
    assert not first.exists()
    second = dead_owners_folder("b")
    cluster_code._sweep_host()
    assert second.exists()  # within the interval: no sweep at every call
    monkeypatch.setattr(cluster_code, "SWEEP_EVERY_S", 0.0)
    cluster_code._sweep_host()
    assert not second.exists()
