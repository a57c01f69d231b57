"""Adapters, assertion types, sandbox backends and model providers from an OUTSIDE distribution.

Each test installs a small package (a dist-info with entry points, tests/helpers.plugin_dist) on
PYTHONPATH and runs `python -m evalkit` in a subprocess, as a user who pip-installed it would: no
edit of evalkit, no in-process registration. A misspelled name in evalkit.yaml or a case is exit 2
naming file:line and the registered names, the outside package's among them.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from helpers import REPO, evalkit, make_project, patch_project, plugin_dist, without_plugin_autoload

ADAPTER = textwrap.dedent('''\
    """An adapter that answers a migration case with its legacy file in capitals."""
    from evalkit.artifacts import Sample


    def shout(system, case, sample_index, ctx):
        inputs = case.inputs
        target = inputs["file_path"] if isinstance(inputs, dict) else inputs.file_path
        text = case.read("inputs.legacy_file") or ""
        suffix = system.settings.get("suffix", "")
        return Sample(files={target: text.upper() + suffix})
    ''')

ASSERTION = textwrap.dedent('''\
    """An assertion type: the checked text has at most `value` lines."""


    from evalkit.contracts import AssertionContext, AssertionOutcome


    def max_lines(ctx: AssertionContext) -> AssertionOutcome:
        n = len(ctx.text.splitlines())
        return AssertionOutcome(n <= int(ctx.spec.value), f"{n} lines (at most {ctx.spec.value})")
    ''')

BACKEND = textwrap.dedent('''\
    """A sandbox backend: the local backend, leaving a line in $MARKER_FILE for every sandbox it opens."""
    import os

    from evalkit.sandbox.backends import LocalBackend


    class MarkerBackend(LocalBackend):
        auto_preference = None  # never picked by auto: only when sandbox.backend names it

        def open(self, spec, ctl):
            with open(os.environ["MARKER_FILE"], "a") as f:
                f.write(" ".join(spec.fail_to_pass) + "\\n")
            return super().open(spec, ctl)


    MARKER = MarkerBackend()
    ''')

PROVIDER = textwrap.dedent('''\
    """A model provider answering canned judge verdicts; every call it answers adds a line to $CANNED_LOG."""
    import json
    import os

    from evalkit.llm.pricing import Usage
    from evalkit.llm.providers.base import ProviderReply


    class CannedProvider:
        name = "canned"
        default_base_url = "canned://verdicts"
        cache_scoped = True

        def __init__(self, settings):
            self.endpoint = settings.base_url or self.default_base_url

        def send(self, request, key):
            prompt = "".join(b.get("text", "") for m in request.messages
                             for b in (m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}]))
            generated = prompt.split(": generated file>>>", 1)[-1]
            rule = 2 if "import javax." in generated or "@Stateless" in generated else 5
            verdict = {"semantic_equivalence_score": 5, "rule_adherence_score": rule, "faithfulness_score": 4,
                       "code_quality_score": 4, "is_compilable": True, "detailed_notes": "canned"}
            with open(os.environ["CANNED_LOG"], "a") as f:
                f.write(request.model + "\\n")
            return ProviderReply(text="```json\\n" + json.dumps(verdict) + "\\n```", model=request.model,
                                 stop_reason="end_turn", usage=Usage(input_tokens=1000, output_tokens=100))

        def classify(self, exc):
            return None

        def count_tokens(self, request, key):
            return None
    ''')

ENTRY_POINTS = {
    "evalkit.adapters": {"shout": "extra_parts.adapter:shout"},
    "evalkit.assertions": {"max_lines": "extra_parts.assertion:max_lines"},
    "evalkit.sandbox_backends": {"marker": "extra_parts.backend:MARKER"},
    "evalkit.providers": {"canned": "extra_parts.provider:CannedProvider"},
}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The outside distribution `evalkit-extra-parts`, one package holding a part of each point."""
    folder = tmp_path_factory.mktemp("dist")
    plugin_dist(folder, "evalkit-extra-parts", ENTRY_POINTS, {})
    package = folder / "extra_parts"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, source in [("adapter", ADAPTER), ("assertion", ASSERTION), ("backend", BACKEND),
                         ("provider", PROVIDER)]:
        (package / f"{name}.py").write_text(source)
    return folder


def env_for(dist: Path, **extra: str) -> dict[str, str]:
    return {"PYTHONPATH": f"{dist}:{REPO}", **extra}


def case_yaml(project: Path, case: str) -> Path:
    return project / "cases" / "migration" / case / "case.yaml"


def add_assertions(project: Path, case: str, *specs: str) -> None:
    path = case_yaml(project, case)
    text = path.read_text()
    assert "assertions:\n" in text
    path.write_text(text.replace("assertions:\n", "assertions:\n" + "".join(f"  - {s}\n" for s in specs), 1))


def artifact(project: Path, system: str, case: str, stage: str) -> dict:
    found = [p for p in (project / ".evalkit" / "artifacts").rglob(f"{stage}.json")
             if system in p.parts and case in p.parts]
    assert len(found) == 1, found
    return json.loads(found[0].read_text())


SHOUT_SYSTEMS = textwrap.dedent("""\
    systems:
      - name: naive
        adapter: command
        command: ["{python}", "-m", "evalkit.demo_systems.naive_rewriter"]
      - name: gold
        adapter: gold
      - name: loud
        adapter: shout
        settings: {suffix: "// LOUD"}
    """)


@pytest.fixture(scope="module")
def shouted(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migration project whose `loud` system is the outside adapter and whose cases use `max_lines`, run once."""
    project = make_project(tmp_path_factory.mktemp("shout") / "p", cases=["jpa-entity", "cdi-inject"],
                           systems=SHOUT_SYSTEMS)
    add_assertions(project, "jpa-entity", "{type: max_lines, value: 1000, description: short enough}")
    add_assertions(project, "cdi-inject", "{type: max_lines, value: 3, description: three lines at most}")
    assert evalkit(project, "check", env=env_for(dist)).returncode == 0
    evalkit(project, "run", env=env_for(dist))
    return project


def test_an_outside_adapter_answers_the_cases(shouted: Path) -> None:
    for case in ("jpa-entity", "cdi-inject"):
        legacy = (shouted / "cases" / "migration" / case / "legacy").iterdir().__next__().read_text()
        output = artifact(shouted, "loud", case, "output")
        files = output["samples"][0]["files"]
        assert list(files.values()) == [legacy.upper() + "// LOUD"]
        assert output["samples"][0]["status"] == "ok"


def test_an_outside_assertion_type_grades_pass_and_fail(shouted: Path) -> None:
    def result(case: str) -> dict:
        grades = artifact(shouted, "gold", case, "grades")
        found = [a for a in grades["assertions"] if a["type"] == "max_lines"]
        assert len(found) == 1, grades["assertions"]
        return found[0]

    long_enough = result("jpa-entity")
    assert long_enough["passed"] is True and long_enough["description"] == "short enough"
    too_long = result("cdi-inject")
    expected_lines = len((REPO / "cases/migration/cdi-inject").glob("expected/*").__next__().read_text().splitlines())
    assert too_long["passed"] is False and too_long["detail"] == f"{expected_lines} lines (at most 3)"


def line_of(path: Path, needle: str) -> int:
    return next(i + 1 for i, line in enumerate(path.read_text().splitlines()) if needle in line)


@pytest.mark.parametrize("where, good, bad, known", [
    ("case", "type: max_lines", "type: max_line", "expected one of contains, file_set, icontains, is_json, max_lines"),
    ("config", "adapter: shout", "adapter: shuot", "expected one of anthropic, canary, command, empty, gold, openai, recorded, "
                                                   "shout"),
    ("config", "backend: marker", "backend: markr", "expected one of auto, docker, local, marker"),
    ("config", "provider: canned", "provider: caned", "expected one of anthropic, canned, openai"),
])
def test_a_misspelled_name_says_file_line_and_the_registered_names(dist: Path, tmp_path: Path, where: str, good: str,
                                                                    bad: str, known: str) -> None:
    project = make_project(tmp_path / "p", cases=["jpa-entity"], systems=SHOUT_SYSTEMS,
                           extra="sandbox:\n  backend: marker\njudge:\n  provider: canned\n")
    add_assertions(project, "jpa-entity", "{type: max_lines, value: 10}")
    assert evalkit(project, "check", env=env_for(dist)).returncode == 0  # every name is registered
    path = case_yaml(project, "jpa-entity") if where == "case" else project / "evalkit.yaml"
    path.write_text(path.read_text().replace(good, bad))
    proc = evalkit(project, "check", env=env_for(dist), check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = proc.stdout + proc.stderr
    assert f"{path.name}:{line_of(path, bad)}:" in err and bad.split(": ")[1] in err, err
    assert known in err, err
    assert "Traceback" not in err


def test_an_outside_sandbox_backend_runs_the_patch_tests(dist: Path, tmp_path: Path) -> None:
    project = patch_project(tmp_path / "p", backend="marker", cases=["round-half-up"], systems=("gold", "empty"))
    without_plugin_autoload(project / "cases" / "patch" / "suite.yaml")  # the point is the backend, not pytest's plug-ins
    marker = tmp_path / "opened.txt"
    evalkit(project, "run", env=env_for(dist, MARKER_FILE=str(marker)))
    opened = marker.read_text().splitlines()
    assert opened and set(opened) == {"tests/test_round.py::test_round_half_up"}  # the case's sandboxes came from the outside backend
    gold = artifact(project, "gold", "round-half-up", "execution")["runs"][0]
    assert gold["status"] == "completed" and gold["resolved"] is True and gold["isolation"] == "local"
    empty = artifact(project, "empty", "round-half-up", "execution")["runs"][0]
    assert empty["status"] == "completed" and empty["resolved"] is False
    report = json.loads(next((project / "site").rglob("report.json")).read_text())
    assert report["sandbox"]["backend"] == "marker" and report["sandbox"]["chosen"] == "marker"


def test_an_outside_provider_judges_and_the_client_cache_answers_the_rerun(dist: Path, tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", cases=["jpa-entity", "ejb-stateless"], extra=textwrap.dedent("""\
        judge:
          provider: canned
          model: canned-judge-1
          prices:
            canned-judge-1: {input: 2.0, output: 8.0, cache_read: 0.2, cache_write: 2.5}
        """))
    log = tmp_path / "calls.txt"
    env = env_for(dist, CANNED_API_KEY="canned-key-not-secret", CANNED_LOG=str(log))
    evalkit(project, "run", env=env)
    calls = log.read_text().splitlines()
    assert calls and set(calls) == {"canned-judge-1"}
    grades = artifact(project, "gold", "jpa-entity", "grades")
    judge = grades["judge"]
    assert judge["status"] == "judged" and judge["model"] == "canned-judge-1"
    assert judge["scores"]["rule_adherence_score"] == 5
    assert judge["cost_usd"] == pytest.approx((1000 * 2.0 + 100 * 8.0) / 1e6)  # the client's pricing on top
    naive = artifact(project, "naive", "ejb-stateless", "grades")["judge"]
    assert naive["scores"]["rule_adherence_score"] == 2  # the naive rewriter leaves EJB code: the canned judge says so
    # lose doit's state and every artifact: the client's response cache answers, the provider is not asked
    shutil.rmtree(project / ".evalkit" / "artifacts")
    (project / ".evalkit" / "doit.sqlite3").unlink()
    evalkit(project, "run", env=env)
    assert log.read_text().splitlines() == calls
    assert artifact(project, "gold", "jpa-entity", "grades")["judge"]["scores"]["rule_adherence_score"] == 5


def test_auto_picks_the_most_preferred_available_backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`auto` asks the backends that declare a preference, most preferred first; the first available runs.
    No daemon here (DOCKER_HOST names nothing), so docker (10) is passed over."""
    from evalkit import isolation, plugins
    from evalkit.sandbox.backends import LocalBackend

    class Preferred(LocalBackend):
        auto_reason = "the preferred backend answered"

        def __init__(self, preference: int, up: bool) -> None:
            self.auto_preference, self.up, self.asked = preference, up, 0

        def available(self) -> bool:
            self.asked += 1
            return self.up

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    down, up, never = Preferred(30, False), Preferred(20, True), Preferred(5, True)
    try:
        reg = plugins.registry("sandbox_backends")
        for name, part in (("down", down), ("up", up), ("never", never)):
            reg.register(name, part)
        decision = isolation.decide("auto")
        assert (decision.chosen, decision.isolation) == ("up", "local")
        assert decision.reason == "sandbox.backend: auto; the preferred backend answered"
        assert (down.asked, up.asked, never.asked) == (1, 1, 0)
        up.up = False  # now only the fallback: local (0) after docker (10) and `never` (5)
        assert isolation.decide("auto").chosen == "never"
        never.up = False
        assert isolation.decide("auto").chosen == "local"
        assert isolation.decide("up").chosen == "up"  # named explicitly: whatever auto would say
    finally:
        plugins.forget()
