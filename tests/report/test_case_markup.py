"""The case page (with its picker of two systems side by side) and the judge/rubric sections rendered in Python (evalkit.report.case_markup) are the
bytes the templates render, and a ``templates_dir`` that changes one of those templates is rendered by Jinja, its
change shown."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers import bench_site

from evalkit.report import case_markup
from evalkit.report.render import environment, render_site
from evalkit.report.site import PACKAGE_TEMPLATES

P = '<script>"x"&\'y\'</script>'
JUDGES = [
    {"status": "parser", "source": "parser", "decided": "unchanged", "is_compilable": False, "unstable": True,
     "flags": {"x_flag": True, "is_compilable": False, "other": False}, "error": P, "scores": {"a_score": 0.0, "b_c": 2.5},
     "spread": {"a_score": 1, "b_c": 0.5}, "verdicts": [{"detailed_notes": P, "a_score": 1.0}, {"detailed_notes": "",
                                                                                         "b_c": 3}],
     "reasoning": ["first", "", P], "raw_answers": [P, "x"]},
    {"status": "parser", "source": "parser", "rubric": "custom", "scores": {"a_score": 1.0}, "spread": {}},
    {"status": "not_configured", "error": P}, {"status": "not_configured"}, {"status": "not_judged_budget"},
    {"status": "judge_error", "source": "recorded", "model": P, "rubric": "codejudge", "reasoning": ["only one"]},
    {"status": "infra_error", "model": "m", "rubric": P, "is_compilable": True, "verdicts": [{"detailed_notes": "n"}],
     "scores": {"s_score": 4.0}},
]
RUBRICS = [
    {"status": "judged", "score": 0.81234, "model": P, "unstable": True, "error": P, "reasoning": ["a", "", P],
     "results": [{"id": P, "weight": 2.0, "met": True, "met_fraction": 0.5, "reason": P},
                 {"id": "c2", "weight": 1, "met": False, "met_fraction": 1.0, "reason": ""},
                 {"id": "c3", "weight": 0.5, "met": True, "met_fraction": 0.666, "reason": "r"}]},
    {"status": "not_configured"}, {"status": "judge_error", "score": 0.0, "reasoning": ["one"]},
]


def _site(root: Path) -> Path:
    """A two-release site whose cases hold every part of a case page the synthetic data lacks: problems, tags,
    paragraphs, analyzer incidents (mappings among other values), reference files, inputs of every type, payloads."""
    bench = bench_site()
    old = bench.synthesize(root, n_cases=4, n_systems=3, release="r1", seed=1)
    bench.synthesize(root, n_cases=8, n_systems=3, release="r2", seed=2, previous=old, payload=P)
    variants = 0
    for i, path in enumerate(sorted((root / "r2" / "cases").rglob("*.json"))):
        case = json.loads(path.read_text())
        if i % 2 == 0:
            case["description"] = f"First {P}\n\nsecond\nline"
            case["tags"] = [P, "t&u"]
            case["problems"] = [P, "no reference"]
            case["inputs"] = {"task_text": P, "file_path": "a.java", "max_steps": 3, "some_dir": "x", "flag": None,
                              "incidents": [{"rule_id": P, "line": 4, "message": P}, "not a mapping",
                                            {"rule_id": "r2", "line": 2.5, "description": "desc"}, {"line": 0}]}
            case["reference_files"] = {"reference.expected_file": P, "other": "x"}
            case["input_files"][P] = P
            case["systems"] = {k: case["systems"][k] for k in list(case["systems"])[:1]}  # one system: no picker
        elif i % 3 == 0:
            case["inputs"] = {"incidents": "not a list", "x_y": "z"}
            case["description"] = ""
        for arts in case["systems"].values():  # every judge and rubric outcome a panel shows, in turn
            arts["grades"]["judge"] = [*JUDGES, None][variants % (len(JUDGES) + 1)]
            arts["grades"]["rubric"] = [*RUBRICS, None][variants % (len(RUBRICS) + 1)]
            variants += 1
        path.write_text(json.dumps(case))
    return root


def _pages(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted((site / "r2" / "cases").rglob("*"))
            if p.suffix in (".html", ".txt")}


def test_python_pages_equal_the_templates_and_an_override_is_rendered_by_jinja(tmp_path: Path) -> None:
    fast = _site(tmp_path / "fast")
    shutil.copytree(fast, tmp_path / "jinja")
    templates = tmp_path / "templates"
    shutil.copytree(PACKAGE_TEMPLATES, templates)
    assert case_markup.shipped(environment(templates))  # a copy of the shipped templates is the shipped templates
    for name in ("case.html.j2", "macros.html.j2"):
        with open(templates / "site" / name, "a", encoding="utf-8") as fh:
            fh.write("{# changed: renders the same, by Jinja #}")
    assert not case_markup.shipped(environment(templates))
    assert not case_markup.shipped(environment(templates), case_markup.MACROS)

    render_site(fast, "r2")
    render_site(tmp_path / "jinja", "r2", tdir=templates)
    fast_pages, jinja_pages = _pages(fast), _pages(tmp_path / "jinja")
    assert len([p for p in fast_pages.values() if b'id="picker"' in p]) >= 2
    assert any(b'id="picker"' not in p for p in fast_pages.values())  # a case of one system
    assert any(b"Broken case" in page and b"Analyzer incidents" in page for page in fast_pages.values())
    shown = b"".join(fast_pages.values())
    for part in (b"decided without a model", b"Not judged: the judge budget", b"recorded judge", b"Unusable answer 2",
                 b"spread 0.5", b"67% of samples", b"<h4>Rubric</h4>", b"Reasoning, sample 3", b"x_flag"):
        assert part in shown
    assert fast_pages == jinja_pages
    assert not any(P.encode() in page for page in fast_pages.values())  # every payload shown as text

    (templates / "site" / "base.html.j2").write_text(
        (PACKAGE_TEMPLATES / "site" / "base.html.j2").read_text().replace("Skip to content", "Skip ahead"))
    shutil.rmtree(tmp_path / "jinja" / "r2" / "cases")
    shutil.copytree(fast / "r2" / "cases", tmp_path / "jinja" / "r2" / "cases",
                    ignore=shutil.ignore_patterns("*.html", "*.txt", ".*"))
    render_site(tmp_path / "jinja", "r2", tdir=templates)
    changed = _pages(tmp_path / "jinja")
    assert all(b"Skip ahead" in page for name, page in changed.items() if name.endswith(".html"))
