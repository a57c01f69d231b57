"""A recording is the system's answer: editing it (or adding a missing one) reruns that system's
generate stage for that case, and the new answer reaches the scores; nothing else reruns."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from helpers import executed, evalkit, make_project


def _project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "p", systems=textwrap.dedent("""\
        systems:
          - {name: naive, adapter: command, command: ["{python}", "-m", "evalkit.demo_systems.naive_rewriter"]}
          - {name: rec, adapter: recorded, path: outputs}
        """))
    out = root / "outputs" / "migration"
    out.mkdir(parents=True)
    case = json.loads(json.dumps({"files": {}}))
    legacy = next((root / "cases/migration/jpa-entity/legacy").iterdir()).read_text()
    main_file = _main_file(root, "jpa-entity")
    case["files"][main_file] = legacy  # first recording: the legacy file, unchanged
    (out / "jpa-entity.json").write_text(json.dumps(case))
    return root


def _main_file(root: Path, case_id: str) -> str:
    text = (root / f"cases/migration/{case_id}/case.yaml").read_text()
    return next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.strip().startswith("file_path:"))


def _scores(root: Path, case_id: str) -> dict:
    return json.loads((root / f".evalkit/artifacts/rec/migration/{case_id}/scores.json").read_text())


def test_editing_or_adding_a_recording_reruns_only_its_generate(tmp_path: Path) -> None:
    root = _project(tmp_path)
    evalkit(root, "run")
    assert _scores(root, "jpa-entity")["metrics"]["unchanged"] == 1.0
    assert _scores(root, "cdi-inject")["status"] == "not_attempted"
    assert executed(evalkit(root, "run")) == set()

    # the recording is replaced by the expected file: generate of that case reruns, the answer changes
    expected = next((root / "cases/migration/jpa-entity/expected").iterdir()).read_text()
    path = root / "outputs/migration/jpa-entity.json"
    path.write_text(json.dumps({"files": {_main_file(root, "jpa-entity"): expected}}))
    ran = executed(evalkit(root, "run"))
    assert "generate:rec:migration/jpa-entity" in ran
    assert not any(t.startswith("generate:naive") or t == "generate:rec:migration/cdi-inject" for t in ran), ran
    assert _scores(root, "jpa-entity")["metrics"]["unchanged"] == 0.0

    # a recording added for a case that had none: attempted now
    (root / "outputs/migration/cdi-inject.json").write_text(json.dumps({"files": {}}))
    ran = executed(evalkit(root, "run"))
    assert "generate:rec:migration/cdi-inject" in ran
    assert _scores(root, "cdi-inject")["status"] != "not_attempted"
