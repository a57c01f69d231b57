"""Judge, rubric and ragas outcomes and sandbox runs are models inside the artifacts (evalkit.outcomes).

tests/data/artifacts_v1/ holds artifacts the demo wrote before they were typed (judge usage under the
Messages API's key names, runs of every shape): they load as models, unchanged on a round trip. A
misspelled key in a judge outcome is an error naming it. A judge call's cache tokens, as the loopback
Messages API reports them, reach scores.json ``judge_usage``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalkit.artifacts import ExecutionArtifact, GradesArtifact, read_artifact
from evalkit.llm.pricing import Usage
from evalkit.outcomes import ChangesJudgeOutcome, JudgeOutcome, RubricOutcome, SandboxRun
from fake_server import FakeAnthropic, Reply
from helpers import make_project, run

OLD = Path(__file__).parent / "data" / "artifacts_v1"
STAGE = {"execution.json": "execute", "grades.json": "grade", "scores.json": "score"}


def old(rel: str) -> tuple[dict, object]:
    path = OLD / rel
    return json.loads(path.read_text(encoding="utf-8")), read_artifact(path, STAGE[path.name])


@pytest.mark.parametrize("path", sorted(OLD.rglob("*.json")), ids=lambda p: str(p.relative_to(OLD)))
def test_old_layout_artifacts_load_typed_and_round_trip(path: Path) -> None:
    art = read_artifact(path, STAGE[path.name])
    assert type(art).model_validate_json(art.model_dump_json()) == art
    raw = json.loads(path.read_text(encoding="utf-8"))
    dumped = art.model_dump(mode="json")
    if isinstance(art, ExecutionArtifact):  # a run is written with the keys it was given, no more
        assert all(isinstance(r, SandboxRun) for r in art.runs)
        assert dumped["runs"] == raw["runs"]
    if isinstance(art, GradesArtifact):
        assert dumped["extra"].keys() == raw["extra"].keys()  # no kind gains another kind's keys


def test_old_patch_grades_keep_the_changed_files_and_read_old_usage_keys() -> None:
    raw, grades = old("patch-bot/patch/remove-below-zero/grades.json")
    assert isinstance(grades, GradesArtifact) and isinstance(grades.judge, ChangesJudgeOutcome)
    assert [f.path for f in grades.judge.files] == [f["path"] for f in raw["judge"]["files"]]
    assert grades.judge.max_files == raw["judge"]["max_files"]
    # the Messages API's names, as grades.json held them before one Usage: read into the shared fields
    raw["judge"]["usage"] = {"input_tokens": 10, "output_tokens": 4, "cache_read_input_tokens": 1200,
                             "cache_creation_input_tokens": 300}
    usage = GradesArtifact.model_validate(raw).judge.usage  # type: ignore[union-attr]
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.input_tokens) == (1200, 300, 10)
    assert "cache_read_tokens" in usage.model_dump() and "cache_read_input_tokens" not in usage.model_dump()


def test_a_judged_patch_outcome_is_written_with_its_files() -> None:
    """A ChangesJudgeOutcome with judged scores (a loopback judge's, from tests/graders/test_judge_changes.py) is
    written as one: an untagged union wrote it as a JudgeOutcome and lost the changed files."""
    raw, grades = old("gold/patch/slug-lowercase/grades.json")
    assert isinstance(grades, GradesArtifact) and isinstance(grades.judge, ChangesJudgeOutcome)
    assert grades.judge.status == "judged" and grades.judge.files
    rebuilt = GradesArtifact(**{k: getattr(grades, k) for k in GradesArtifact.model_fields})
    assert rebuilt.model_dump(mode="json")["judge"]["files"] == raw["judge"]["files"]


def test_old_rag_generation_and_run_shapes_read_as_attributes() -> None:
    raw, rag = old("hint-bot/rag/ejb-stateless-to-cdi/grades.json")
    assert isinstance(rag, GradesArtifact) and isinstance(rag.judge, JudgeOutcome)
    assert rag.judge.status == raw["judge"]["status"] and rag.extra.ragas is not None
    assert {n: m.status for n, m in rag.extra.ragas.metrics.items()} == \
        {n: m["status"] for n, m in raw["extra"]["ragas"]["metrics"].items()}
    raw, gen = old("codegen-careful/generation/orders-model-injected/grades.json")
    assert isinstance(gen, GradesArtifact) and isinstance(gen.rubric, RubricOutcome) and gen.judge is None
    assert [r.id for r in gen.rubric.results] == [r["id"] for r in raw["rubric"]["results"]]
    assert [d.passed for d in gen.extra.injection or []] == [d["passed"] for d in raw["extra"]["injection"]]
    raw, e2e = old("kai-full/e2e/ledger/execution.json")
    assert isinstance(e2e, ExecutionArtifact)
    loop = e2e.runs[0]
    assert [it.iteration for it in loop.iterations or []] == [it["iteration"] for it in raw["runs"][0]["iterations"]]
    assert (loop.stable_at, loop.passed, loop.final_patch) == \
        (raw["runs"][0]["stable_at"], raw["runs"][0]["passed"], raw["runs"][0]["final_patch"])
    assert loop.harness_resolved is None and loop.patch_applied is False  # fields it never had: the model's defaults
    raw, agentic = old("kai-full/agentic/catalog/execution.json")
    assert isinstance(agentic, ExecutionArtifact)
    assert [i.present for i in agentic.runs[0].incidents or []] == [i["present"] for i in raw["runs"][0]["incidents"]]


@pytest.mark.parametrize("where,bad", [
    ("judge", {"status": "judged", "scroes": {"semantic_equivalence_score": 5.0}}),
    ("rubric", {"status": "judged", "scor": 1.0}),
    ("judge", {"status": "judgd"}),
])
def test_a_misspelled_key_in_an_outcome_is_an_error_naming_it(tmp_path: Path, where: str, bad: dict) -> None:
    raw, _ = old("rule-rewriter/migration/cdi-inject/grades.json")
    raw[where] = bad
    path = tmp_path / "grades.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        read_artifact(path, "grade")
    text = str(info.value)
    assert where in text and (("scroes" in text or "scor" in text) or "judgd" in text)


def test_a_misspelled_key_in_a_run_is_an_error_but_a_kind_may_add_its_own_extra() -> None:
    raw, _ = old("patch-bot/patch/remove-below-zero/execution.json")
    raw["runs"][0]["resloved"] = True
    with pytest.raises(ValidationError, match="resloved"):
        ExecutionArtifact.model_validate(raw)
    raw, _ = old("rule-rewriter/migration/cdi-inject/grades.json")
    raw["extra"] = {"my_kind": {"found": 3}}  # an outside package's kind keeps its own grading data
    grades = GradesArtifact.model_validate(raw)
    assert grades.model_dump(mode="json")["extra"] == {"my_kind": {"found": 3}}


def test_one_usage_adds_every_field() -> None:
    a = Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4, cost_usd=0.5)
    assert (a + a).model_dump() == {"input_tokens": 2, "output_tokens": 4, "cache_read_tokens": 6,
                                    "cache_write_tokens": 8, "cost_usd": 1.0}


def cached_verdict(body: dict) -> Reply:
    answer = {"semantic_equivalence_score": 4, "rule_adherence_score": 4, "faithfulness_score": 4,
              "code_quality_score": 4, "is_compilable": True, "detailed_notes": "fine"}
    return Reply(text="```json\n" + json.dumps(answer) + "\n```", cache_read=1200, cache_write=300)


def test_judge_cache_tokens_reach_scores_json(tmp_path: Path) -> None:
    with FakeAnthropic(responder=cached_verdict) as server:
        project = make_project(tmp_path / "p", cases=["jpa-entity"],
                               extra=f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n")
        run(project, env={"ANTHROPIC_API_KEY": "sk-ant-test-cache"})
        assert server.message_calls() >= 1
    seen = 0
    for path in (project / ".evalkit/artifacts").rglob("scores.json"):
        grades = json.loads(path.with_name("grades.json").read_text(encoding="utf-8"))
        if (grades.get("judge") or {}).get("status") != "judged":
            continue  # decided without a call (e.g. a file that does not parse)
        scores = json.loads(path.read_text(encoding="utf-8"))
        usage = scores["judge_usage"]
        assert (usage["cache_read_tokens"], usage["cache_write_tokens"]) == (1200, 300), path
        assert usage["input_tokens"] > 0 and usage["cost_usd"] > 0
        assert (grades["judge"]["usage"]["cache_read_tokens"], grades["judge"]["usage"]["cache_write_tokens"]) == \
            (1200, 300)
        seen += 1
    assert seen >= 2
