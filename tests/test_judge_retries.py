"""What is asked again, and when: judge errors, API failures, a new judge endpoint.

- An answer still unusable after the repair request is a judge_error: its raw text is kept, it is
  never cached, it is counted apart on the page, and a plain rerun does not ask again;
  `evalkit run --retry-judge-errors` does.
- An API failure (HTTP 500, no retries configured) is retried by the next plain run.
- A new judge endpoint (base_url) regrades only the outputs without a verdict.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from evalkit.llm.cache import ResponseCache
from fake_server import FakeAnthropic, Reply, error, text_of
from helpers import evalkit, make_project, run

KEY = "sk-ant-test-retries-0000"
ENV = {"ANTHROPIC_API_KEY": KEY}
VERDICT = {"semantic_equivalence_score": 4, "rule_adherence_score": 5, "faithfulness_score": 4,
           "code_quality_score": 4, "is_compilable": True, "detailed_notes": "fine"}
CLASS_OF = {"jpa-entity": "class Order ", "ejb-stateless": "class InvoiceService", "cdi-inject": "class OrderService"}


class Judge:
    """A judge whose behaviour is chosen per case: 'ok', 'garbage' (no JSON) or 'fail' (HTTP 500)."""

    def __init__(self, **modes: str) -> None:
        self.modes = modes
        self.asked: Counter[str] = Counter()

    def __call__(self, body: dict) -> Reply:
        prompt = text_of(body)
        case = next(c for c, marker in CLASS_OF.items() if marker in prompt)
        self.asked[case] += 1
        mode = self.modes.get(case, "ok")
        if mode == "garbage":
            return Reply(text="I would rather not give a score.")
        if mode == "fail":
            return error(500)
        return Reply(text="Checked.\n```json\n" + json.dumps(VERDICT) + "\n```")


def statuses(project: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in (project / ".evalkit/artifacts").rglob("grades.json"):
        out.setdefault(path.parent.name, set()).add(json.loads(path.read_text())["judge"]["status"])
    return out


def configure(project: Path, base_url: str) -> None:
    text = (project / "evalkit.yaml").read_text()
    head = text.split("judge:\n", 1)[0] if "judge:\n" in text else text
    (project / "evalkit.yaml").write_text(head + f"judge:\n  model: claude-test-judge\n  base_url: {base_url}\n"
                                          "  max_retries: 0\n")


def test_judge_errors_api_failures_and_a_new_endpoint(tmp_path: Path) -> None:
    judge_a, judge_b = Judge(**{"ejb-stateless": "garbage", "cdi-inject": "fail"}), Judge(**{"ejb-stateless": "garbage"})
    with FakeAnthropic(responder=judge_a) as a, FakeAnthropic(responder=judge_b) as b:
        project = make_project(tmp_path / "p", cases=list(CLASS_OF))
        configure(project, a.base_url)
        first = evalkit(project, "run", env=ENV, check=False)
        assert first.returncode == 5, first.stderr  # a judge API failure remains: never exit 0 (issue 27)
        assert statuses(project) == {"jpa-entity": {"judged"}, "ejb-stateless": {"judge_error"},
                                     "cdi-inject": {"infra_error"}}
        grades = json.loads((project / ".evalkit/artifacts/gold/migration/ejb-stateless/grades.json").read_text())
        judge = grades["judge"]
        assert judge["raw_answers"] == ["I would rather not give a score."] * 2  # answer and repair, kept
        cache = ResponseCache(project / ".evalkit/cache")
        assert all(cache.get(key) is None for key in judge["request_keys"])  # never cached as an answer
        notes = json.loads((project / "site/r1/report.json").read_text())["notes"]
        assert any("judge_error" in n and "--retry-judge-errors" in n for n in notes)
        assert any("judge API failed" in n and "retried on the next run" in n for n in notes)

        # plain rerun, the API healthy again: the failure is retried, the judge error is not re-asked
        judge_a.modes["cdi-inject"] = "ok"
        asked = Counter(judge_a.asked)
        executed = run(project, env=ENV)
        assert statuses(project)["cdi-inject"] == {"judged"}
        assert judge_a.asked["ejb-stateless"] == asked["ejb-stateless"]
        assert {t for t in executed if t.startswith("grade:")} == {
            f"grade:{s}:migration/cdi-inject" for s in ("naive", "rules", "gold")}

        # a new endpoint: only the outputs without a verdict are graded again, there
        configure(project, b.base_url)
        executed = run(project, env=ENV)
        assert {t for t in executed if t.startswith("grade:")} == {
            f"grade:{s}:migration/ejb-stateless" for s in ("naive", "rules", "gold")}
        assert set(judge_b.asked) == {"ejb-stateless"}
        assert statuses(project)["ejb-stateless"] == {"judge_error"}  # b answers no better

        # plain rerun: not re-asked; --retry-judge-errors: asked again, now answered
        asked_b = judge_b.asked["ejb-stateless"]
        run(project, env=ENV)
        assert judge_b.asked["ejb-stateless"] == asked_b
        judge_b.modes["ejb-stateless"] = "ok"
        evalkit(project, "run", "--retry-judge-errors", env=ENV)
        assert judge_b.asked["ejb-stateless"] > asked_b
        assert statuses(project) == {c: {"judged"} for c in CLASS_OF}
        notes = json.loads((project / "site/r1/report.json").read_text())["notes"]
        assert not any("no judge verdict" in n for n in notes)
