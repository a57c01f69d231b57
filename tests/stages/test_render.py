"""render_site(site, release), called directly on what summarize wrote from hand-made artifacts: a system's
output is shown as text on its case page. (Pages from synthetic report data: tests/report/test_render.py.)"""

from __future__ import annotations

from html.parser import HTMLParser

from evalkit.artifacts import OutputArtifact, Sample, ScoresArtifact, artifact_path
from evalkit.fsutil import atomic_write_json
from evalkit.report.render import render_site
from evalkit.report.summarize import summarize

PAYLOAD = '</script><script>window.__pwned=1</script><img src=x onerror="alert(1)">'


class Scripts(HTMLParser):
    """Every <script> element's text and every on* attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.handlers: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        self.handlers += [name for name, _ in attrs if name.startswith("on")]

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def test_a_case_page_shows_a_hostile_output_as_text(migration) -> None:
    cfg, case = migration.cfg, migration.case("migration/jpa-entity")
    path = case.inputs.file_path
    atomic_write_json(artifact_path(cfg.work_path, "generate", "naive", case.suite, case.id),
                      OutputArtifact(system="naive", suite=case.suite, case_id=case.id,
                                     samples=[Sample(files={path: f"// {PAYLOAD}\nclass Order {{}}\n"})]))
    atomic_write_json(artifact_path(cfg.work_path, "score", "naive", case.suite, case.id),
                      ScoresArtifact(system="naive", suite=case.suite, case_id=case.id, reason=PAYLOAD,
                                     metrics={"answered": 1.0}))
    summarize(cfg, migration.project)
    index = render_site(cfg.site_path, cfg.release, cfg.resolve(cfg.templates_dir))
    assert index.exists()
    page = cfg.site_path / cfg.release / "cases" / "migration" / "jpa-entity.html"
    html = page.read_text(encoding="utf-8")
    assert "&lt;/script&gt;&lt;script&gt;window.__pwned=1" in html  # shown, escaped
    parsed = Scripts()
    parsed.feed(html)
    assert "window.__pwned=1" not in [s.strip() for s in parsed.scripts]  # no script element of the payload's
    assert not parsed.handlers  # and no onerror= attribute
