"""The no-op gate (evalkit.noop_gate): a no-op `evalkit run` answered before the rest of evalkit is imported, byte for
byte what the whole process prints, and never when anything the no-op read has changed."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from evalkit import noop_gate
from helpers import make_project

GATE = Path(".evalkit") / "gate" / "noop.pickle"


def gate_run(project: Path, *args: str, env: dict[str, str] | None = None,
             stdout: int | None = None) -> tuple[int, str, str, bool]:
    """`python -X importtime -m evalkit run ARGS` in a new interpreter: (exit status, stdout, stderr without the
    import lines, whether the gate answered it: evalkit.cli was never imported)."""
    full_env = {**os.environ, "EVALKIT_CONFIG": str(project / "evalkit.yaml"), **(env or {})}
    full_env.pop("EVALKIT_RELEASE", None)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "evalkit", "run", *args], cwd=project.parent,
                          env=full_env, stdout=subprocess.PIPE if stdout is None else stdout, stderr=subprocess.PIPE,
                          text=True, timeout=300)
    lines = proc.stderr.splitlines(keepends=True)
    imported = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    assert "evalkit.noop_gate" in imported, proc.stderr[-2000:]
    stderr = "".join(line for line in lines if not line.startswith("import time:"))
    return proc.returncode, proc.stdout or "", stderr, "evalkit.cli" not in imported


def settle(project: Path, *args: str, env: dict[str, str] | None = None,
           last: tuple[int, str, str] | None = None) -> tuple[int, str, str]:
    """Run until a no-op (the full process) has left its gate, then check that the next run is answered by it and
    prints what that no-op printed, byte for byte (``last``: the run just before, not answered). Returns the no-op's
    (status, stdout, stderr)."""
    for _ in range(4):
        code, out, err, answered = gate_run(project, *args, env=env)
        if answered:
            assert last is not None and (code, out, err) == last, ((code, out, err), last)
            return last
        last = code, out, err
    raise AssertionError(f"no gate after four runs: {last}")


def _edit(path: Path) -> Callable[[], None]:
    return lambda: path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")


def test_a_noop_is_answered_by_its_gate_and_every_change_it_read_reopens_it(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    artifact = project / ".evalkit" / "artifacts" / "naive" / "migration" / "jpa-entity" / "output.json"
    code, out, err = settle(project)
    assert code == 0 and "naive" in out
    gate = pickle.loads((project / GATE).read_bytes())
    # the evalkit the runs import (from an unrelated folder: the installed one, a copy in site-packages after a plain
    # `pip install .`, where this process imports the checkout)
    used = subprocess.run([sys.executable, "-c", "import evalkit.noop_gate as g; print(g.__file__)"], cwd=project.parent,
                          capture_output=True, text=True, check=True).stdout.strip()
    assert str(Path(used).resolve().parent / "cli" / "__init__.py") in gate.paths, "evalkit's code"
    assert str(artifact) in gate.paths and str(artifact.parent) in gate.paths, "the manifest's targets, their folders"

    def new_case() -> None:
        folder = project / "cases" / "migration" / "cdi-two"
        shutil.copytree(project / "cases" / "migration" / "cdi-inject", folder)
        case = folder / "case.yaml"
        case.write_text(case.read_text(encoding="utf-8").replace("id: cdi-inject", "id: cdi-two"), encoding="utf-8")

    changes: list[tuple[str, Callable[[], None], dict[str, str], tuple[str, ...]]] = [
        ("an edited case file", _edit(project / "cases" / "migration" / "jpa-entity" / "case.yaml"), {}, ()),
        ("an edited config", _edit(project / "evalkit.yaml"), {}, ()),
        ("a touched artifact", lambda: os.utime(artifact, ns=(1, 1)), {}, ()),
        ("a retry marker beside an artifact", lambda: Path(f"{artifact}.retry").write_text(""), {}, ()),
        ("a new case folder", new_case, {}, ()),
        ("an edited template", _edit(next((project / "templates" / "site").glob("*.j2"))), {}, ()),
        ("another environment variable", lambda: None, {"SOME_VARIABLE": "1"}, ()),
        ("another argument", lambda: None, {}, ("--strict",)),
        ("the no-op manifest removed", lambda: (project / ".evalkit" / "cache" / "uptodate-manifest.pickle").unlink(),
         {}, ()),
    ]
    env: dict[str, str] = {}
    args: tuple[str, ...] = ()
    for what, change, more_env, more_args in changes:
        change()
        env, args = {**env, **more_env}, (*args, *more_args)
        code, out, err, answered = gate_run(project, *args, env=env)
        assert not answered, f"{what}: answered by a gate that no longer holds"
        assert settle(project, *args, env=env, last=(code, out, err)), what  # the no-op after it is answered again


def test_a_terminal_or_an_unreadable_gate_is_never_answered(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", cases=["jpa-entity"])
    said = settle(project)
    main, follower = os.openpty()
    try:
        code, _, _, answered = gate_run(project, stdout=follower)
    finally:
        os.close(main)
        os.close(follower)
    assert code == 0 and not answered, "the live display is drawn on a terminal"
    for junk in (b"not a pickle", pickle.dumps(noop_gate.Gate.__new__(noop_gate.Gate))):  # garbage, a gate without fields
        (project / GATE).write_bytes(junk)
        run = gate_run(project)
        assert run == (*said, False), "another layout: the whole process, which says the same"
        assert settle(project, last=said) == said


@pytest.mark.parametrize("printed", ["a warning\n", ""])
def test_a_noop_that_printed_more_than_its_kept_end_leaves_no_gate(tmp_path: Path, printed: str) -> None:
    config = tmp_path / "evalkit.yaml"
    gate = tmp_path / GATE
    rec = noop_gate._Recording(["evalkit", "run"], {}, str(tmp_path), str(gate))
    rec.noop = ([str(config)], "the table\n", "")
    rec.stdout.extend(["the table\n"])
    rec.stderr.extend([printed])
    old, noop_gate._recording = noop_gate._recording, rec
    try:
        kept = noop_gate.gate_for(0)
    finally:
        noop_gate._recording = old
    assert (kept is not None) == (printed == ""), "written only when it printed exactly its kept end"
    assert kept is None or kept[0] == str(gate)
