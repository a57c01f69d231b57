"""Why a metric has its value: the explanations scorers give (evalkit.contracts.ScoreResult, MetricValue) land in
scores.json and on the case page, escaped; the built-in headline metrics say why."""

from __future__ import annotations

from html.parser import HTMLParser


from evalkit import api
from evalkit.artifacts import OutputArtifact, Sample, ScoresArtifact, artifact_path
from evalkit.contracts import MetricValue, ScoreContext, ScoreResult
from evalkit.fsutil import atomic_write_json
from evalkit.kinds import kind
from evalkit.report.render import render_site
from evalkit.report.summarize import summarize
from evalkit.stages.grade import grade
from evalkit.stages.score import score

CASE = "migration/jpa-entity"
PAYLOAD = '<img src=x onerror="alert(1)"><script>window.__pwned=1</script>'


class Page(HTMLParser):
    """A page's <script> texts, on* attributes and the text of every `dd` of the panels' 'why' lists."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.handlers: list[str] = []
        self.why: list[str] = []
        self._in: str | None = None
        self._why_list = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handlers += [name for name, _ in attrs if name.startswith("on")]
        if tag == "dl":
            self._why_list = "why" in (dict(attrs).get("class") or "").split()
        self._in = tag
        if tag == "dd" and self._why_list:
            self.why.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts.append(data)
        elif self._in == "dd" and self._why_list:
            self.why[-1] += data


def _answer(case, text: str) -> OutputArtifact:
    return OutputArtifact(system="naive", suite=case.suite, case_id=case.id, status="ok",
                          samples=[Sample(files={case.inputs.file_path: text})])


def test_a_plugin_scorer_s_explanations_land_in_scores_and_on_the_case_page(migration, monkeypatch,
                                                                            added_metrics) -> None:
    cfg, case = migration.cfg, migration.case(CASE)
    system = migration.system("naive")
    output = _answer(case, case.read("inputs.legacy_file").replace("javax.", "jakarta."))
    grades = grade(cfg, system, case, output)
    kd = kind(case.kind)
    own = type(kd).scorers

    def files_named(ctx: ScoreContext) -> ScoreResult:  # quotes the answer: a file name a system chose
        return ScoreResult({"named_files": float(len(ctx.sample.files)), "answered": 1.0},
                           f"files: {PAYLOAD}", explanations={"answered": ""})

    monkeypatch.setattr(type(kd), "scorers", lambda self: [*own(self), files_named])
    api.register_metric("id_length", description="Length of the case id / 100.", scale="any",
                        higher_is_better=None, scorer=lambda ctx: MetricValue(len(ctx.case.id) / 100, "the id's length"))
    api.register_metric("old_form", description="A value without a reason.", scale="any", higher_is_better=None,
                        scorer=lambda case, output, execution, grades: 0.5)
    before = score(cfg, system, case, output, None, grades)
    assert before.explanations["named_files"] == f"files: {PAYLOAD}"
    assert before.explanations["id_length"] == "the id's length"
    assert "answered" in before.metrics and "old_form" in before.metrics
    assert "answered" not in before.explanations and "old_form" not in before.explanations  # no reason: left out
    assert "migrated" in before.explanations  # the kind's own scorer says why too

    # the explanation is stored: scores.json has it, and the values are the ones without explanations
    atomic_write_json(artifact_path(cfg.work_path, "generate", "naive", case.suite, case.id), output)
    atomic_write_json(artifact_path(cfg.work_path, "score", "naive", case.suite, case.id), before)
    stored = ScoresArtifact.model_validate_json(
        artifact_path(cfg.work_path, "score", "naive", case.suite, case.id).read_text(encoding="utf-8"))
    assert stored.explanations == before.explanations

    monkeypatch.setattr(type(kd), "scorers", own)
    plain = score(cfg, system, case, output, None, grades)
    assert {k: v for k, v in before.metrics.items() if k != "named_files"} == plain.metrics

    # ... and the case page shows it beside the value, escaped
    summarize(cfg, migration.project)
    render_site(cfg.site_path, cfg.release, cfg.resolve(cfg.templates_dir))
    html = (cfg.site_path / cfg.release / "cases" / "migration" / "jpa-entity.html").read_text(encoding="utf-8")
    page = Page()
    page.feed(html)
    assert f"files: {PAYLOAD}" in page.why and "the id's length" in page.why
    assert any(w.startswith("not migrated: ") or w.startswith("migrated: ") for w in page.why)
    assert '<td class="why">files: &lt;img src=x onerror=&#34;alert(1)&#34;&gt;' in html  # every metric's table
    assert "window.__pwned=1" not in [s.strip() for s in page.scripts] and not page.handlers


def test_an_unchanged_answer_s_migrated_says_why(migration) -> None:
    cfg, case = migration.cfg, migration.case(CASE)
    system = migration.system("naive")
    output = _answer(case, case.read("inputs.legacy_file"))
    s = score(cfg, system, case, output, None, grade(cfg, system, case, output))
    assert s.metrics["migrated"] == 0.0
    why = s.explanations["migrated"]
    assert why.startswith("not migrated: ") and "the legacy file unchanged" in why and "keeps incident" in why

    right = _answer(case, case.read("reference.expected_file"))
    s = score(cfg, system, case, right, None, grade(cfg, system, case, right))
    assert s.metrics["migrated"] == 1.0 and s.explanations["migrated"].startswith("migrated: ")


def test_a_later_scorer_s_value_takes_its_explanation_or_none(migration, monkeypatch) -> None:
    cfg, case = migration.cfg, migration.case(CASE)
    system = migration.system("naive")
    output = _answer(case, case.read("inputs.legacy_file"))
    kd = kind(case.kind)
    own = type(kd).scorers
    monkeypatch.setattr(type(kd), "scorers", lambda self: [*own(self), lambda ctx: {"migrated": 0.0}])
    s = score(cfg, system, case, output, None, grade(cfg, system, case, output))
    assert s.metrics["migrated"] == 0.0 and "migrated" not in s.explanations  # the later, silent scorer's value


def test_a_long_explanation_is_cut(migration, monkeypatch) -> None:
    cfg, case = migration.cfg, migration.case(CASE)
    system = migration.system("naive")
    output = _answer(case, case.read("inputs.legacy_file"))
    kd = kind(case.kind)
    monkeypatch.setattr(type(kd), "scorers", lambda self: [lambda ctx: ScoreResult({"long": 1.0}, "x" * 2000)])
    s = score(cfg, system, case, output, None, grade(cfg, system, case, output))
    assert s.metrics["long"] == 1.0 and len(s.explanations["long"]) == 500 and s.explanations["long"].endswith("…")
