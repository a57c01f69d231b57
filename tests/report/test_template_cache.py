"""Compiled templates (Jinja's bytecode cache): a project's own folder, or one that projects share
(EVALKIT_TEMPLATE_CACHE): the second project's render compiles nothing, and its pages are the same."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from evalkit.config import TEMPLATE_CACHE_ENV, load_config
from evalkit.report.render import render_site
from evalkit.report.site_env import environment
from helpers import evalkit, make_project


def _entries(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} if folder.is_dir() else {}


def _pages(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*.html"))}


def test_projects_share_compiled_templates_and_render_the_same_pages(tmp_path: Path) -> None:
    shared = tmp_path / "shared-cache"
    env = {TEMPLATE_CACHE_ENV: str(shared)}
    first = make_project(tmp_path / "a", cases=["jpa-entity"])
    evalkit(first, "run", env=env)
    compiled = _entries(shared)
    assert len(compiled) >= 5, compiled  # the site's templates, compiled once
    assert not (first / ".evalkit" / "cache" / "jinja").exists()

    second = make_project(tmp_path / "b", cases=["jpa-entity"])
    evalkit(second, "run", env=env)
    assert _entries(shared) == compiled  # nothing compiled again, nothing rewritten
    template = environment(second / "templates", shared).get_template("index.html.j2")  # from the shared copy
    assert template.filename == str(second / "templates" / "site" / "index.html.j2")  # names its own file

    own = make_project(tmp_path / "c", cases=["jpa-entity"])  # the variable empty: the project's own folder
    evalkit(own, "run", env={TEMPLATE_CACHE_ENV: ""})
    assert set(_entries(own / ".evalkit" / "cache" / "jinja")) == set(compiled)

    # the pages rendered from the shared compiled templates are those a render that compiles them makes
    again = tmp_path / "again"
    shutil.copytree(second / "site", again)
    for page in again.rglob("*.html"):
        page.unlink()
    render_site(again, "r1", cache_dir=None)
    assert _pages(again) == _pages(second / "site")


def test_the_shared_folder_is_a_write_root_and_the_default_is_the_work_folder(tmp_path: Path,
                                                                               monkeypatch) -> None:
    project = make_project(tmp_path / "p", cases=["jpa-entity"])
    monkeypatch.delenv(TEMPLATE_CACHE_ENV, raising=False)
    assert load_config(str(project / "evalkit.yaml")).template_cache == project / ".evalkit" / "cache" / "jinja"
    monkeypatch.setenv(TEMPLATE_CACHE_ENV, str(tmp_path / "elsewhere"))
    cfg = load_config(str(project / "evalkit.yaml"))
    assert cfg.template_cache == (tmp_path / "elsewhere").resolve()
    from evalkit.fsutil import ensure_dir

    assert ensure_dir(cfg.template_cache / "x").is_dir()  # writes there are allowed once the project is loaded
    assert os.environ[TEMPLATE_CACHE_ENV] == str(tmp_path / "elsewhere")
