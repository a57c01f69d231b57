"""The judge's consistency audit end to end: demo migration cases, doit, a loopback Messages API.

The server's judge answers depend on a seed, the file judged and how many times that exact request
was sent before (the n-th send is the request's sample n: repeats differ only in their cache key's
sample index, which is never sent); its pairwise answers depend on the seed and the order of the
two files. The test computes the expected spread, verdict changes and order flips from the same
rule, then compares the report's numbers; the estimate taken before the run equals the requests
the server then receives, and a rerun sends none.
"""

from __future__ import annotations

import collections
import hashlib
import json
import threading
from itertools import combinations
from pathlib import Path

from evalkit.graders.migration_judge import SCORE_NAMES
from fake_server import FakeAnthropic, Reply, error, text_of
from evalkit.llm.prompts import render
from evalkit.stats import wilson_interval
from helpers import evalkit, evalkit_here, make_project, run

KEY = "sk-ant-test-audit-0000"
SEED = 7
REPEATS = 3
PAIRWISE_SYSTEM = render("pairwise_judge_system.md.j2")[:60]
JUDGE_SYSTEM = render("migration_judge_system.md.j2")[:60]
CASES = ["jpa-entity", "ejb-stateless", "jms-message-driven", "persistence-context", "transactional-xa"]
SYSTEMS = ["naive", "rules", "gold", "empty"]
SYSTEMS_YAML = """\
systems:
  - {name: naive, adapter: command, command: ["{python}", "-m", "evalkit.demo_systems.naive_rewriter"]}
  - {name: rules, adapter: command, command: ["{python}", "-m", "evalkit.demo_systems.rule_rewriter"]}
  - {name: gold, adapter: gold}
  - {name: empty, adapter: empty}
"""


def h(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def fenced(prompt: str, label: str) -> str:
    """The data between the fence markers labelled ``label`` (evalkit.llm.prompts.fence)."""
    start = prompt.index(f": {label}>>>\n") + len(f": {label}>>>\n")
    return prompt[start:prompt.index("\n<<<END DATA", start)]


def judge_values(model: str, generated: str, n: int) -> dict:
    """The rule: each score field has a volatility 0-2 fixed by the file; the n-th answer draws within it."""
    values: dict = {}
    for name in SCORE_NAMES:
        volatility = h(SEED, model, generated, name) % 3
        values[name] = 5 - h(SEED, model, generated, name, n) % (volatility + 1)
    values["is_compilable"] = h(SEED, model, generated, "compilable", n) % 4 != 0
    return values


def pairwise_winner(first: str, second: str) -> str:
    """The rule: a third of the orders prefer whichever came first; else the better file, or a tie."""
    if h(SEED, "position", first, second) % 3 == 0:
        return "first"
    qa, qb = h(SEED, "quality", first) % 3, h(SEED, "quality", second) % 3
    return "tie" if qa == qb else "first" if qa > qb else "second"


class Judge:
    """The server's responder: counts sends per request and per asker."""

    def __init__(self) -> None:
        self.fail_pairwise = False
        self.sent: collections.Counter[str] = collections.Counter()
        self.askers: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        prompt = text_of(body)
        system = "".join(block.get("text", "") for block in body.get("system") or [])
        if system.startswith(PAIRWISE_SYSTEM):
            with self.lock:
                self.askers["pairwise"] += 1
            if self.fail_pairwise:
                return error(400, message="scripted refusal")
            winner = pairwise_winner(fenced(prompt, "first migrated file"), fenced(prompt, "second migrated file"))
            return Reply(text="Compared.\n```json\n" + json.dumps({"winner": winner, "reason": "rule"}) + "\n```")
        assert system.startswith(JUDGE_SYSTEM), system[:80]
        key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        with self.lock:
            n = self.sent[key]
            self.sent[key] += 1
            self.askers["judge"] += 1
        answer = {**judge_values(body["model"], fenced(prompt, "generated file"), n), "detailed_notes": "rule"}
        return Reply(text="Reviewed.\n```json\n" + json.dumps(answer) + "\n```")


def audit_project(root: Path, base_url: str) -> Path:
    return make_project(root, cases=CASES, systems=SYSTEMS_YAML, extra=(
        f"judge:\n  model: claude-test-judge\n  base_url: {base_url}\n"
        f"  audit: {{sample: 4, seed: {SEED}, repeats: {REPEATS}, pairwise: true}}\n"))


def estimate(root: Path) -> dict:
    return json.loads(evalkit_here(root, "estimate", env={"ANTHROPIC_API_KEY": KEY}).stdout.strip().splitlines()[-1])


def generated_file(root: Path, system: str, case_key: str) -> str:
    suite, case = case_key.split("/")
    out = json.loads((root / f".evalkit/artifacts/{system}/{suite}/{case}/output.json").read_text())
    files = out["samples"][0]["files"]
    assert len(files) <= 1
    return next(iter(files.values()), "")


def test_audit_spread_and_flips_as_the_server_rules_and_estimate_equals_sent(tmp_path: Path) -> None:
    judge = Judge()
    env = {"ANTHROPIC_API_KEY": KEY}
    with FakeAnthropic(responder=judge) as server:
        root = audit_project(tmp_path / "p", server.base_url)
        evalkit(root, "run", "generate", env=env)  # command systems, no model: the answers are known now
        est = estimate(root)
        assert server.message_calls() == 0
        run(root, env=env)
        # the estimate counted exactly what was sent, per asker too
        assert server.message_calls() == est["uncached_calls"] > 0
        assert est["estimated_calls"] == 0
        assert est["by_asker"]["pairwise judge"] == judge.askers["pairwise"] > 0
        assert est["by_asker"]["migration judge"] + est["by_asker"]["judge audit"] == judge.askers["judge"]

        report = json.loads((root / "site/r1/report.json").read_text())
        audit = report["judge_audit"]
        assert audit["status"] == "done" and len(audit["sampled_cases"]) == 4
        assert audit["calls_sent"] == est["by_asker"]["judge audit"] + est["by_asker"]["pairwise judge"]
        assert audit == json.loads((root / "site/r1/judge_audit.json").read_text())

        # repeats: every audited output's answers are the rule's answers 0..k-1, and the figures follow
        cases = audit["repeats"]["cases"]
        assert cases and {c["case"] for c in cases} <= set(audit["sampled_cases"])
        # byte-identical outputs of several systems on a case are one output: audited once, counted once
        audited = [(c["case"], generated_file(root, c["system"], c["case"])) for c in cases]
        assert len(set(audited)) == len(audited)
        for c in cases:
            for other in c["same_output"]:
                assert generated_file(root, other, c["case"]) == generated_file(root, c["system"], c["case"])
        assert any(c["same_output"] for c in cases)  # the demo systems repeat each other: not a vacuous check
        expected: dict[str, list[list]] = collections.defaultdict(list)
        for c in cases:
            generated = generated_file(root, c["system"], c["case"])
            answers = [judge_values("claude-test-judge", generated, n) for n in range(REPEATS)]
            for name, values in c["values"].items():
                assert values == [a[name] for a in answers], (c["system"], c["case"], name)
                expected[name].append(values)
        fields = {f["field"]: f for f in audit["repeats"]["fields"]}
        assert list(fields) == [*SCORE_NAMES, "is_compilable"]
        for name, series in expected.items():
            f = fields[name]
            changed = sum(len(set(v)) > 1 for v in series)
            assert (f["n"], f["changed"]["k"]) == (len(series), changed)
            assert (f["changed"]["ci_low"], f["changed"]["ci_high"]) == wilson_interval(changed, len(series))
            if name != "is_compilable":
                spreads = [max(v) - min(v) for v in series]
                assert f["mean_spread"] == sum(spreads) / len(spreads) and f["max_spread"] == max(spreads)
                assert f["changed_2"]["k"] == sum(s >= 2 for s in spreads)
        assert any(f["changed"]["k"] for f in fields.values())  # the rule makes verdicts move: not a vacuous check

        # pairwise: each pair's two answers and the flip rate follow the rule
        sampled = audit["sampled_cases"]
        systems = SYSTEMS
        flips = asked = identical = duplicates = 0
        pairs = {(p["case"], p["a"], p["b"]): p for p in audit["pairwise"]["pairs"]}
        for case_key in sampled:
            seen: set[frozenset] = set()
            for a, b in combinations(systems, 2):
                fa, fb = generated_file(root, a, case_key), generated_file(root, b, case_key)
                if fa == fb:
                    identical += 1
                    assert (case_key, a, b) not in pairs
                    continue
                if frozenset((fa, fb)) in seen:  # the same two files as a pair already compared: counted once
                    duplicates += 1
                    assert (case_key, a, b) not in pairs
                    continue
                seen.add(frozenset((fa, fb)))
                p = pairs[(case_key, a, b)]
                ab, ba = pairwise_winner(fa, fb), pairwise_winner(fb, fa)
                assert (p["ab"], p["ba"]) == (ab, ba)
                pref_ab = {"first": a, "second": b, "tie": "tie"}[ab]
                pref_ba = {"first": b, "second": a, "tie": "tie"}[ba]
                assert p["flipped"] == (pref_ab != pref_ba)
                asked += 1
                flips += pref_ab != pref_ba
        # distinct requests: k repeats per distinct judged file (repeat 0 is the grade stage's answer, not sent
        # again), both orders per distinct pair of files
        files = {generated_file(root, c["system"], c["case"]) for c in cases}
        questions = {(generated_file(root, p["a"], p["case"]), generated_file(root, p["b"], p["case"]))
                     for p in audit["pairwise"]["pairs"]}
        questions |= {(b, a) for a, b in questions}
        assert audit["requests"] == len(files) * REPEATS + len(questions)
        assert audit["calls_sent"] == audit["requests"] - len(files)
        flip = audit["pairwise"]["flip_rate"]
        assert (flip["k"], flip["n"], audit["pairwise"]["identical_skipped"]) == (flips, asked, identical)
        assert audit["pairwise"]["duplicates_skipped"] == duplicates
        assert (flip["ci_low"], flip["ci_high"]) == wilson_interval(flips, asked) and asked > 0
        print(f"figures: estimate {est['uncached_calls']} requests {est['by_asker']} = sent {server.message_calls()}; "
              f"flips {flips}/{asked}; changed per field "
              f"{ {n: (f['changed']['k'], f['n'], f['mean_spread']) for n, f in fields.items()} }")
        page = (root / "site/r1/index.html").read_text()
        assert "Judge consistency audit" in page and f"({flips}/{asked}; 95% CI" in page

        # a rerun pays nothing: every audit request is content-addressed
        before = server.message_calls()
        shutil_rmtree(root / ".evalkit" / "artifacts")
        (root / ".evalkit" / "doit.sqlite3").unlink()
        run(root, env=env)
        assert server.message_calls() == before
        after = estimate(root)
        assert after["uncached_calls"] == 0


def shutil_rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def test_rejudge_estimates_first_pays_only_new_verdicts_and_reports_agreement(tmp_path: Path) -> None:
    from sklearn.metrics import cohen_kappa_score

    judge = Judge()
    env = {"ANTHROPIC_API_KEY": KEY}
    with FakeAnthropic(responder=judge) as server:
        root = make_project(tmp_path / "p", cases=CASES, systems=SYSTEMS_YAML,
                            extra=f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n")
        run(root, env=env)
        graded = server.message_calls()

        # without --yes: the estimate only, nothing sent, exit 0
        proc = evalkit(root, "rejudge", "--judge", "claude-new-judge", env=env)
        est = json.loads(proc.stdout.strip().splitlines()[-1])
        assert est["sent"] is False and est["uncached_calls"] > 0 and est["cost_usd"] > 0
        assert server.message_calls() == graded
        assert not (root / "site" / "r1+rejudge-claude-new-judge").exists()

        # --yes: exactly the estimated requests are sent
        proc = evalkit(root, "rejudge", "--judge", "claude-new-judge", "--yes", env=env)
        done = json.loads(proc.stdout.strip().splitlines()[-1])
        assert server.message_calls() - graded == est["uncached_calls"] == done["calls_sent"]
        side = root / "site" / "r1+rejudge-claude-new-judge"
        result = json.loads((side / "rejudge.json").read_text())
        assert result["old_model"] == "claude-test-judge" and result["new_model"] == "claude-new-judge"

        # the agreement follows the server's rule: old = the old model's first answer, new = the new model's
        rows = [r for r in result["outputs"] if r["old"]]
        assert rows and all(r["new_status"] == "judged" for r in rows)
        for r in rows:
            generated = generated_file(root, r["system"], r["case"])
            assert r["old"] == judge_values("claude-test-judge", generated, 0)
            assert r["new"] == judge_values("claude-new-judge", generated, 0)
        fields = {f["field"]: f for f in result["fields"]}
        # byte-identical outputs of several systems on a case are one item: the first of each, in run order
        distinct = list({(r["case"], generated_file(root, r["system"], r["case"])): r for r in reversed(rows)}.values())
        assert len(distinct) < len(rows)  # the demo systems repeat each other: not a vacuous check
        for name in [*SCORE_NAMES, "is_compilable"]:
            old, new = [r["old"][name] for r in distinct], [r["new"][name] for r in distinct]
            f = fields[name]
            assert (f["n"], f["outputs"]) == (len(distinct), len(rows))
            assert f["changed"] == sum(a != b for a, b in zip(old, new))
            assert abs(f["mean_difference"] - sum(float(b) - float(a) for a, b in zip(old, new)) / len(distinct)) < 1e-12
            if name == "is_compilable":
                expected = cohen_kappa_score(new, old)
            else:
                expected = cohen_kappa_score(new, old, weights="quadratic", labels=[1, 2, 3, 4, 5])
            assert abs(f["agreement"]["kappa"] - expected) < 1e-9, name
        print(f"figures: rejudge estimate {est['uncached_calls']} = sent {done['calls_sent']}; "
              f"{ {n: (f['n'], f['agreement']['kappa'], f['mean_difference']) for n, f in fields.items()} }")
        page = (side / "index.html").read_text()
        assert "Agreement per field" in page and "claude-new-judge" in page

        # a rerun pays nothing: the new verdicts are in the response cache
        proc = evalkit(root, "rejudge", "--judge", "claude-new-judge", "--yes", env=env)
        assert json.loads(proc.stdout.strip().splitlines()[-1])["calls_sent"] == 0
        assert server.message_calls() - graded == est["uncached_calls"]
        assert json.loads(evalkit(root, "rejudge", "--judge", "claude-new-judge", env=env)
                          .stdout.strip().splitlines()[-1])["uncached_calls"] == 0

        # bad input: exit 2 with a message, no traceback
        bad = evalkit(root, "rejudge", "--judge", "claude-new-judge", "--release", "nope", env=env, check=False)
        assert bad.returncode == 2 and "no report of release 'nope'" in bad.stderr and "Traceback" not in bad.stderr
        clash = evalkit(root, "rejudge", "--judge", "claude-x", "--into", "r1", env=env, check=False)
        assert clash.returncode == 2 and "must not overwrite a release" in clash.stderr
        nokey = evalkit(root, "rejudge", "--judge", "claude-x", "--yes", env={"ANTHROPIC_API_KEY": ""}, check=False)
        assert nokey.returncode == 2 and "ANTHROPIC_API_KEY" in nokey.stderr


def test_audit_api_failure_is_recorded_and_asked_again_next_run(tmp_path: Path) -> None:
    judge = Judge()
    judge.fail_pairwise = True
    env = {"ANTHROPIC_API_KEY": KEY}
    with FakeAnthropic(responder=judge) as server:
        root = make_project(tmp_path / "p", cases=["ejb-stateless"], systems=SYSTEMS_YAML, extra=(
            f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n"
            f"  audit: {{sample: 1, pairwise: true}}\n"))
        run(root, env=env)
        audit = json.loads((root / "site/r1/report.json").read_text())["judge_audit"]
        assert audit["incomplete"] is True and audit["pairwise"]["flip_rate"]["n"] == 0
        assert any("API failure" in n for n in audit["notes"])
        assert "API failure" in (root / "site/r1/index.html").read_text()
        judge.fail_pairwise = False
        calls = server.message_calls()
        assert "audit:run" in run(root, env=env)  # nothing else changed: the failure alone reruns the audit
        audit = json.loads((root / "site/r1/report.json").read_text())["judge_audit"]
        assert audit["incomplete"] is False and audit["pairwise"]["flip_rate"]["n"] > 0
        asked = {(generated_file(root, p["a"], p["case"]), generated_file(root, p["b"], p["case"]))
                 for p in audit["pairwise"]["pairs"]}
        questions = asked | {(b, a) for a, b in asked}  # both orders; identical contents share one cached answer
        assert server.message_calls() - calls == len(questions)  # only the pairs' questions are asked again
        assert "audit:run" not in run(root, env=env)


def test_audit_without_key_asks_nothing_and_says_so(tmp_path: Path) -> None:
    with FakeAnthropic(responder=Judge()) as server:
        root = make_project(tmp_path / "p", cases=["ejb-stateless"], systems=SYSTEMS_YAML, extra=(
            f"judge:\n  base_url: {server.base_url}\n  audit: {{repeats: 2, pairwise: true, systems: [rules, nobody]}}\n"))
        run(root, env={"ANTHROPIC_API_KEY": ""})
        assert server.message_calls() == 0
        audit = json.loads((root / "site/r1/report.json").read_text())["judge_audit"]
        assert audit["status"] == "not_configured" and audit["repeats"] is None and audit["pairwise"] is None
        assert audit["notes"] == ["judge.audit.systems names no system of the config: nobody"]
        assert "Not run: the judge is not configured" in (root / "site/r1/index.html").read_text()


def test_audit_in_batch_mode_rides_the_grade_batch(tmp_path: Path) -> None:
    """judge.mode batch: the audit's requests go out in the grade stage's Message Batch (priced at half by the
    estimate), and the audit then reads them from the response cache: no request is sent one by one."""
    judge = Judge()
    env = {"ANTHROPIC_API_KEY": KEY}
    with FakeAnthropic(responder=judge) as server:
        root = make_project(tmp_path / "p", cases=["ejb-stateless", "jpa-entity"], systems=SYSTEMS_YAML, extra=(
            f"judge:\n  model: claude-test-judge\n  base_url: {server.base_url}\n  mode: batch\n"
            f"  batch_poll_s: 0.05\n  audit: {{sample: 2, repeats: 2, pairwise: true}}\n"))
        evalkit(root, "run", "generate", env=env)
        est = estimate(root)
        assert est["batch"] is True and est["by_asker"]["judge audit"] > 0 and est["by_asker"]["pairwise judge"] > 0
        run(root, env=env)
        assert server.counts["messages"] == 0 and server.counts["batch_items"] == est["uncached_calls"]
        audit = json.loads((root / "site/r1/report.json").read_text())["judge_audit"]
        assert audit["status"] == "done" and audit["calls_sent"] == 0 and audit["requests"] > 0
        assert audit["pairwise"]["flip_rate"]["n"] > 0 and audit["repeats"]["fields"][0]["n"] > 0
        # the audit's spend is its share of the batch: its own requests (repeats past the grade stage's samples and
        # the pairwise ones), priced like the batch (the record's per-asker costs), said on the page
        own = est["by_asker"]["judge audit"] + est["by_asker"]["pairwise judge"]
        assert audit["batch_requests"] == own
        record = json.loads((root / ".evalkit/batches/grade.json").read_text())
        assert audit["batch_cost_usd"] == record["by_asker"]["judge audit"]["cost_usd"] + \
            record["by_asker"]["pairwise judge"]["cost_usd"] > 0
        assert sum(s["requests"] for s in record["by_asker"].values()) == est["uncached_calls"]
        page = (root / "site/r1/index.html").read_text()
        assert f"{own} sent for the audit in the grade stage's Message Batch (${audit['batch_cost_usd']:.4f}" in page
