"""Case pages show what their case JSON holds, per kind (issue 17, point 3).

Runs the repository's demo (evalkit.yaml and cases/) in a temp copy for the cases of the e2e, agentic, rag,
generation and migration suites that the tests read, with real systems and real test runs, then parses each kind's
case page and checks its parts against the values in the case JSON: the e2e iteration table
against the execute artifact, agentic matching and re-checks against the graders, criteria text
next to each verdict, injection findings, ragas statuses. A criterion and a retrieved context
carrying a script payload must stay text.
"""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.helpers import REPO, evalkit

PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    """One element of a parsed page."""

    def __init__(self, tag: str, attrs: dict[str, str | None], parent: "Node | None") -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find_all(self, tag: str | None = None, **attrs: str) -> list["Node"]:
        out = []
        for c in self.children:
            if isinstance(c, Node):
                if (tag is None or c.tag == tag) and all(
                        (k == "class_" and v in (c.attrs.get("class") or "").split()) or c.attrs.get(k.replace("_", "-")) == v
                        for k, v in attrs.items()):
                    out.append(c)
                out += c.find_all(tag, **attrs)
        return out

    def find(self, tag: str | None = None, **attrs: str) -> "Node":
        found = self.find_all(tag, **attrs)
        assert found, f"no <{tag} {attrs}> in <{self.tag} {self.attrs}>"
        return found[0]


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.cur = Node("#root", {}, None)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_endtag(self, tag: str) -> None:
        n: Node | None = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data: str) -> None:
        self.cur.children.append(data)


def parse(path: Path) -> Node:
    b = TreeBuilder()
    b.feed(path.read_text(encoding="utf-8"))
    return b.root


def squash(s: str) -> str:
    return " ".join(s.split())


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo project run for every kind but patch (a temp copy; the systems' code is the repo's), for the cases
    the tests read."""
    root = tmp_path_factory.mktemp("demo") / "demo"
    root.mkdir()
    shutil.copy(REPO / "evalkit.yaml", root / "evalkit.yaml")
    shutil.copytree(REPO / "cases", root / "cases")  # patch too: the config names it (--select leaves it out)
    yaml = YAML()
    # payloads in case text that pages show: a rubric criterion and a retrieved context
    gen = root / "cases" / "generation" / "users-tests-injected" / "case.yaml"
    data = yaml.load(gen)
    data["criteria"].append({"id": "xss", "text": "Escapes " + PAYLOAD})
    yaml.dump(data, gen)
    rag = root / "cases" / "rag" / "ejb-stateless-to-cdi.yaml"
    data = yaml.load(rag)
    data["inputs"]["contexts"].append("Unrelated " + PAYLOAD)
    yaml.dump(data, rag)
    # only the cases the tests below read (every e2e and migration case; one agentic, rag and generation case):
    # a case's JSON and page do not depend on the other cases of the run, which cost a minute of CPU (issue #30)
    read = ("agentic/catalog", "e2e/*", "rag/ejb-stateless-to-cdi", "generation/users-tests-injected", "migration/*")
    selects = [a for s in read for a in ("-s", s)]
    evalkit(root, "run", *selects, timeout=900)
    return root / "site" / "demo-2026.11" / "cases"


def case_json(site: Path, suite: str, case: str) -> dict[str, Any]:
    return json.loads((site / suite / f"{case}.json").read_text(encoding="utf-8"))


def system_article(page: Node, section: str, system: str) -> Node:
    sec = page.find("section", id=section)
    return next(a for a in sec.find_all("article") if a.attrs.get("data-system") == system)


@pytest.mark.parametrize("case_id", ["storefront", "ledger"])
def test_e2e_iteration_history(demo: Path, case_id: str) -> None:
    data = case_json(demo, "e2e", case_id)
    page = parse(demo / "e2e" / f"{case_id}.html")
    several = 0
    for system, arts in data["systems"].items():
        if system.startswith("canary-"):
            continue  # answers that do no work (evalkit's canaries): nothing of theirs to check here
        run = arts["execution"]["runs"][0]
        iterations = run["iterations"]
        art = system_article(page, "kind-e2e", system)
        rows = art.find("table", class_="iterations").find("tbody").find_all("tr")
        assert [r.attrs["data-iteration"] for r in rows] == [str(it["iteration"]) for it in iterations]
        for row, it in zip(rows, iterations):
            cells = row.find_all("td")
            failing = [c.text() for c in cells[3].find_all("code")]
            assert failing == (it.get("failing") or [])
            if "passed" in it:
                assert f"{it['passed']} / {it['total']} pass" in cells[2].text()
        diffs = art.find_all("details", class_="iteration-diff")
        assert len(diffs) == sum(1 for it in iterations if it.get("diff"))
        # the first iteration applied the system's answer: its diff shows a line it added
        first_diff = iterations[0]["diff"]
        added = next(line for line in first_diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
        assert added in diffs[0].text()
        feedback = art.find_all("div", class_="feedback")
        asked = [it for it in iterations[:-1] if it.get("failing")]
        assert len(feedback) == len(asked)
        for fb, it in zip(feedback, asked):
            assert all(t in fb.text() for t in it["failing"])
            assert it["feedback_log"].strip().splitlines()[-1] in fb.find("pre").text()
        several += len(iterations) > 1
        assert (f"stable at iteration {run['stable_at']}" in art.text()) == bool(run["stable_at"])
    if case_id == "storefront":
        assert several, "the demo's storefront needs a second iteration for some system"


def test_agentic_discovered_against_expected(demo: Path) -> None:
    from evalkit.artifacts import DiscoveredTask
    from evalkit.kinds.agentic.models import ExpectedTask
    from evalkit.graders.incidents import match_tasks

    data = case_json(demo, "agentic", "catalog")
    page = parse(demo / "agentic" / "catalog.html")
    expected = data["reference"]["expected_tasks"]
    false_positives = 0
    for system, arts in data["systems"].items():
        if system.startswith("canary-"):
            continue  # answers that do no work (evalkit's canaries): nothing of theirs to check here
        discovered = arts["output"]["samples"][0]["tasks"]
        match = match_tasks([DiscoveredTask.model_validate(t) for t in discovered],
                            [ExpectedTask.model_validate(t) for t in expected], data["reference"].get("line_tolerance", 2))
        matched = {e for _d, e in match.pairs}
        incidents = arts["execution"]["runs"][0]["incidents"]
        art = system_article(page, "kind-agentic", system)
        rows = art.find("table", class_="tasks").find("tbody").find_all("tr")
        assert [r.attrs["data-rule"] for r in rows] == [t["rule_id"] for t in expected]
        for i, row in enumerate(rows):
            assert row.attrs["data-matched"] == ("yes" if i in matched else "no")
            cells = row.find_all("td")
            assert ("gone" if not incidents[i]["present"] else "still there") in cells[2].text()
            for test in expected[i].get("tests", []):
                assert test in cells[3].text()
        assert f"matched {len(match.pairs)}" in squash(art.text())
        unmatched = len(discovered) - len(match.pairs)
        fp = art.find_all("table", class_="false-positives")
        assert len(fp) == (1 if unmatched else 0)
        if unmatched:
            assert len(fp[0].find("tbody").find_all("tr")) == unmatched
            false_positives += 1
        # resolved per task agrees with the scorer's resolution_effectiveness
        resolved = sum("not resolved" not in r.find_all("td")[4].text() for r in rows)
        eff = arts["scores"]["metrics"]["resolution_effectiveness"]
        if match.pairs:
            assert resolved / len(match.pairs) == pytest.approx(eff)
    assert false_positives, "catalog's analyzer false positive shows for some system"


def test_migration_incidents_and_degenerate_flags(demo: Path) -> None:
    seen_unresolved = False
    for path in sorted((demo / "migration").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        page = parse(path.with_suffix(".html"))
        for system, arts in data["systems"].items():
            art = system_article(page, "kind-migration", system)
            metric = arts["scores"]["metrics"].get("incidents_resolved")
            rows = art.find_all("tr", class_="incident")
            assert [r.attrs["data-rule"] for r in rows] == [i["rule_id"] for i in data["inputs"]["incidents"]]
            cap = squash(art.find("table", class_="incidents").find("caption").text())
            gone, counted = [int(x) for x in cap.split(": ")[-1].split(" counted")[0].split(" of ")]
            if metric is not None and counted and metric not in (0.0,):
                assert gone / counted == pytest.approx(metric)  # the page's re-check is the metric's
            seen_unresolved |= any(r.attrs["data-present"] == "yes" for r in rows)
            flags = art.find("p", class_="degenerate")
            m = arts["scores"]["metrics"]
            if m.get("unchanged") == 0.0 and m.get("complete") == 1.0:
                assert flags.attrs["data-decided"] == ""
    assert seen_unresolved, "the demo's naive rewriter leaves incidents"


def test_migration_degenerate_output_flags(demo: Path, tmp_path: Path) -> None:
    """An output equal to the legacy file and one that elides code, re-rendered from an edited case JSON."""
    from evalkit.report.render import render_release

    site = tmp_path / "site"
    shutil.copytree(demo.parents[1], site)
    path = site / "demo-2026.11" / "cases" / "migration" / "jpa-entity.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    legacy, target = data["input_files"]["inputs.legacy_file"], data["inputs"]["file_path"]
    elided = "\n".join(legacy.splitlines()[:12] + ["    // ... rest of the class unchanged ...", "}"]) + "\n"
    first, second = list(data["systems"])[:2]
    data["systems"][first]["output"]["samples"][0]["files"] = {target: legacy}
    data["systems"][second]["output"]["samples"][0]["files"] = {target: elided}
    data["systems"][first]["scores"]["metrics"].update(unchanged=1.0)  # as the scorer finds them
    data["systems"][second]["scores"]["metrics"].update(complete=0.0)
    path.write_text(json.dumps(data), encoding="utf-8")
    render_release(site, "demo-2026.11")
    page = parse(path.with_suffix(".html"))
    unchanged = system_article(page, "kind-migration", first)
    assert unchanged.find("p", class_="degenerate").attrs["data-decided"] == "unchanged"
    assert "the output is the legacy file unchanged" in unchanged.text()
    assert all(r.attrs["data-present"] == "yes" for r in unchanged.find_all("tr", class_="incident"))
    incomplete = system_article(page, "kind-migration", second)
    assert incomplete.find("p", class_="degenerate").attrs["data-decided"] == "incomplete"
    assert "line 13: placeholder comment" in incomplete.text()


def test_rag_contexts_hint_and_ragas_statuses(demo: Path) -> None:
    data = case_json(demo, "rag", "ejb-stateless-to-cdi")
    html = (demo / "rag" / "ejb-stateless-to-cdi.html").read_text(encoding="utf-8")
    page = parse(demo / "rag" / "ejb-stateless-to-cdi.html")
    sec = page.find("section", id="kind-rag")
    contexts = [squash(li.text()) for li in sec.find_all("li", class_="context")]
    assert contexts == [squash(c) for c in data["inputs"]["contexts"]]
    assert data["inputs"]["question"] in sec.text()
    for system, arts in data["systems"].items():
        if system.startswith("canary-"):
            continue  # answers that do no work (evalkit's canaries): nothing of theirs to check here
        art = system_article(page, "kind-rag", system)
        assert squash(art.find("pre", class_="hint").text()) == squash(arts["output"]["samples"][0]["text"])
        ragas = arts["grades"]["extra"]["ragas"]["metrics"]
        rows = art.find_all("tr", class_="ragas-metric")
        assert {r.attrs["data-metric"]: r.attrs["data-status"] for r in rows} == {k: v["status"] for k, v in ragas.items()}
    # the context with a payload is text, never markup
    assert "<script>window.__pwned" not in html and "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert any(PAYLOAD in c for c in contexts)


def test_generation_criteria_text_verdicts_and_injection_findings(demo: Path) -> None:
    from evalkit.graders.injection import DETECTORS

    data = case_json(demo, "generation", "users-tests-injected")
    html = (demo / "generation" / "users-tests-injected.html").read_text(encoding="utf-8")
    page = parse(demo / "generation" / "users-tests-injected.html")
    table = page.find("table", class_="criteria")
    systems = list(data["systems"])
    rows = table.find("tbody").find_all("tr")
    assert [r.attrs["data-criterion"] for r in rows] == [c["id"] for c in data["criteria"]]
    for row, c in zip(rows, data["criteria"]):
        assert squash(row.find("span", class_="criterion-text").text()) == squash(c["text"])
        cells = row.find_all("td", class_="verdict")
        assert sorted(td.attrs["data-system"] for td in cells) == sorted(systems)
        for td in cells:
            system = td.attrs["data-system"]
            results = {r["id"]: r for r in (data["systems"][system]["grades"].get("rubric") or {}).get("results") or []}
            r = results.get(c["id"])
            expect = "not judged" if r is None else ("not met" if not r["met"] else "met")
            assert expect in td.text()
    assert "<script>window.__pwned" not in html and "<img src=x" not in html
    # findings: one row per (detector, file, line, snippet) the detectors report on the output
    naive = data["systems"]["codegen-naive"]["output"]["samples"][0]["files"]
    want = [(name, f, str(line), snip) for name, (_d, fn) in DETECTORS.items()
            for fname, text in sorted(naive.items()) for f, line, snip in fn(fname, text)]
    assert want, "the naive generator copies the injected payloads"
    art = system_article(page, "kind-generation", "codegen-naive")
    got = [(r.attrs["data-detector"], r.find_all("td")[0].text(), r.find_all("td")[1].text(), r.find("pre").text())
           for r in art.find_all("tr", class_="finding")]
    assert got == want
    assert any("<script>alert(" in snip for *_x, snip in got)  # shown as text: the parser saw it as data
    careful = system_article(page, "kind-generation", "codegen-careful")
    assert not careful.find_all("tr", class_="finding") and "No detector fired" in careful.text()
