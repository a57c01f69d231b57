"""A second outside suite kind, written from the docs alone (docs/extending/*.md), runs with 0 project edits.

tests/data/outside_kind_docs is an ordinary distribution (`rx-evalkit`): the `regex` kind (the answer's text is a
regular expression, scored on the reference's positive and negative strings), its two metrics, its case-page
partial and the `rx_rejects` assertion type, which reads the case's reference through its AssertionContext.
The test installs it as plugins.md says (pip, into a venv made from this interpreter with the system
site packages; evalkit itself is this checkout, first on PYTHONPATH), writes a project with a `regex` suite of
three cases and three systems, runs `evalkit check` and `evalkit run`, and reads report.json, the per-case
artifacts and a case page. The evalkit checkout's `git status` is the same before and after.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import REPO

FIXTURE = REPO / "tests" / "data" / "outside_kind_docs"

CASES = {
    "digits.yaml": """\
        id: digits
        inputs:
          description: one or more decimal digits
          examples: ["1", "42"]
        reference:
          pattern: '\\d+'
          positives: ["7", "123", "42"]
          negatives: ["", "a1", "4 2"]
        assertions:
          - {type: rx_rejects, description: rejects the reference's negatives}
        """,
    "colour.yaml": """\
        id: colour
        inputs:
          description: a lower-case hex colour such as #00ff00
          examples: ["#00ff00", "#abcdef"]
        reference:
          pattern: '#[0-9a-f]{6}'
          positives: ["#00ff00", "#123456"]
          negatives: ["#12345", "00ff00"]
        assertions:
          - {type: rx_rejects, value: ["#ABCDEF"], description: rejects the negatives and upper case}
        """,
    "answer.yaml": """\
        id: answer
        inputs:
          description: the word yes or the word no
          examples: ["yes", "no"]
        reference:
          pattern: 'yes|no'
          positives: ["yes", "no"]
          negatives: ["maybe", "yesno"]
        """,
}

BOT = """\
    # a command system: the alternation of the case's examples, escaped; "(" (no expression) when told "broken"
    import json, os, re, sys
    from pathlib import Path

    case = json.loads(Path(os.environ["EVALKIT_CASE"]).read_text())
    broken = sys.argv[1:] == ["broken"]
    print(json.dumps({"text": "(" if broken else "|".join(re.escape(e) for e in case["inputs"]["examples"])}))
    """

CONFIG = """\
    release: r1
    systems:
      - name: literal
        adapter: command
        command: ["python3", "literal_bot.py"]
        suites: [rx]
      - name: broken
        adapter: command
        command: ["python3", "literal_bot.py", "broken"]
        suites: [rx]
      - name: gold
        adapter: gold
    """


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv from this interpreter (system site packages) with the fixture distribution pip-installed into it.

    The package is copied out first, so its build leaves nothing (egg-info, build/) in the evalkit checkout."""
    root = tmp_path_factory.mktemp("rxvenv")
    shutil.copytree(FIXTURE, root / "pkg")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", str(root / "pkg")],
                   check=True, capture_output=True, text=True)
    return python


def evalkit(python: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "EVALKIT_CONFIG": str(project / "evalkit.yaml")}
    env.pop("EVALKIT_RELEASE", None)
    return subprocess.run([str(python), "-m", "evalkit", *args], cwd=project, env=env, capture_output=True, text=True,
                          timeout=300)


def make_project(root: Path) -> Path:
    suite = root / "cases" / "rx"
    suite.mkdir(parents=True)
    (suite / "suite.yaml").write_text("kind: regex\ndescription: Write the regular expression described.\n")
    for name, text in CASES.items():
        (suite / name).write_text(textwrap.dedent(text))
    (root / "literal_bot.py").write_text(textwrap.dedent(BOT))
    (root / "evalkit.yaml").write_text(textwrap.dedent(CONFIG))
    return root


def test_a_kind_written_from_the_docs_runs_end_to_end_with_no_project_edit(venv_python: Path, tmp_path: Path) -> None:
    before = git_status()
    project = make_project(tmp_path / "proj")

    check = evalkit(venv_python, project, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok (1 suites, 3 cases, 3 systems)" in check.stdout

    ran = evalkit(venv_python, project, "run")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads((project / "site" / "r1" / "report.json").read_text())
    (suite,) = report["suites"]
    assert (suite["name"], suite["kind"]) == ("rx", "regex")
    value = {(s, m): suite["systems"][s][m]["value"] for s in ("literal", "broken", "gold")
             for m in ("rx_accuracy", "rx_exact", "assertion_score")}
    # literal: digits 4/6 (misses 7 and 123), colour 3/4 (misses #123456), answer 4/4
    assert value["literal", "rx_accuracy"] == pytest.approx((4 / 6 + 3 / 4 + 1) / 3)
    assert value["literal", "rx_exact"] == pytest.approx(1 / 3)
    assert value["gold", "rx_accuracy"] == value["gold", "rx_exact"] == 1.0          # Kind.gold overridden
    assert value["broken", "rx_accuracy"] == value["broken", "rx_exact"] == 0.0      # "(" scores as a miss
    assert value["literal", "assertion_score"] == value["gold", "assertion_score"] == 1.0
    assert value["broken", "assertion_score"] == 0.0
    assert report["metric_info"]["rx_accuracy"]["display"] == "Regex accuracy"
    assert report["metric_info"]["rx_exact"]["aggregate"] == "rate"

    # the assertion saw the case's reference (3 negatives = 2 of the reference's + 1 of `value`)
    grades = json.loads((project / ".evalkit" / "artifacts" / "literal" / "rx" / "colour" / "grades.json").read_text())
    assert [(a["type"], a["passed"], a["detail"]) for a in grades["assertions"]] == [
        ("rx_rejects", True, "rejects all 3 negatives")]
    broken = json.loads((project / ".evalkit" / "artifacts" / "broken" / "rx" / "digits" / "grades.json").read_text())
    assert broken["assertions"][0]["passed"] is False
    assert broken["assertions"][0]["detail"].startswith("does not compile")

    page = (project / "site" / "r1" / "cases" / "rx" / "digits.html").read_text()
    assert 'id="kind-regex"' in page
    assert '<p class="rx-answer" data-system="literal"><code>1|42</code>: wrong on [&#39;7&#39;, &#39;123&#39;]</p>' in page
    assert '<p class="rx-answer" data-system="gold"><code>\\d+</code>: all right</p>' in page

    # nothing edited: a rerun redoes no stage; editing the plug-in's assertion regrades (its code is in the keys)
    again = evalkit(venv_python, project, "run")
    assert again.returncode == 0 and "grade:" not in again.stdout and "score:" not in again.stdout, again.stdout
    installed = subprocess.run([str(venv_python), "-c", "import rx_evalkit.checks as m; print(m.__file__)"],
                               capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    checks = Path(installed.stdout.strip())
    checks.write_text(checks.read_text().replace("rejects all", "rejects every one of"))
    edited = evalkit(venv_python, project, "run")
    assert edited.returncode == 0 and "grade:literal:rx/colour" in edited.stdout, edited.stdout
    grades = json.loads((project / ".evalkit" / "artifacts" / "literal" / "rx" / "colour" / "grades.json").read_text())
    assert grades["assertions"][0]["detail"] == "rejects every one of 3 negatives"

    schemas = evalkit(venv_python, project, "schema", "--out", str(tmp_path / "schemas"))
    assert schemas.returncode == 0, schemas.stdout + schemas.stderr
    schema = json.loads((tmp_path / "schemas" / "case-regex.schema.json").read_text())
    assert "positives" in json.dumps(schema) and "examples" in json.dumps(schema)

    assert git_status() == before


def test_a_misspelled_key_in_a_case_of_the_outside_kind_is_file_line_exit_2(venv_python: Path, tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj")
    case = project / "cases" / "rx" / "answer.yaml"
    case.write_text(case.read_text().replace("  positives:", "  positivs:"))
    check = evalkit(venv_python, project, "check")
    assert check.returncode == 2, check.stdout + check.stderr
    out = check.stdout + check.stderr
    assert "cases/rx/answer.yaml:7: reference.positivs: unknown key" in out
    assert "reference.positives: required key is missing" in out
