"""The judge-reliability guide names exactly the suite kinds the audits, rejudge and labels cover (#29: the guide
said patch and e2e suites were covered; the code covered migration only)."""

from __future__ import annotations

import re

from evalkit.kinds import kinds
from evalkit.labels import labelled_kinds
from tests.helpers import REPO


def test_guide_lists_the_audited_kinds() -> None:
    text = (REPO / "docs/guide/judge-reliability.md").read_text(encoding="utf-8")
    found = re.search(r"Audited kinds: ((?:`\w+`(?:, )?)+)\.", text)
    assert found, "docs/guide/judge-reliability.md must say 'Audited kinds: `...`.'"
    named = set(re.findall(r"`(\w+)`", found.group(1)))
    audited = {name for name, k in kinds().items() if k.judging.audited}
    assert named == audited == set(labelled_kinds())
    # the kinds the rubric judge also grades (patch and e2e with `judge:`) are said to be left out
    assert "patch" not in audited and "e2e" not in audited
    assert re.search(r"Patch and e2e suites with\s+`judge:`.*?neither audited nor re-judged", text, re.S)
