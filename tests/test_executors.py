"""The executor seam (evalkit.executors): stage calls by content, run where the project is not.

Stage calls for a migration case, a patch case with its tree in the suite folder and a patch case
whose tree is `git archive` of a repository are built and run in-process, pickled, and run again
in a fresh interpreter whose working directory is elsewhere and from which the project folder has
been moved away: every file comes from the blob store. The artifacts are the same, run times and
time stamps aside. An outside distribution registers an executor by entry point, and
``executor: NAME`` in evalkit.yaml makes the run go through it.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from helpers import REPO, evalkit, make_project, plugin_dist, run, without_plugin_autoload

TIMES = {"wall_s", "duration_s", "created", "created_at", "started", "finished", "time_s", "elapsed_s", "run_s",
         "log", "log_bytes", "stdout", "stderr", "evalkit_version", "host"}
"""Fields that differ between two runs of the same call: times, and the test log (pytest prints its own
duration into it, so even its size moves by a byte or two)."""


def _without_times(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_times(v) for k, v in node.items() if k not in TIMES and not k.endswith("_s")}
    if isinstance(node, list):
        return [_without_times(v) for v in node]
    return node


def _differences(a: Any, b: Any, at: str = "") -> list[str]:
    """Where two JSON values differ (for the assertion message)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{at}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{at}[{i}]")]
    return [] if a == b else [f"{at}: {str(a)[:200]!r} != {str(b)[:200]!r}"]


def _project(root: Path) -> Path:
    """A migration case, a patch case (tree in the suite) and the same patch case on a git repository."""
    make_project(root, cases=["jpa-entity"], systems=textwrap.dedent("""\
        systems:
          - {name: naive, adapter: command, command: ["{python}", "-m", "evalkit.demo_systems.naive_rewriter"], suites: [migration]}
          - {name: patch-bot, adapter: command, command: ["{python}", "-m", "evalkit.demo_systems.patch_bot"], suites: [patch]}
          - {name: gold, adapter: gold}
        sandbox: {backend: local}
        """))
    src = REPO / "cases" / "patch"
    for suite in ("patch", "repo"):
        dest = root / "cases" / suite
        dest.mkdir(parents=True)
        shutil.copy(src / "suite.yaml", dest / "suite.yaml")
        without_plugin_autoload(dest / "suite.yaml")  # the host pytest's plug-ins are not the point (helpers)
        for name in ["_src", "round-half-up"]:
            shutil.copytree(src / name, dest / name)
    # the `repo` suite makes its tree from a git repository at a commit (a tree by digest, made on the coordinator)
    git = root.parent / "invlib.git"
    shutil.copytree(src / "_src" / "invlib", git)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(git), *argv], check=True, env=env, capture_output=True)
    commit = subprocess.run(["git", "-C", str(git), "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    suite_yaml = root / "cases" / "repo" / "suite.yaml"
    text = suite_yaml.read_text(encoding="utf-8").replace("  source_dir: ../_src/invlib\n",
                                                          f"  repo: {git}\n  base_commit: {commit}\n")
    suite_yaml.write_text(text, encoding="utf-8")
    return root


def test_stage_calls_run_by_content_where_the_project_is_not(tmp_path: Path) -> None:
    from evalkit.executors import blob_store, build_call, publish, run_call
    from evalkit.project import load

    project = _project(tmp_path / "proj")
    loaded = load(str(project / "evalkit.yaml"))
    cfg = loaded.config
    blobs = blob_store(cfg)
    calls, local = [], []
    for key, system in (("migration/jpa-entity", "naive"), ("patch/round-half-up", "patch-bot"),
                        ("repo/round-half-up", "gold")):
        case = loaded.project.case(key)
        chain = ["generate", "grade", "score"] if case.kind == "migration" else ["generate", "execute", "grade", "score"]
        inputs: dict[str, Any] = {}
        for stage in chain:
            call = build_call(cfg, stage, cfg.system(system), case,
                              {s: inputs.get(s) for s in {"generate": [], "execute": ["generate"],
                                                          "grade": ["generate", "execute"],
                                                          "score": ["generate", "execute", "grade"]}[stage]})
            artifact = run_call(call)  # in-process: the host's own files
            assert artifact.status == "ok", (key, stage, artifact.reason)
            inputs[stage] = artifact
            publish(call, blobs)
            calls.append(call)
            local.append(artifact.model_dump(mode="json"))
    validate = build_call(cfg, "validate", None, loaded.project.case("repo/round-half-up"), {})  # no system
    validation = run_call(validate)
    assert validation.status == "valid", validation.reason  # gold resolves, no patch does not: two sandbox runs
    publish(validate, blobs)
    calls.append(validate)
    local.append(validation.model_dump(mode="json"))
    tree_call = next(c for c in calls if c.stage == "execute" and c.case.suite == "repo")
    assert next(iter(tree_call.trees.values())).files, "the repository case's tree travels by digest"
    assert not any(c.trees for c in calls if c.case.suite == "patch"), "a tree in the suite folder is among the case's files"
    assert any(r["metrics"].get("resolved") == 1.0 for r in local if "metrics" in r), "the patch really resolved"
    pickled = tmp_path / "calls.pkl"
    pickled.write_bytes(pickle.dumps(calls))

    moved = tmp_path / "moved-away"
    project.rename(moved)  # the project's host paths are gone
    (tmp_path / "invlib.git").rename(tmp_path / "repo-moved-away")  # and so is the repository
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = textwrap.dedent(f"""\
        import json, pickle, sys
        from pathlib import Path
        from evalkit.executors import BlobStore, run_call
        calls = pickle.loads(Path({str(pickled)!r}).read_bytes())
        blobs = BlobStore({str(moved / ".evalkit" / "cache" / "blobs")!r})
        out = [run_call(c, blobs, Path("scratch")).model_dump(mode="json") for c in calls]
        print(json.dumps(out))
        """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=elsewhere, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    assert proc.returncode == 0, proc.stderr
    remote = json.loads(proc.stdout.splitlines()[-1])
    mine, theirs = [_without_times(a) for a in local], [_without_times(a) for a in remote]
    assert theirs == mine, _differences(mine, theirs)
    scratch = elsewhere / "scratch"
    assert (scratch / "snap").is_dir() and (scratch / "trees").is_dir(), "materialized from the blob store"
    assert not project.exists()


COUNTING = '''
from pathlib import Path

from evalkit.executors.local import LocalExecutor


class Counting(LocalExecutor):
    """Counts its calls in <work>/counted.txt, then runs them in-process."""

    def __init__(self, cfg, settings):
        self.file = cfg.work_path / "counted.txt"

    def run(self, call):
        with open(self.file, "a", encoding="utf-8") as fh:
            fh.write(f"{call.stage} {getattr(call.system, 'name', '-')} {call.case.key}\\n")
        return super().run(call)
'''


def test_an_outside_executor_registered_by_entry_point_runs_the_stages(tmp_path: Path) -> None:
    dist = plugin_dist(tmp_path / "dist", "evalkit-counting", {"evalkit.executors": {"counting": "counting_exec:Counting"}},
                       {"counting_exec.py": COUNTING})
    project = make_project(tmp_path / "proj", cases=["jpa-entity"], extra="executor: counting\n")
    env = {"PYTHONPATH": f"{dist}{os.pathsep}{REPO}"}
    done = run(project, env=env)
    lines = (project / ".evalkit" / "counted.txt").read_text(encoding="utf-8").splitlines()
    stages = sorted(t for t in done if t.split(":")[0] in ("generate", "grade", "score", "validate", "health"))
    assert len(lines) == len(stages) == 11  # 3 systems x (generate, grade, score) + the case's validation and health
    assert "generate naive migration/jpa-entity" in lines and "validate - migration/jpa-entity" in lines
    assert "health - migration/jpa-entity" in lines
    assert json.loads((project / "site" / "r1" / "report.json").read_text(encoding="utf-8"))["cases"]

    (project / "evalkit.yaml").write_text((project / "evalkit.yaml").read_text(encoding="utf-8")
                                          .replace("executor: counting", "executor: nowhere"), encoding="utf-8")
    bad = evalkit(project, "run", env=env, check=False)
    assert bad.returncode == 2
    assert "evalkit.yaml:" in bad.stderr and "unknown executor 'nowhere'" in bad.stderr and "counting" in bad.stderr


def test_call_pickles_small(tmp_path: Path) -> None:
    """A call carries digests, not file bytes: a migration case's call stays small when pickled."""
    from evalkit.executors import build_call
    from evalkit.project import load

    project = make_project(tmp_path / "proj", cases=["jpa-entity"])
    loaded = load(str(project / "evalkit.yaml"))
    case = loaded.project.case("migration/jpa-entity")
    call = build_call(loaded.config, "generate", loaded.config.system("naive"), case, {})
    size = len(pickle.dumps(call))
    legacy = sum(Path(p).stat().st_size for p in case.files)
    assert set(call.files) >= set(case.files)
    assert size < 64_000, size
    assert legacy > 0


def test_an_executor_failure_is_an_infrastructure_error_retried_next_run(tmp_path: Path) -> None:
    """An executor that cannot run a call (a worker lost) gives infra_error with a retry marker, not a bug."""
    from evalkit import plugins
    from evalkit.executors import ExecutorFailure
    from evalkit.tasks import run_stage

    class Lost:
        def run(self, call: Any) -> Any:
            raise ExecutorFailure(f"worker lost while running {call.stage}")

    plugins.registry("executors").register("lost", lambda cfg, settings: Lost(), replace=True)
    try:
        project = make_project(tmp_path / "proj", cases=["jpa-entity"], extra="executor: lost\n")
        assert run_stage("generate", str(project / "evalkit.yaml"), "naive", "migration/jpa-entity")
    finally:
        plugins.forget()
    output = project / ".evalkit" / "artifacts" / "naive" / "migration" / "jpa-entity" / "output.json"
    data = json.loads(output.read_text(encoding="utf-8"))
    assert data["status"] == "infra_error" and "worker lost while running generate" in data["reason"]
    assert Path(f"{output}.retry").exists()
    assert not (project / ".evalkit" / "bugs").exists()


def test_blob_store_takes_the_same_files_from_many_threads_at_once(tmp_path: Path) -> None:
    """The cluster executor publishes calls from doit's threads: blobs of the same content arrive together."""
    from concurrent.futures import ThreadPoolExecutor

    from evalkit.executors.blobs import BlobStore, file_ref

    sources = []
    for i in range(40):
        src = tmp_path / "src" / f"f{i % 5}.txt"  # 5 contents, each put by 8 threads
        src.parent.mkdir(exist_ok=True)
        src.write_text(f"content {i % 5}\n" * 400_000)
        sources.append(str(src))
    for round_ in range(5):
        store = BlobStore(tmp_path / f"blobs{round_}")
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda s, store=store: store.put_file(s, file_ref(s)), sources))  # raises if a thread lost its file
        for s in sources:
            ref = file_ref(s)
            assert store.path(ref.sha256).read_bytes() == Path(s).read_bytes()
        assert not [p for p in store.folder.rglob("*.tmp")]
