"""The documentation: a short README that points into docs/, and a docs site that builds with
`mkdocs build --strict` (every page in the nav, every link and API reference resolving)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert first_block[0].startswith("pip install -e . && doit")
    assert first_block[1].startswith("pip install -e '.[test]' && python3 -m pytest -q")
    # every docs page the README links to exists
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (REPO / link).is_file(), link


def test_every_docs_page_is_in_the_nav() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")}
    listed = set(re.findall(r"([\w/.-]+\.md)", nav))
    assert pages == listed, (pages - listed, listed - pages)


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    built = tmp_path / "site"
    assert (built / "index.html").is_file() and (built / "guide" / "sandbox" / "index.html").is_file()
    reference = (built / "extending" / "reference" / "index.html").read_text(encoding="utf-8")
    # the API reference is generated from the docstrings (not an empty page)
    assert "evaluate" in reference and "register_metric" in reference and "Registry" in reference
