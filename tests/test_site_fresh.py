"""Every page and JSON file is a function of what it shows (issue 27, item 1): after any sequence of
edits, judge faults and heals, an incremental run's site equals a from-scratch run's site, byte for byte.

Real `python -m evalkit run` subprocesses against a loopback Messages API. The systems are `gold` and
`empty`, whose recorded wall times are 0, so no timing differs between the two sites.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from fake_server import FakeAnthropic, Reply, error
from helpers import evalkit, make_project

ENV = {"ANTHROPIC_API_KEY": "sk-ant-test-fresh-0000"}
VERDICT = {"semantic_equivalence_score": 4, "rule_adherence_score": 5, "faithfulness_score": 4,
           "code_quality_score": 4, "is_compilable": True, "detailed_notes": "fine"}
VERDICT_TEXT = "Step 1: equivalent.\n```json\n" + json.dumps(VERDICT) + "\n```"
SYSTEMS = "systems:\n  - name: gold\n    adapter: gold\n  - name: empty\n    adapter: empty\n"
CASES = ["jpa-entity", "cdi-inject"]


def healthy(body: dict[str, Any]) -> Reply:
    return Reply(text=VERDICT_TEXT)


MODES = {"heal": healthy, "fault429": lambda body: error(429), "fault500": lambda body: error(500)}


def site_files(project: Path) -> dict[str, bytes]:
    """Every published file of the site (dot-files are evalkit's own indexes, not content)."""
    site = project / "site"
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(site).parts)}


def test_a_case_that_leaves_the_project_leaves_the_site(tmp_path: Path) -> None:
    with FakeAnthropic(responder=healthy) as server:
        project = project_with_judge(tmp_path / "inc" / "p", server.base_url)
        evalkit(project, "run", env=ENV, check=False)
        pages = project / "site/r1/cases/migration"
        assert 'id="picker"' in (pages / "cdi-inject.html").read_text()  # two systems side by side on request
        apply(project, "drop:cdi-inject")
        evalkit(project, "run", env=ENV, check=False)
        assert not list(pages.glob("cdi-inject.*")), sorted(p.name for p in pages.iterdir())
        manifest = json.loads((project / "site/manifest.json").read_text())
        assert not any("cdi-inject" in f for r in manifest["releases"] for f in r["files"])
        assert_same_site(project, tmp_path, "dropped")


def fresh_copy(project: Path, dest: Path) -> Path:
    """The project's inputs only (config, cases, templates): no artifacts, caches, doit database or site."""
    dest.mkdir(parents=True)
    for part in ("cases", "templates"):
        shutil.copytree(project / part, dest / part)
    shutil.copy(project / "evalkit.yaml", dest / "evalkit.yaml")
    return dest


def assert_same_site(project: Path, tmp: Path, label: str) -> None:
    fresh = fresh_copy(project, tmp / f"fresh-{label}" / "p")
    evalkit(fresh, "run", env=ENV)
    mine, theirs = site_files(project), site_files(fresh)
    assert sorted(mine) == sorted(theirs), (label, set(mine) ^ set(theirs))
    differ = [name for name in mine if mine[name] != theirs[name]]
    assert not differ, (label, differ)


def case_dir(project: Path, name: str) -> Path:
    """The case's folder, in the project or set aside (`drop:`)."""
    inside = project / f"cases/migration/{name}"
    return inside if inside.exists() else project / f"aside-{name}"


def apply(project: Path, step: str) -> None:
    if step.startswith("tag:"):
        case = case_dir(project, step[4:]) / "case.yaml"
        case.write_text(case.read_text().replace("tags: [", "tags: [e, ", 1))
    elif step.startswith("legacy:"):
        legacy = next((case_dir(project, step[7:]) / "legacy").iterdir())
        legacy.write_text(legacy.read_text() + "\n// edited\n")
    elif step.startswith("drop:"):  # the case leaves the project (kept aside), or comes back
        case, aside = project / f"cases/migration/{step[5:]}", project / f"aside-{step[5:]}"
        (case if case.exists() else aside).rename(aside if case.exists() else case)
    elif step == "samples":
        cfg = project / "evalkit.yaml"
        text = cfg.read_text()
        cfg.write_text(text.replace("  samples: 2\n", "") if "  samples: 2\n" in text
                       else text.replace("  model: claude-test-judge\n", "  model: claude-test-judge\n  samples: 2\n"))


def project_with_judge(root: Path, base_url: str) -> Path:
    project = make_project(root, cases=CASES, systems=SYSTEMS, extra=(
        f"judge:\n  model: claude-test-judge\n  base_url: {base_url}\n  timeout_s: 2\n  max_retries: 0\n"
        "  circuit_after: 2\n"))
    cfg = project / "evalkit.yaml"
    cfg.write_text(cfg.read_text().replace("baseline: naive", "baseline: empty"))
    return project


def test_healed_judge_fault_leaves_no_stale_case_page(tmp_path: Path) -> None:
    """The bug: a rerun that re-graded 429 `infra_error` verdicts left the case pages and their JSON saying
    "infra error", because the per-case index was keyed on the scores' provenance, which a heal does not change."""
    with FakeAnthropic(responder=MODES["fault429"]) as server:
        project = project_with_judge(tmp_path / "inc" / "p", server.base_url)
        evalkit(project, "run", env=ENV, check=False)
        detail = json.loads((project / "site/r1/cases/migration/jpa-entity.json").read_text())
        assert detail["systems"]["gold"]["grades"]["judge"]["status"] == "infra_error"
        server.responder = healthy
        evalkit(project, "run", env=ENV, check=False)
        detail = json.loads((project / "site/r1/cases/migration/jpa-entity.json").read_text())
        assert detail["systems"]["gold"]["grades"]["judge"]["status"] == "judged"
        page = (project / "site/r1/cases/migration/jpa-entity.html").read_text()
        assert "rate_limited" not in page and "infra error" not in page.lower()
        assert_same_site(project, tmp_path, "healed")


STEPS = ["tag:jpa-entity", "tag:cdi-inject", "legacy:jpa-entity", "legacy:cdi-inject", "samples", "drop:cdi-inject",
         "fault429", "fault500", "heal"]


@pytest.mark.parametrize("seed", [7, 2027])
def test_random_edits_faults_and_heals_leave_the_site_a_fresh_run_makes(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    steps = [rng.choice(STEPS) for _ in range(5)] + ["heal"]
    with FakeAnthropic(responder=healthy) as server:
        project = project_with_judge(tmp_path / "inc" / "p", server.base_url)
        evalkit(project, "run", env=ENV, check=False)
        mode = "heal"
        for i, step in enumerate(steps):
            if step in MODES:
                mode = step
                server.responder = MODES[step]
            else:
                apply(project, step)
            evalkit(project, "run", env=ENV, check=False)
            if mode == "heal" and (step in MODES or i == len(steps) - 1):  # a healthy judge: both runs see the same answers
                assert_same_site(project, tmp_path, f"{seed}-{i}-{step}")
