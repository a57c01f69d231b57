"""Suite kinds are one module each (evalkit.kinds): nothing outside them compares a kind's name, an outside
package adds a kind through an entry point with no edit of evalkit, and a kind's typed inputs reject a
misspelled key at `evalkit check`."""

from __future__ import annotations

import ast
import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from evalkit.kinds import kind, names
from evalkit.kinds.base import Answers, Execution, Judging, Kind
from tests.helpers import REPO, evalkit, evalkit_here, plugin_dist

OWN_KINDS = ("agentic", "e2e", "generation", "migration", "patch", "rag")
ALLOWED = ("kinds", "importers")
"""Packages that may name a kind: the kinds themselves, and importers (which write files of a kind)."""


def _mentions_kind(node: ast.AST) -> bool:
    """An expression about a suite kind: `case.kind`, `kind`, `suite_kind`, `kind_of(x)`..."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and "kind" in sub.id.lower():
            return True
        if isinstance(sub, ast.Attribute) and "kind" in sub.attr.lower():
            return True
    return False


def _kind_literals(node: ast.AST, kind_names: set[str]) -> list[ast.Constant]:
    """String constants naming a kind in ``node`` (itself, or the elements of a tuple/list/set literal)."""
    if isinstance(node, ast.Constant) and node.value in kind_names:
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e for e in node.elts if isinstance(e, ast.Constant) and e.value in kind_names]
    return []


def _all_kinds(elts: list[ast.expr | None], kind_names: set[str]) -> bool:
    return bool(elts) and all(isinstance(e, ast.Constant) and e.value in kind_names for e in elts)


def kind_switches(source: str, kind_names: set[str]) -> list[tuple[int, str]]:
    """(line, what) of every place ``source`` switches on a suite kind by name: a comparison or membership test
    of a kind expression against a kind-name literal; a table of kind names (``X_KINDS = ("patch", ...)``, a
    dict keyed by kind names) or a lookup in one by a kind-name literal; ``@scorer("rag")``-style registration. A
    metric's ``kinds=(...)`` declaration is not a switch (test_every_kind_declares_registry_metrics checks it)."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(source)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    declared = {id(kw.value) for node in calls for kw in node.keywords if kw.arg == "kinds"}  # metric(..., kinds=)
    declared |= {id(arg) for node in calls if isinstance(node.func, ast.Name) and node.func.id == "adapter"
                 for arg in node.args[1:]}  # @adapter("anthropic", {...}): the kinds an adapter answers
    for node in ast.walk(tree):
        if id(node) in declared:
            continue
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            literals = [lit for op in operands for lit in _kind_literals(op, kind_names)]
            if literals and any(_mentions_kind(op) for op in operands):
                found.append((node.lineno, f"compares a kind with {literals[0].value!r}"))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and _all_kinds(list(node.elts), kind_names):
            found.append((node.lineno, "a table of kind names"))
        elif isinstance(node, ast.Dict) and len(node.keys) >= 2 and _all_kinds(node.keys, kind_names):
            found.append((node.lineno, "a dict keyed by kind names"))
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and node.slice.value in kind_names and _upper_name(node.value):
            found.append((node.lineno, f"looks up {node.slice.value!r} in a table"))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            args = [a for a in node.args if isinstance(a, ast.Constant) and a.value in kind_names]
            if args and (name == "scorer" or (name == "get" and isinstance(func, ast.Attribute)
                                              and _upper_name(func.value))):
                found.append((node.lineno, f"{name}({args[0].value!r})"))
    return sorted(set(found))


def _upper_name(node: ast.AST) -> bool:
    """A module constant (a table): ``LEADERBOARD_METRICS``, ``mod.BUILDERS``."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return bool(name) and name.isupper()


def project_switches(root: Path, kind_names: set[str]) -> list[str]:
    out = []
    for path in sorted((root / "evalkit").rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[1] in ALLOWED:
            continue
        out += [f"{rel}:{line}: {what}" for line, what in kind_switches(path.read_text(encoding="utf-8"), kind_names)]
    return out


def test_scanner_finds_the_switches_kinds_replace() -> None:
    """The scan recognises each way evalkit switched on a kind before evalkit/kinds (so a clean scan means something),
    and not what only looks alike (an HTTP method named patch, a rubric field's kind)."""
    old = textwrap.dedent('''\
        EXECUTED_KINDS = {"patch", "agentic", "e2e"}
        AUDITED_KINDS = ("migration",)
        BUILDERS = {"e2e": e2e_detail, "rag": rag_detail}
        if case.kind == "migration":
            pass
        if suite.kind in ("migration", "generation"):
            pass
        what = "harness" if case.kind == "patch" else "reference"
        ranked = LEADERBOARD_METRICS.get("migration", ())
        LEADERBOARD_METRICS["migration"] = ranked

        @scorer("rag")
        def f():
            pass
        ''')
    found = kind_switches(old, set(OWN_KINDS))
    assert sorted({line for line, _ in found}) == [1, 2, 3, 4, 6, 8, 9, 10, 12], found
    alike = textwrap.dedent('''\
        if method.lower() in ("get", "post", "put", "patch"):
            pass
        if field.kind == "boolean":
            pass
        view = {"patch": patch, "text": text}
        metric(name="resolved", kinds=("patch",))

        @adapter("anthropic", {"migration", "generation"})
        def run():
            pass
        ''')
    assert kind_switches(alike, set(OWN_KINDS)) == []


def test_no_module_outside_the_kinds_compares_a_kind_name() -> None:
    switches = project_switches(REPO, set(names()))
    assert not switches, "suite kinds switched on by name (ask evalkit.kinds.kind(name) instead):\n" + "\n".join(switches)


def test_evalkit_kinds_are_registered_entry_points() -> None:
    from evalkit.plugins import OWN, registry

    assert set(OWN_KINDS) <= set(names())
    for name in OWN_KINDS:
        k = kind(name)
        assert isinstance(k, Kind) and k.name == name and registry("kinds").source(name) == OWN
        assert k.stages[0] == "generate" and k.stages[-2:] == ["grade", "score"]
        assert ("execute" in k.stages) == k.execution.executed
        assert k.inputs is not None and k.reference is not None, name  # every own kind's cases are typed
        assert k.scorers(), name
    with pytest.raises(KeyError, match="known: .*migration"):
        kind("no-such-kind")


def test_the_policies_of_evalkit_kinds() -> None:
    """Three policy objects hold what the yes/no class attributes said (values as before they were grouped)."""
    patch, migration, generation = kind("patch"), kind("migration"), kind("generation")
    assert patch.execution == Execution(executed=True, validated=True, execute_reads_validation=True,
                                        validation_label="harness validation")
    assert patch.judging == Judging(changes_judge=True) and patch.answers == Answers()
    assert migration.judging.audited and migration.answers == Answers(code_answer=True, solved_store=True)
    assert generation.answers.criteria and generation.judging.graded_by_model and not generation.execution.executed
    assert kind("e2e").execution.final_tree_after_execute and kind("agentic").judging.takes_rubric


def test_an_entry_point_naming_the_kind_class_is_bad_input() -> None:
    """The class instead of an instance: InputError (exit 2) naming the entry point, no traceback."""
    from evalkit import plugins
    from evalkit.errors import InputError

    class Classy(Kind):
        name = "classy"

    try:
        plugins.registry("kinds").register("classy", Classy)
        with pytest.raises(InputError, match=r"entry point evalkit.kinds 'classy' .*is not a suite kind; expected"):
            kind("classy")
    finally:
        plugins.forget()


def test_a_kind_written_with_the_flat_flags_gets_them_in_its_policies() -> None:
    """An outside kind written before the policies (``executed = True`` as its own class attribute) keeps working."""

    class Old(Kind):
        name = "old"
        executed = True
        validation_label = "its own validation"
        audited = True
        code_answer = True
        rubric_graded = True  # read by nothing any more: accepted and dropped

    old = Old()
    assert old.execution == Execution(executed=True, validation_label="its own validation")
    assert old.judging == Judging(audited=True) and old.answers == Answers(code_answer=True)
    assert old.stages == ["generate", "execute", "grade", "score"]
    assert not hasattr(Old, "executed") and not hasattr(Old, "rubric_graded")  # one place says it: the policy
    assert Kind.execution == Execution() and Kind.judging == Judging()  # the base class is untouched

    class Newer(Old):
        judging = Judging(changes_judge=True)

    assert Newer.execution.executed and Newer.judging == Judging(changes_judge=True)


def test_every_kind_declares_registry_metrics() -> None:
    """A kind's declared metrics and leaderboard are registry metrics whose `kinds` list it, and no registry metric
    lists a kind that does not declare it (CodeBLEU is not a patch or generation metric: neither computes it)."""
    from evalkit.metrics.registry import METRICS

    for name in OWN_KINDS:
        k = kind(name)
        for metric in k.metrics:
            assert metric in METRICS and name in METRICS[metric].kinds, (name, metric)
        for metric in k.leaderboard:
            assert metric in METRICS and (not METRICS[metric].kinds or name in METRICS[metric].kinds), (name, metric)
    for metric, info in METRICS.items():
        for name in info.kinds:
            if name in OWN_KINDS and not metric.startswith("judge_"):  # a judge rubric's fields: any judged kind
                assert metric in kind(name).metrics, f"{metric} lists kind {name}, which does not declare it"
    assert "patch" not in METRICS["codebleu"].kinds and "generation" not in METRICS["codebleu"].kinds


NOT_IN_DEMO = {
    "time_per_resolved_s": "time-like: left out of the golden numbers",
    "e2e_time_s": "time-like: left out of the golden numbers",
    "corpus_codebleu": "a suite-level figure (report corpus), not a per-case metric",
    "rubric_fallback_score": "needs a fallback judge",
    **{m: "needs a patch system with samples: k > 1 (the demo's have one sample)"
       for m in ("pass_at_1", "pass_at_k", "pass_hat_k")},
    **{f"{unit}_{what}@20": "metrics.ks is 1, 3, 5, 10 by default" for unit in ("file", "function")
       for what in ("recall", "hit")},
    **{f"rag_{m}{sfx}": "needs an LLM judge" for m in ("faithfulness", "context_relevance", "answer_relevancy")
       for sfx in ("", "_5")},
}
"""Declared metrics the demo's report cannot hold, and why."""


def test_demo_scores_hold_only_metrics_their_kind_declares() -> None:
    """On the demo's scores (the metrics each suite of the demo's report.json aggregates, tests/data/
    demo_report_numbers.json): each suite's kind-specific metrics are all declared by exactly one kind, the six
    suites are the six kinds, and every metric a kind declares was produced there unless NOT_IN_DEMO says why."""
    from evalkit.metrics.registry import METRICS

    golden = json.loads((REPO / "tests" / "data" / "demo_report_numbers.json").read_text())
    produced_by: dict[str, set[str]] = {}
    for suite in golden["suites"]:
        produced = {m for per_system in suite["systems"].values() for m in per_system}
        own = {m for m in produced if m in METRICS and METRICS[m].kinds and not m.startswith("judge_")}
        owners = [n for n in OWN_KINDS if own <= set(kind(n).metrics)]
        assert len(owners) == 1, (sorted(own), owners)
        produced_by.setdefault(owners[0], set()).update(produced)
    assert sorted(produced_by) == sorted(OWN_KINDS)
    for name, produced in produced_by.items():
        never = set(kind(name).metrics) - produced - set(NOT_IN_DEMO)
        assert not never, f"kind {name} declares {sorted(never)}, which its demo suite never produced"


ECHO_MODULE = '''\
"""A small suite kind from an outside package: the system's answer text must equal the reference text."""

from pathlib import Path

from evalkit.contracts import ScoreContext, ScoreResult
from evalkit.kinds.base import Kind
from evalkit.metrics.registry import metric
from evalkit.models import Model


class EchoInputs(Model):
    """Inputs of an echo case."""

    prompt: str
    """What the system is asked to say back."""


class EchoReference(Model):
    """Reference of an echo case."""

    text: str
    """The answer expected, exactly (surrounding white space aside)."""


metric(name="echo_match", display="Echo match", aggregate="rate", binary=True, headline=True, primary=3,
       kinds=("echo",), description="Share of cases whose answer text equals the reference text.")


def echo_match(ctx: ScoreContext) -> ScoreResult:
    answer = ctx.sample.text if ctx.output.status == "ok" else None
    same = (answer or "").strip() == ctx.reference.text.strip()
    return ScoreResult({"echo_match": float(same)}, "the answer's text against the reference's")


class Echo(Kind):
    name = "echo"
    description = "Say the reference text back."
    inputs = EchoInputs
    reference = EchoReference
    metrics = ("echo_match",)
    leaderboard = ("echo_match",)
    templates = Path(__file__).parent / "echo_templates"

    def detail(self, case, arts):
        return {"expected": (case.reference or {}).get("text")}

    def scorers(self):
        return [echo_match, *super().scorers()]


KIND = Echo()
'''

ECHO_PARTIAL = '''\
<section id="kind-echo" class="kind"><h2>Echo: expected answer</h2>
{% for v in views %}{% set d = v.kind_detail %}<p class="echo-expected" data-system="{{ v.name }}">{{ d.expected if d else "" }}</p>
{% endfor %}</section>
'''

ECHO_SYSTEM = '''\
import json, os, sys
from pathlib import Path
case = json.loads(Path(os.environ["EVALKIT_CASE"]).read_text()) if os.environ.get("EVALKIT_CASE") else json.load(sys.stdin)
prompt = case["inputs"]["prompt"]
print(json.dumps({"text": prompt.upper() if "shout" in prompt else prompt}))
'''


def _echo_project(tmp_path: Path, suite_yaml: str) -> tuple[Path, Path, Path]:
    """The echo kind's distribution and a project folder with its `say` suite of two cases: (dist, project, suite)."""
    dist = plugin_dist(tmp_path / "dist", "evalkit-echo", {"evalkit.kinds": {"echo": "evalkit_echo:KIND"}},
                       {"evalkit_echo.py": ECHO_MODULE, "echo_system.py": ECHO_SYSTEM})
    (dist / "echo_templates").mkdir()
    (dist / "echo_templates" / "case_echo.html.j2").write_text(ECHO_PARTIAL)
    project = tmp_path / "proj"
    suite = project / "cases" / "say"
    suite.mkdir(parents=True)
    (suite / "suite.yaml").write_text(suite_yaml)
    (suite / "hello.yaml").write_text("id: hello\ninputs:\n  prompt: hello there\nreference:\n  text: hello there\n")
    (suite / "loud.yaml").write_text("id: loud\ninputs:\n  prompt: shout this\nreference:\n  text: shout this\n")
    return dist, project, suite


def test_an_outside_kind_runs_end_to_end(tmp_path: Path) -> None:
    """A separate distribution declares an `evalkit.kinds` entry point; a project with a suite of that kind and a
    command system runs (`python -m evalkit run`) with no edit of evalkit: the kind's metric is in report.json
    (one case matches, one does not) and its partial is on the case page."""
    dist, project, suite = _echo_project(tmp_path, "kind: echo\ndescription: Say it back.\n")
    shutil.copytree(REPO / "templates", project / "templates")
    (project / "evalkit.yaml").write_text(textwrap.dedent(f"""\
        release: r1
        templates_dir: templates
        systems:
          - name: echoer
            adapter: command
            command: ["{sys.executable}", "{dist / 'echo_system.py'}"]
        """))
    env = {"PYTHONPATH": os.pathsep.join([str(dist), str(REPO)])}
    check = evalkit(project, "check", env=env)
    assert "1 suites, 2 cases" in check.stdout or "2 cases" in check.stdout, check.stdout
    evalkit(project, "run", "-q", env=env, timeout=600)
    (report_file,) = (project / "site").glob("*/report.json")
    report = json.loads(report_file.read_text())
    (suite_summary,) = [s for s in report["suites"] if s["name"] == "say"]
    assert suite_summary["kind"] == "echo"
    agg = suite_summary["systems"]["echoer"]["echo_match"]
    assert agg["n"] == 2 and agg["value"] == pytest.approx(0.5)
    assert report["metric_info"]["echo_match"]["display"] == "Echo match"
    pages = list((project / "site").rglob("*.html"))
    hello = [p for p in pages if "hello" in p.name and "say" in str(p)]
    assert hello, sorted(str(p) for p in pages)[:20]
    html = hello[0].read_text()
    assert 'id="kind-echo"' in html and "hello there" in html
    # a case of the outside kind with a misspelled key: `evalkit check` names it at its line
    (suite / "bad.yaml").write_text("id: bad\ninputs:\n  promt: hi\nreference:\n  text: hi\n")
    bad = evalkit(project, "check", env=env, check=False)
    assert bad.returncode == 2 and "say/bad.yaml:3: inputs.promt" in bad.stderr, bad.stderr


def test_unknown_kind_names_the_registered_ones(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    suite = project / "cases" / "s"
    suite.mkdir(parents=True)
    (suite / "suite.yaml").write_text("description: x\nkind: echo\n")
    (project / "evalkit.yaml").write_text("release: r1\nsystems:\n  - {name: gold, adapter: gold}\n")
    proc = evalkit(project, "check", check=False)
    assert proc.returncode == 2
    assert "s/suite.yaml:2: kind:" in proc.stderr and "unknown suite kind 'echo'" in proc.stderr, proc.stderr
    assert f"expected one of {', '.join(OWN_KINDS)}" in proc.stderr, proc.stderr


def test_misspelled_rag_key_is_a_check_problem_at_its_line(tmp_path: Path) -> None:
    """A rag case's inputs are typed (RagInputs): a misspelled key fails `evalkit check` with file:line, exit 2,
    instead of passing and failing every run as an internal error."""
    project = tmp_path / "proj"
    shutil.copytree(REPO / "cases" / "rag", project / "cases" / "rag")
    (project / "evalkit.yaml").write_text("release: r1\nsystems:\n  - {name: gold, adapter: gold}\n")
    assert evalkit_here(project, "check").returncode == 0
    case = project / "cases" / "rag" / "ejb-stateless-to-cdi.yaml"
    lines = case.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("contexts:"))
    lines[at] = lines[at].replace("contexts:", "contexs:")
    case.write_text("\n".join(lines) + "\n")
    proc = evalkit_here(project, "check", check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"rag/ejb-stateless-to-cdi.yaml:{at + 1}: inputs.contexs: unknown key" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_case_saying_another_kind_than_its_suite_is_a_check_problem_at_its_line(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    shutil.copytree(REPO / "cases" / "rag", project / "cases" / "rag")
    (project / "evalkit.yaml").write_text("release: r1\nsystems:\n  - {name: gold, adapter: gold}\n")
    case = project / "cases" / "rag" / "ejb-stateless-to-cdi.yaml"
    case.write_text("kind: rag\n" + case.read_text())  # its own kind: accepted
    assert evalkit_here(project, "check").returncode == 0
    case.write_text(case.read_text().replace("kind: rag\n", "kind: migration\n"))
    proc = evalkit_here(project, "check", check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "rag/ejb-stateless-to-cdi.yaml:1: kind: 'migration' contradicts the suite's kind 'rag'" in proc.stderr, proc.stderr


def test_loaded_cases_hold_their_kinds_models() -> None:
    """Inputs and reference stay typed from YAML on (the kind's models), the rest of the case too."""
    from evalkit.casemodels import AssertionSpec
    from evalkit.project import load

    project = load(str(REPO / "evalkit.yaml")).project
    seen = set()
    for case in project.cases:
        own = kind(case.kind)
        assert case.ok, case.problems
        for part, model in (("inputs", own.inputs), ("reference", own.reference)):
            if model is not None:
                assert type(getattr(case, part)) is model, (case.key, part)
        assert all(isinstance(a, AssertionSpec) for a in case.assertions)
        assert case.data["inputs"] == case.inputs.model_dump(mode="json")  # what a command system gets
        seen.add(case.kind)
    assert seen == set(OWN_KINDS)
    migration = next(c for c in project.cases if c.kind == "migration")
    with pytest.raises(TypeError, match="expected RagInputs"):
        migration.inputs_as(kind("rag").inputs)  # pyright: ignore[reportArgumentType]


def test_shipped_case_schema_per_kind_types_inputs() -> None:
    from evalkit.schemas import SCHEMA_DIR

    for name in OWN_KINDS:
        schema = json.loads((SCHEMA_DIR / f"case-{name}.schema.json").read_text())
        ref = schema["properties"]["inputs"]["$ref"].rsplit("/", 1)[-1]
        model = kind(name).inputs
        assert model is not None and ref == model.__name__
        assert schema["$defs"][ref].get("additionalProperties") is False  # a misspelled key is refused
    suite = json.loads((SCHEMA_DIR / "suite.schema.json").read_text())
    assert set(OWN_KINDS) <= set(suite["properties"]["kind"]["enum"])


def test_evalkit_schema_writes_an_outside_kinds_case_schema(tmp_path: Path) -> None:
    """`evalkit schema --out DIR` with an outside kind installed: DIR gets its case-<kind>.schema.json (typed inputs and
    reference: a misspelled key is refused) and its branch of case.schema.json, beside evalkit's own."""
    from jsonschema import Draft202012Validator

    dist, project, _suite = _echo_project(tmp_path, "kind: echo\n")
    out = tmp_path / "schemas"
    proc = evalkit(project, "schema", "--out", str(out), env={"PYTHONPATH": os.pathsep.join([str(dist), str(REPO)])})
    assert proc.returncode == 0, proc.stderr
    assert str(out / "case-echo.schema.json") in proc.stdout.splitlines()
    assert (out / "case-migration.schema.json").is_file() and (out / "config.schema.json").is_file()
    good = {"id": "hello", "inputs": {"prompt": "hi"}, "reference": {"text": "hi"}}
    typo = {"id": "hello", "inputs": {"promt": "hi"}, "reference": {"text": "hi"}}
    own = Draft202012Validator(json.loads((out / "case-echo.schema.json").read_text()))
    assert own.is_valid(good) and not own.is_valid(typo)
    union = Draft202012Validator(json.loads((out / "case.schema.json").read_text()))
    assert union.is_valid({**good, "kind": "echo"}) and not union.is_valid({**typo, "kind": "echo"})
    shipped = json.loads((REPO / "evalkit" / "schemas" / "case.schema.json").read_text())
    assert "echo" not in json.dumps(shipped["properties"]["kind"])  # the package's own schemas: its own kinds only


def test_an_outside_kind_whose_inputs_accept_unknown_keys_is_refused(tmp_path: Path) -> None:
    """A plain pydantic BaseModel ignores a misspelled case key in silence: the kind is refused when it loads,
    at `evalkit check` (exit 2, naming the entry point, its distribution and the model)."""
    loose = ECHO_MODULE.replace("class EchoInputs(Model):", "class EchoInputs(BaseModel):").replace(
        "from evalkit.models import Model\n", "from evalkit.models import Model\nfrom pydantic import BaseModel\n")
    dist = plugin_dist(tmp_path / "dist", "evalkit-loose", {"evalkit.kinds": {"echo": "evalkit_loose:KIND"}},
                       {"evalkit_loose.py": loose})
    project = tmp_path / "proj"
    (project / "cases" / "say").mkdir(parents=True)
    (project / "cases" / "say" / "suite.yaml").write_text("kind: echo\n")
    (project / "cases" / "say" / "hi.yaml").write_text("id: hi\ninputs:\n  promt: hi\nreference:\n  text: hi\n")
    (project / "evalkit.yaml").write_text("release: r1\nsystems:\n  - {name: gold, adapter: gold}\n")
    proc = evalkit(project, "check", env={"PYTHONPATH": os.pathsep.join([str(dist), str(REPO)])}, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "entry point evalkit.kinds 'echo' (from evalkit-loose)" in proc.stderr
    assert "Echo.inputs is EchoInputs, which accepts unknown keys" in proc.stderr and "Traceback" not in proc.stderr


def test_editing_an_outside_kinds_scorer_rescores(tmp_path: Path) -> None:
    """A plug-in's code is part of the stages' keys: edit the outside kind's scorer and the next run rescores its
    cases (the report does not mix old and new values); a run with nothing edited redoes nothing."""
    dist, project, suite = _echo_project(tmp_path, "kind: echo\n")
    (project / "evalkit.yaml").write_text(textwrap.dedent(f"""\
        release: r1
        systems:
          - name: echoer
            adapter: command
            command: ["{sys.executable}", "{dist / 'echo_system.py'}"]
        """))
    env = {"PYTHONPATH": os.pathsep.join([str(dist), str(REPO)])}

    def echo_match() -> float:
        evalkit(project, "run", "-q", env=env, timeout=600)
        report = json.loads(next((project / "site").glob("*/report.json")).read_text())
        (summary,) = [s for s in report["suites"] if s["name"] == "say"]
        return summary["systems"]["echoer"]["echo_match"]["value"]

    assert echo_match() == pytest.approx(0.5)
    scores = project / ".evalkit" / "artifacts" / "echoer" / "say" / "hello" / "scores.json"
    before = scores.stat().st_mtime_ns
    assert echo_match() == pytest.approx(0.5) and scores.stat().st_mtime_ns == before  # nothing edited: no rescore
    module = dist / "evalkit_echo.py"
    scorer_line = "(answer or \"\").strip() == ctx.reference.text.strip()"
    assert scorer_line in module.read_text()
    module.write_text(module.read_text().replace(scorer_line,
                                                 "(answer or \"\").strip().lower() == ctx.reference.text.strip().lower()"))
    assert echo_match() == pytest.approx(1.0)  # case-blind now: 'SHOUT THIS' matches too
