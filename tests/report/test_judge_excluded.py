"""A judge metric of an output the judge gave no verdict on (judge_error, API failure, budget) is excluded, not
'not applicable', and a suite whose systems' judge means then stand on different cases says so (#29, Why 8)."""

from __future__ import annotations

from types import SimpleNamespace

from evalkit.artifacts import ScoresArtifact
from evalkit.config import ReportSettings
from evalkit.graders.rubric_config import shipped
from evalkit.graders.rubric_config import metric_infos
from evalkit.report.aggregates import JUDGE_ERROR, aggregate_scores, judge_subsets_note

CFG = SimpleNamespace(report=ReportSettings())


def scores(system: str, judge: list[float | None], status: list[str]) -> list[ScoresArtifact]:
    return [ScoresArtifact(system=system, suite="migration", case_id=f"c{i}", judge_status=st,
                           metrics={"codebleu": 0.5, **({"judge_mean": v} if v is not None else {})})
            for i, (v, st) in enumerate(zip(judge, status))]


def test_judge_errors_are_excluded_and_the_suite_says_the_subsets_differ() -> None:
    infos = {i.name: i for i in metric_infos(shipped("codejudge"))}
    assert infos["judge_mean"].judge_field and infos["judge_semantic_equivalence"].judge_field
    a = scores("a", [4.0, 3.0, None, 5.0, None], ["judged", "judged", "judge_error", "judged", "infra_error"])
    b = scores("b", [2.0, 3.0, 3.0, 4.0, None], ["judged", "judged", "judged", "judged", "not_configured"])
    per = {"a": aggregate_scores(a, ["judge_mean", "codebleu"], CFG),  # type: ignore[arg-type]
           "b": aggregate_scores(b, ["judge_mean", "codebleu"], CFG)}  # type: ignore[arg-type]
    ja, jb = per["a"]["judge_mean"], per["b"]["judge_mean"]
    assert (ja.n, ja.not_applicable, ja.excluded) == (3, 0, {JUDGE_ERROR: 2})
    # not configured is no verdict asked for: not applicable, as before
    assert (jb.n, jb.not_applicable, jb.excluded) == (4, 1, {})
    # a deterministic metric of the same outputs is untouched
    assert per["a"]["codebleu"].n == 5 and per["a"]["codebleu"].excluded == {}
    (note,) = judge_subsets_note(per, 5)
    assert note.startswith("Judge score compares systems over different subsets of the 5 cases (a 3, b 4): "
                           "2 output(s) without a judge verdict")
    same = {"a": per["a"], "c": per["a"]}
    assert judge_subsets_note(same, 5) == []  # the same subset everywhere: nothing to say
