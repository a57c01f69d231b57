"""The plug-in contracts (evalkit.contracts): scorers, added metrics and assertions take one context object, and
the older positional forms keep working with the same numbers."""

from __future__ import annotations

import pytest

from evalkit import api, plugins
from evalkit.artifacts import OutputArtifact, Sample
from evalkit.casemodels import AssertionSpec
from evalkit.contracts import (AssertionContext, AssertionOutcome, JudgeContext, MetricValue, ScoreContext, ScoreResult,
                               score_with, takes_context)
from evalkit.graders.assertions import run_assertions
from evalkit.kinds import kind, kinds
from evalkit.kinds.base import Kind
from evalkit.stages.grade import grade
from evalkit.stages.score import score

CASE = "migration/jpa-entity"


def _answer(case, text: str | None = None) -> OutputArtifact:
    """The legacy file with javax imports turned into jakarta ones (or ``text``) as the answer."""
    legacy = case.read("inputs.legacy_file")
    answer = legacy.replace("javax.", "jakarta.") if text is None else text
    return OutputArtifact(system="naive", suite=case.suite, case_id=case.id, status="ok",
                          samples=[Sample(files={case.inputs.file_path: answer})])


def test_takes_context_tells_the_two_forms_apart() -> None:
    def ctx_form(ctx): ...

    def positional(cfg, case, output, execution, grades): ...

    def keyword_extra(ctx, *, verbose=False): ...

    assert takes_context(ctx_form) and takes_context(keyword_extra) and takes_context(lambda ctx: None)
    assert not takes_context(positional) and not takes_context(lambda *a: None)
    assert not takes_context(lambda case, output, execution, grades: None)


def test_context_scorers_give_the_numbers_the_positional_ones_give(migration, monkeypatch) -> None:
    case = migration.case(CASE)
    system = migration.system("naive")
    output = _answer(case)
    grades = grade(migration.cfg, system, case, output)
    kd = kind(case.kind)
    before = score(migration.cfg, system, case, output, None, grades)
    positional = kd.scorers()
    assert positional and not any(takes_context(fn) for fn in positional)  # evalkit's own: the older form

    def as_context(fn):
        return lambda ctx: ScoreResult(score_with(fn, ctx).values, "same")

    monkeypatch.setattr(type(kd), "scorers", lambda self: [as_context(fn) for fn in positional])
    after = score(migration.cfg, system, case, output, None, grades)
    assert after.metrics == before.metrics and "codebleu" in after.metrics


def test_a_context_scorer_reads_the_reference(migration, monkeypatch) -> None:
    case = migration.case(CASE)
    system = migration.system("naive")
    output = _answer(case, case.read("inputs.legacy_file"))  # the legacy file returned unchanged
    grades = grade(migration.cfg, system, case, output)
    seen: list[ScoreContext] = []

    def same_file(ctx: ScoreContext) -> ScoreResult:
        seen.append(ctx)
        expected = ctx.case.read("reference.expected_file")
        return ScoreResult({"same_as_reference": float(ctx.sample.files[ctx.case.inputs.file_path] == expected)},
                           "the answer's file against the reference's")

    monkeypatch.setattr(type(kind(case.kind)), "scorers", lambda self: [same_file])
    s = score(migration.cfg, system, case, output, None, grades)
    assert s.metrics["same_as_reference"] == 0.0  # the legacy file is not the reference
    right = score(migration.cfg, system, case, _answer(case, case.read("reference.expected_file")), None, grades)
    assert right.metrics["same_as_reference"] == 1.0
    assert seen[0].reference is case.reference and seen[0].grades is grades and seen[0].execution is None


def test_register_metric_takes_the_scorer_context_of_a_kind_scorer(migration, added_metrics) -> None:
    case = migration.case(CASE)
    system = migration.system("naive")
    output = _answer(case)
    grades = grade(migration.cfg, system, case, output)

    def id_length(ctx: ScoreContext) -> MetricValue:
        return MetricValue(len(ctx.case.id) / 100, "length of the case id")

    api.register_metric("ctx_id_length", description="Length of the case id / 100.", scale="any",
                        higher_is_better=None, scorer=id_length)
    api.register_metric("old_id_length", description="The same, older form.", scale="any", higher_is_better=None,
                        scorer=lambda case, output, execution, grades: len(case.id) / 100)
    s = score(migration.cfg, system, case, output, None, grades)
    assert s.metrics["ctx_id_length"] == s.metrics["old_id_length"] == len(case.id) / 100


@pytest.fixture()
def fresh_registries():
    """Forget the parts a test registers in this process."""
    yield
    plugins.forget()


def test_an_assertion_type_sees_the_case_and_its_reference(migration, fresh_registries) -> None:
    case = migration.case(CASE)
    seen: list[AssertionContext] = []

    def mentions_reference(ctx: AssertionContext) -> AssertionOutcome:
        seen.append(ctx)
        assert ctx.case is not None
        expected = ctx.case.read("reference.expected_file")
        return AssertionOutcome(ctx.text.strip() == expected.strip(), "main file against the reference's")

    def older(spec, text, sample, language):
        return "javax" in text, "older form"

    reg = plugins.registry("assertions")
    reg.register("test_same_as_reference", mentions_reference, replace=True)
    reg.register("test_older_form", older, replace=True)
    specs = [AssertionSpec(type="test_same_as_reference"), AssertionSpec(type="test_older_form")]
    sample = _answer(case, case.read("inputs.legacy_file")).first  # unchanged: not the reference, still javax
    results, score_ = run_assertions(specs, sample, case.language, case.inputs.file_path, case=case,
                                     config=migration.cfg)
    assert [r.passed for r in results] == [False, True] and score_ == 0.5
    assert results[0].detail == "main file against the reference's" and results[1].detail == "older form"
    assert seen[0].reference is case.reference and seen[0].config is migration.cfg


def test_the_builtin_parts_follow_their_contracts() -> None:
    """Every registered assertion type of evalkit's takes the context form; every kind is a Kind whose scorers
    are callables."""
    for name in plugins.registry("assertions").names():
        if plugins.registry("assertions").source(name) == plugins.OWN:
            assert takes_context(plugins.registry("assertions").get(name)), name
    for name, k in kinds().items():
        assert isinstance(k, Kind) and all(callable(fn) for fn in k.scorers()), name


def test_a_kinds_judge_takes_the_judge_context_or_the_older_arguments(migration, monkeypatch) -> None:
    from evalkit.graders.judge_dispatch import judge_case
    from evalkit.outcomes import RubricOutcome

    case = migration.case(CASE)
    sample = _answer(case).first
    kd_class = type(kind(case.kind))
    verdict = RubricOutcome(status="judged", score=1.0)
    seen: list[JudgeContext] = []

    def in_context(self, ctx: JudgeContext):
        seen.append(ctx)
        return verdict

    monkeypatch.setattr(kd_class, "judge", in_context)
    assert judge_case(migration.cfg, case, sample, case.inputs.file_path) is verdict
    assert seen[0].case is case and seen[0].reference is case.reference and seen[0].main_file == case.inputs.file_path

    def older(self, cfg, case_, sample_, main_file):
        seen.append(main_file)
        return verdict

    monkeypatch.setattr(kd_class, "judge", older)
    assert judge_case(migration.cfg, case, sample, "x.java") is verdict and seen[-1] == "x.java"
