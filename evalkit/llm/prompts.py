"""Prompt templates (``evalkit/templates/prompts/*.j2``, package data) and the fencing of untrusted data inside them.

Prompts are plain text for a model, not HTML, so autoescape is off here (escaping would corrupt
code such as ``List<String>``). What keeps case and system content from acting as instructions
is the fence: every untrusted value is wrapped by the ``data`` filter in markers carrying a digest
of that value, which the value itself cannot contain, and the instructions say that text between
the markers is data.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.fsutil import digest

if TYPE_CHECKING:
    import jinja2

PROMPTS_DIR = Path(__file__).resolve().parents[1] / "templates" / "prompts"  # package data (see report.site)


def fence(content: str | None, label: str) -> str:
    """``content`` between BEGIN/END DATA markers whose id cannot occur in ``content``."""
    text = "" if content is None else str(content)
    length = 12
    tag = digest({"label": label, "content": text})
    while f"DATA {tag[:length]}" in text and length < len(tag):
        length += 4
    marker = tag[:length]
    return f"<<<BEGIN DATA {marker}: {label}>>>\n{text}\n<<<END DATA {marker}>>>"


@cache
def environment(root: str = str(PROMPTS_DIR)) -> jinja2.Environment:
    import jinja2  # deferred: jinja2 only when a prompt is rendered (a no-op run renders none)

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(root),
        autoescape=False,  # model prompts, not HTML: see the module docstring
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["data"] = fence
    return env


def render(name: str, **context: object) -> str:
    """Render the shipped prompt template ``<name>`` with ``context``."""
    return environment().get_template(name).render(**context).strip() + "\n"


def template_digest(*names: str) -> str:
    """Digest of the named templates' sources: the judge-prompt part of a stage's config slice."""
    return digest({name: (PROMPTS_DIR / name).read_text(encoding="utf-8") for name in sorted(names)})
