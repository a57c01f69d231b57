"""report.json: release-over-release diff, n and exclusions on every aggregate, same bytes twice,
corpus CodeBLEU apart from the per-case mean, token and cost totals."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from helpers import evalkit, make_project

# A system whose answers depend on mode.txt (watched, so editing it reruns generate):
# in mode r1 it fails on jpa-entity and rewrites cdi-inject; in mode r2 the other way round.
FLIP = textwrap.dedent('''\
    import json, os, sys
    from pathlib import Path
    case = json.loads(open(os.environ["EVALKIT_CASE"]).read())
    mode = Path(__file__).with_name("mode.txt").read_text().strip()
    broken = {"r1": "jpa-entity", "r2": "cdi-inject"}[mode]
    if case["case_id"] == broken:
        sys.exit("flip: no answer for this case")
    work = Path(os.environ["EVALKIT_CASE"]).parent
    legacy = (work / case["files"]["inputs.legacy_file"]).read_text()
    print(json.dumps({"files": {case["inputs"]["file_path"]: legacy.replace("javax.", "jakarta.")},
                      "usage": {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.5}}))
    ''')


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("summ") / "p"
    root.mkdir(parents=True)
    (root / "flip.py").write_text(FLIP, encoding="utf-8")
    (root / "mode.txt").write_text("r1\n", encoding="utf-8")
    systems = textwrap.dedent(f"""\
        systems:
          - name: naive
            adapter: command
            command: ["{{python}}", "-m", "evalkit.demo_systems.naive_rewriter"]
          - name: flip
            adapter: command
            command: ["{{python}}", "{root / 'flip.py'}"]
            watch: ["{root / 'flip.py'}", "{root / 'mode.txt'}"]
          - name: gold
            adapter: gold
        """)
    make_project(root, cases=["jpa-entity", "cdi-inject"], systems=systems)
    evalkit(root, "run")
    (root / "mode.txt").write_text("r2\n", encoding="utf-8")
    evalkit(root, "run", "--release", "r2")
    return root


def report(root: Path, release: str) -> dict:
    return json.loads((root / "site" / release / "report.json").read_text())


def changes(items: list[dict]) -> list[tuple[str, str, str]]:
    return [(c["suite"], c["case_id"], c["metric"]) for c in items]


def test_release_over_release_diff(project: Path) -> None:
    assert report(project, "r1")["diff"]["previous_release"] is None
    diff = report(project, "r2")["diff"]
    assert diff["previous_release"] == "r1"
    flip = diff["systems"]["flip"]
    # every headline metric the failing run had 0 for (complete: an error has no complete file), and
    # only those of the case that flipped; other helpers' migration metrics may come in between
    headline = ["answered", "assertion_score", "codebleu", "complete", "syntax_valid"]
    for kind, case in (("improved", "jpa-entity"), ("regressed", "cdi-inject")):
        got = changes(flip[kind])
        assert {(suite, cid) for suite, cid, _ in got} == {("migration", case)}
        assert [m for *_, m in got if m in headline] == headline
    improved = {c["metric"]: c for c in flip["improved"]}
    assert improved["answered"]["before"] == 0.0 and improved["answered"]["after"] == 1.0
    for unchanged in ("naive", "gold"):
        assert diff["systems"][unchanged] == {"improved": [], "regressed": []}


def _aggregates(rep: dict):
    for s in rep["systems"]:
        yield from s["metrics"].values()
    for su in rep["suites"]:
        for per in su["systems"].values():
            yield from per.values()
    for per_tag in rep["breakdowns"].values():
        for per in per_tag.values():
            yield from per.values()


def test_every_aggregate_carries_n_and_exclusions(project: Path) -> None:
    aggs = list(_aggregates(report(project, "r2")))
    assert aggs
    for a in aggs:
        assert isinstance(a["n"], int) and isinstance(a["excluded"], dict) and "not_applicable" in a
        assert a["method"]


def test_same_inputs_same_bytes(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalkit.project import load
    from evalkit.report.summarize import summarize

    monkeypatch.setenv("EVALKIT_RELEASE", "r2")
    loaded = load(str(project / "evalkit.yaml"), refresh=True)
    path = project / "site/r2/report.json"
    first = path.read_bytes()
    summarize(loaded.config, loaded.project)
    second = path.read_bytes()
    summarize(loaded.config, loaded.project)
    assert path.read_bytes() == second == first


def test_corpus_codebleu_apart_from_case_mean(project: Path) -> None:
    rep = report(project, "r2")
    suite = rep["suites"][0]
    for system in ("naive", "flip", "gold"):
        corpus = suite["corpus"][system]["corpus_codebleu"]
        assert 0.0 <= corpus <= 1.0
        assert "corpus_codebleu" not in suite["systems"][system]  # not mixed with per-case means
    assert suite["corpus"]["gold"]["corpus_codebleu"] == pytest.approx(1.0)
    assert "differs" in rep["metric_info"]["corpus_codebleu"]["description"]


def test_cost_and_token_totals(project: Path) -> None:
    flip = next(s for s in report(project, "r2")["systems"] if s["name"] == "flip")
    assert flip["metrics"]["cost_usd"]["value"] == 0.5  # one answered case at $0.5
    assert flip["metrics"]["tokens"]["value"] == 120
    assert flip["metrics"]["judge_cost_usd"]["value"] == 0.0
    assert flip["judge_tokens"] == 0
    assert flip["cost_per_resolved"] is None  # no patch suite: nothing "resolved"
