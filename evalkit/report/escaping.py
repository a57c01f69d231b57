"""Text made safe for HTML as a plain ``str``: markupsafe's ``escape`` without its ``Markup`` object.

The case pages are built as Python strings (evalkit.report.case_markup, panel, site_env's row helpers) and wrapped
in one ``Markup`` at the end; markupsafe's ``escape`` wraps every value it escapes in a ``Markup`` of its own, whose
Python ``__new__`` cost 7 times the escaping (a 10,000-case site escapes millions of values). `esc` gives the same
characters as ``str(escape(value))``: ``&``, ``<``, ``>``, ``'`` and ``"`` replaced, a value with ``__html__`` taken
as it says.
"""

from __future__ import annotations

from collections.abc import Callable


def replace_specials(text: str) -> str:
    """markupsafe's replacements, in Python (the fallback for a markupsafe without its C function)."""
    return (text.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;").replace("'", "&#39;")
            .replace('"', "&#34;"))


_escape_str: Callable[[str], str]
try:  # markupsafe 3's C escaping function, which its ``escape`` wraps in a Markup
    from markupsafe._speedups import _escape_inner as _escape_str
except ImportError:  # pragma: no cover - markupsafe without its speedups built, or another version
    _escape_str = replace_specials


def esc(value: object) -> str:
    """``str(markupsafe.escape(value))``: a ``str`` is escaped, an object with ``__html__`` (Markup) is taken as safe,
    anything else is escaped as its ``str``."""
    if type(value) is str:
        return _escape_str(value)
    html = getattr(value, "__html__", None)
    if html is not None:
        return str(html())
    return _escape_str(str(value))


__all__ = ["esc", "replace_specials"]
