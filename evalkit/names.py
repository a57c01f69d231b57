"""The one rule for names that become file and folder names: case ids, suite folders, systems, releases.

A name is 1 to 120 characters: an ASCII letter or digit first, then letters, digits, `_`, `-` and
`.`, never two dots in a row and no dot at the end. So a name is always exactly one path component:
no `/`, no `\\`, never `.` or `..`, no leading dot (hidden files), no spaces or shell characters.
Every command that loads a project checks names with this rule before anything is written.
"""

from __future__ import annotations

import re

NAME_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9_-]|\.[A-Za-z0-9_-])*$"
"""The name rule as a regular expression (no look-around: pydantic's regex engine takes it too)."""
NAME_MAX = 120
"""Longest name accepted."""
NAME_RULE = ("1-120 characters: a letter or digit first, then letters, digits, '_', '-' or '.' "
             "(no '..', no trailing '.')")
"""The rule in words, for messages."""

_NAME = re.compile(NAME_PATTERN)


def is_valid_name(name: object) -> bool:
    """Whether ``name`` is a string that follows the name rule."""
    return isinstance(name, str) and len(name) <= NAME_MAX and _NAME.fullmatch(name) is not None


def name_problem(name: object, what: str) -> str | None:
    """None when ``name`` is valid, else a message such as "case id '../x' is not a valid name (...)"."""
    if is_valid_name(name):
        return None
    shown = repr(name) if not isinstance(name, str) or len(name) <= 200 else repr(name[:200] + "...")
    return f"{what} {shown} is not a valid name ({NAME_RULE})"


# ---- names the report site uses itself (evalkit.report.render lists its pages) ----------------------

SITE_FOLDERS = ("assets", "compare", "docs", "schemas")
"""Folders of site/ shared by every release (docs: the documentation the Pages workflow publishes beside the
report): a release label may not be one of them."""
SITE_FILES = ("index.html", "manifest.json")
"""Files at the top of site/: a release label may not be one of them either."""
COMPARE_PAGE = "compare"
"""An older evalkit wrote a case's compare page as `<case>.compare.html`, beside its own `<case>.html` (the case page
shows two systems side by side now, and a render removes that page): the name stays refused, so that removal never
removes another case's page."""
_SUITE_PAGE = re.compile(r"\.cases-[0-9]+$", re.IGNORECASE)
"""A large suite's k-th page of cases is `suites/<suite>.cases-<k>.html`, beside `suites/<suite>.html`."""


def release_problem(label: object, what: str = "release label") -> str | None:
    """None when ``label`` may name a release's folder of the site, else why not (the name rule, or a
    name the site uses for its shared folders and files; compared case-insensitively, as some file
    systems do)."""
    if (why := name_problem(label, what)) is not None:
        return why
    assert isinstance(label, str)
    if label.lower() in SITE_FOLDERS + SITE_FILES:
        used = "folder" if label.lower() in SITE_FOLDERS else "file"
        return (f"{what} {label!r} is a name the report site uses for its shared {used} site/{label.lower()}; "
                f"expected another label")
    return None


def case_id_problem(case_id: object, what: str = "case id") -> str | None:
    """None when ``case_id`` may name a case's pages, else why not (the name rule, or an id ending in
    `.compare`, whose page is where an older evalkit wrote another case's compare page)."""
    if (why := name_problem(case_id, what)) is not None:
        return why
    assert isinstance(case_id, str)
    if case_id.lower().rsplit(".", 1)[-1] == COMPARE_PAGE and "." in case_id:
        base = case_id.rsplit(".", 1)[0]
        return (f"{what} {case_id!r} ends in '.{COMPARE_PAGE}': its page ({case_id}.html) is where the compare page "
                f"of case {base!r} was written, and a render removes that file; expected an id that does not end in "
                f"'.{COMPARE_PAGE}'")
    return None


def suite_name_problem(name: object, what: str = "suite folder name") -> str | None:
    """None when ``name`` may name a suite's pages, else why not (the name rule, or a name ending in
    `.cases-<k>`, which would be another suite's k-th page of cases)."""
    if (why := name_problem(name, what)) is not None:
        return why
    assert isinstance(name, str)
    if _SUITE_PAGE.search(name):
        return (f"{what} {name!r} ends in '.cases-<k>': its page would be another suite's page of cases; "
                f"expected a name that does not")
    return None
