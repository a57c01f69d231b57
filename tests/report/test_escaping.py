"""`evalkit.report.escaping.esc` shows every value as markupsafe's ``escape`` does (the pages' bytes depend on it),
with markupsafe's C function and with the Python fallback."""

from __future__ import annotations

import random

import pytest
from markupsafe import Markup, escape

from evalkit.report import escaping


class Html:
    def __html__(self) -> str:
        return "<b>safe</b>"


def values(n: int = 3000) -> list[object]:
    rng = random.Random(5)
    alphabet = "&<>'\"ab c\n\u00e9\u2713\x00\\;#"
    out: list[object] = ["", "&amp;", "<script>alert('x')</script>", 'a "quoted" & <b>', Markup("<i>kept</i>"),
                         Html(), 0, -1.5, float("nan"), None, True, b"<bytes>", ["<list>"]]
    out += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(n)]
    return out


@pytest.mark.parametrize("fallback", [False, True])
def test_esc_is_markupsafe_escape_as_a_str(fallback: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if fallback:
        monkeypatch.setattr(escaping, "_escape_str", escaping.replace_specials)
    for value in values():
        got = escaping.esc(value)
        assert type(got) is str
        assert got == str(escape(value)), repr(value)
