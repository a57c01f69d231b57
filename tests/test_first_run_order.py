"""A first run starts the sandbox's tasks first (docs/operations/performance.md, "Demo first run"): the
demo's execute tasks are dispatched before anything else that is ready, the tasks the sandbox waits on or
runs (and grade) next, the rest after (evalkit.tasks FIRST / EARLY, evalkit.doitplus.PriorityReady)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers import REPO

PROBE = """
import json
import evalkit.tasks as t
from evalkit import doitplus
from doit.task import Task
out = {}
for group in ("execute", "validate", "health", "generate", "grade", "score"):
    for d in getattr(t, "task_" + group)():
        if d.get("name"):
            out[group + ":" + d["name"]] = doitplus.priority(Task(group + ":" + d["name"], None, meta=d.get("meta")))
print(json.dumps({"priorities": out, "default_tasks": t.doit_config()["default_tasks"]}))
"""


def test_the_demos_sandbox_tasks_come_first(tmp_path: Path) -> None:
    project = tmp_path / "demo"
    project.mkdir()
    shutil.copy(REPO / "evalkit.yaml", project / "evalkit.yaml")
    shutil.copytree(REPO / "cases", project / "cases")
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=project, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    got = found["priorities"]
    assert found["default_tasks"][:3] == ["execute", "validate", "health"]

    def of(prefix: str) -> set[int]:
        return {p for name, p in got.items() if name.startswith(prefix)}

    assert of("execute:") == {0} and len([n for n in got if n.startswith("execute:patch-bot:patch/")]) == 7
    assert of("validate:patch/") == {1} and of("health:patch/") == {1} and of("validate:agentic/") == {1}
    assert of("generate:patch-bot:patch/") == {1} and of("generate:kai-baseline:e2e/") == {1}
    assert of("grade:") == {1}
    # what no container waits on keeps doit's default, after them
    assert of("generate:naive-rewriter:migration/") == {2} and of("validate:migration/") == {2}
    assert of("generate:hint-bot:rag/") == {2} and of("score:") == {2} and of("health:rag/") == {2}
