"""Semantic entropy in scores.json for a system with `samples: 4` (hand-computed clusters)."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest

from helpers import evalkit, make_project

# Sample 0 and 1 differ only in layout (one cluster after normalisation), 2 and 3 each differ.
SAMPLER = textwrap.dedent('''\
    import json, os, sys
    case = json.loads(open(os.environ["EVALKIT_CASE"]).read())
    i = int(os.environ["EVALKIT_SAMPLE"])
    bodies = ["class A { int x = 1; }", "class A {\\n    int x = 1;\\n}\\n", "class A { int x = 2; }",
              "class B { }"]
    print(json.dumps({"files": {case["inputs"]["file_path"]: bodies[i]}}))
    ''')


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("entropy") / "p"
    root.mkdir(parents=True)
    (root / "sampler.py").write_text(SAMPLER, encoding="utf-8")
    systems = textwrap.dedent(f"""\
        systems:
          - name: naive
            adapter: command
            command: ["{{python}}", "-m", "evalkit.demo_systems.naive_rewriter"]
          - name: sampler
            adapter: command
            samples: 4
            command: ["{{python}}", "{root / 'sampler.py'}"]
        """)
    make_project(root, cases=["jpa-entity"], systems=systems)
    evalkit(root, "run")
    return root


def scores(root: Path, system: str) -> dict:
    p = root / ".evalkit/artifacts" / system / "migration/jpa-entity/scores.json"
    return json.loads(p.read_text())["metrics"]


def test_entropy_of_four_samples_in_three_clusters(project: Path) -> None:
    m = scores(project, "sampler")
    # clusters {0, 1}, {2}, {3}: H = -(1/2 ln 1/2 + 2 * 1/4 ln 1/4) = 1.5 ln 2
    assert m["semantic_entropy"] == pytest.approx(1.5 * math.log(2))
    assert m["semantic_entropy_norm"] == pytest.approx(0.75)  # 1.5 ln 2 / ln 4
    assert m["entropy_clusters"] == 3
    assert m["largest_cluster_share"] == 0.5


def test_single_sample_system_has_no_entropy(project: Path) -> None:
    assert "semantic_entropy" not in scores(project, "naive")


def test_entropy_aggregates_in_report(project: Path) -> None:
    report = json.loads((project / "site/r1/report.json").read_text())
    sampler = next(s for s in report["systems"] if s["name"] == "sampler")
    agg = sampler["metrics"]["semantic_entropy"]
    assert agg["n"] == 1 and agg["value"] == pytest.approx(1.5 * math.log(2))
    assert report["metric_info"]["semantic_entropy"]["higher_is_better"] is False


def test_execution_signature_clusters():
    from evalkit.artifacts import ExecutionArtifact, OutputArtifact, Sample
    from evalkit.stages.score_entropy import cluster_keys

    class FakeCase:
        kind, language, inputs = "patch", "python", {}

    out = OutputArtifact(system="s", suite="p", case_id="c",
                         samples=[Sample(patch="a"), Sample(patch="b"), Sample(status="error"), Sample(patch="c")])
    runs = [{"status": "completed", "tests": {"t1": "passed", "t2": "failed"}},
            {"status": "completed", "tests": {"t2": "failed", "t1": "passed"}}, {"status": "case_error"},
            {"status": "completed", "tests": {"t1": "failed", "t2": "failed"}}]
    keys, method = cluster_keys(FakeCase(), out, ExecutionArtifact(system="s", suite="p", case_id="c", runs=runs))
    assert method == "execution"
    assert keys[0] == keys[1] and keys[2] != keys[3] and keys[0] != keys[3]
