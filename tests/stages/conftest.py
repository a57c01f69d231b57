"""A tiny migration project (two demo cases, a few command systems), loaded, for calling stage functions directly."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers import make_project, patch_project

# A system that counts its runs (one line per run in runs-<name>.txt beside it) and then answers with
# the case's legacy file, javax imports turned into jakarta ones; with FAIL in its name it exits 3 instead.
COUNTING = textwrap.dedent('''\
    import json, os, sys
    from pathlib import Path
    here = Path(__file__).parent
    with open(here / f"runs-{Path(__file__).stem}.txt", "a") as fh:
        fh.write("run\\n")
    if "fail" in Path(__file__).stem:
        sys.exit("boom: no answer for this case")
    case = json.loads(open(os.environ["EVALKIT_CASE"]).read())
    legacy = (Path(os.environ["EVALKIT_CASE"]).parent / case["files"]["inputs.legacy_file"]).read_text()
    print(json.dumps({"files": {case["inputs"]["file_path"]: legacy.replace("javax.", "jakarta.")}}))
    ''')


@dataclass
class Loaded:
    """A loaded project and its parts by name."""

    root: Path
    cfg: Any
    project: Any

    def system(self, name: str) -> Any:
        return next(s for s in self.cfg.systems if s.name == name)

    def case(self, key: str) -> Any:
        return self.project.case(key)

    def runs(self, system: str) -> int:
        """How often a counting system ran."""
        path = self.root / f"runs-{system}.txt"
        return len(path.read_text().splitlines()) if path.exists() else 0

    def reload(self) -> Loaded:
        from evalkit.project import load

        loaded = load(str(self.root / "evalkit.yaml"), refresh=True)
        return Loaded(self.root, loaded.config, loaded.project)


@pytest.fixture()
def migration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Loaded:
    """naive (the demo rewriter, baseline), counter and fails (COUNTING), gold; cases jpa-entity and cdi-inject.
    No judge key: the judge is not configured, so grading needs no network."""
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "EVALKIT_CONFIG", "EVALKIT_RELEASE", "EVALKIT_SELECT"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "p"
    root.mkdir()
    for name in ("counter", "fails"):
        (root / f"{name}.py").write_text(COUNTING, encoding="utf-8")
    systems = textwrap.dedent(f"""\
        systems:
          - name: naive
            adapter: command
            command: ["{{python}}", "-m", "evalkit.demo_systems.naive_rewriter"]
          - name: counter
            adapter: command
            command: ["{{python}}", "{root / 'counter.py'}"]
          - name: fails
            adapter: command
            command: ["{{python}}", "{root / 'fails.py'}"]
          - name: gold
            adapter: gold
        """)
    make_project(root, cases=["jpa-entity", "cdi-inject"], systems=systems)
    return Loaded(root, None, None).reload()


@pytest.fixture()
def patch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, dict[str, Any]]:
    """(cfg, case, systems by name) of a one-case patch project (patch/round-half-up; systems gold and empty)
    on the local sandbox backend: real pytest processes, no container."""
    from evalkit.project import load

    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "EVALKIT_CONFIG", "EVALKIT_RELEASE", "EVALKIT_SELECT"):
        monkeypatch.delenv(name, raising=False)
    root = patch_project(tmp_path / "p", backend="local", cases=["round-half-up"], systems=("gold", "empty"))
    loaded = load(str(root / "evalkit.yaml"), refresh=True)
    return loaded.config, loaded.project.case("patch/round-half-up"), {s.name: s for s in loaded.config.systems}
