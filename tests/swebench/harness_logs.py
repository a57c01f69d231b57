"""Harness logs (test_output.txt) in each runner's own output format, as SWE-bench's eval script leaves them.

A log is: the eval script's echo lines, ``>>>>> Start Test Output``, the runner's output,
``>>>>> End Test Output`` and ``>>>>> Test Exit Code: N``. ``outcomes`` maps a test id to
``passed``, ``failed``, ``error``, ``skipped`` (an id left out of the mapping is absent from the log).
"""

from __future__ import annotations

START, END, EXIT = ">>>>> Start Test Output", ">>>>> End Test Output", ">>>>> Test Exit Code"

ESC = "\x1b"
PYTEST_WORD = {"passed": "PASSED", "failed": "FAILED", "error": "ERROR", "skipped": "SKIPPED"}
DJANGO_WORD = {"passed": "ok", "failed": "FAIL", "error": "ERROR", "skipped": "skipped 'requires a database'"}
SYMPY_WORD = {"passed": "ok", "failed": "F", "error": "E", "skipped": "s"}


def _counts(outcomes: dict[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for st in outcomes.values():
        out[st] = out.get(st, 0) + 1
    return out


def pytest_rA(outcomes: dict[str, str], *, color: bool = False, verbose_lines: bool = False) -> str:
    """pytest -rA: progress, failure sections, then the short test summary info."""
    files = sorted({t.split("::")[0] for t in outcomes})
    lines = ["============================= test session starts ==============================",
             "platform linux -- Python 3.9.19, pytest-7.4.0, pluggy-1.3.0",
             "rootdir: /testbed", f"collected {len(outcomes)} items", ""]
    if verbose_lines:  # pytest -v style: "<id> PASSED [ 50%]" without the percentage on old versions
        for t, st in outcomes.items():
            lines.append(f"{t} {PYTEST_WORD[st]}")
    else:
        for f in files:
            marks = "".join({"passed": ".", "failed": "F", "error": "E", "skipped": "s"}[st]
                            for t, st in outcomes.items() if t.split("::")[0] == f)
            lines.append(f"{f} {marks}{' ' * 8}[100%]")
    bad = [t for t, st in outcomes.items() if st in ("failed", "error")]
    if bad:
        lines += ["", "=================================== FAILURES ==================================="]
        for t in bad:
            name = t.split("::")[-1]
            lines += [f"_{'_' * 20} {name} {'_' * 20}", "", "    def test():", ">       assert result == expected",
                      "E       AssertionError: assert 1 == 2", "", f"{t.split('::')[0]}:42: AssertionError"]
    lines += ["==================================== PASSES ====================================",
              "=========================== short test summary info ============================"]
    for t, st in outcomes.items():
        word = PYTEST_WORD[st]
        if color:
            word = f"{ESC}[32m{word}{ESC}[0m" if st == "passed" else f"{ESC}[31m{word}{ESC}[0m"
        if st == "skipped":
            lines.append(f"SKIPPED [1] {t.split('::')[0]}:17: needs a display")
            continue
        if st == "failed":
            lines.append(f"{word} {t} - AssertionError: assert 1 == 2")
        elif st == "error":
            lines.append(f"{word} {t} - RuntimeError: fixture setup failed")
        else:
            lines.append(f"{word} {t}")
    c = _counts(outcomes)
    lines.append("=" * 10 + f" {c.get('failed', 0)} failed, {c.get('passed', 0)} passed, "
                 f"{c.get('skipped', 0)} skipped, {c.get('error', 0)} errors in 3.21s " + "=" * 10)
    return "\n".join(lines)


def seaborn(outcomes: dict[str, str]) -> str:
    """seaborn's runs: pytest -v lines (``<id> PASSED``) plus the -rA summary's failures."""
    lines = ["============================= test session starts ==============================", "collected items", ""]
    pct = 0
    for t, st in outcomes.items():
        pct += 100 // max(len(outcomes), 1)
        lines.append(f"{t} {PYTEST_WORD[st]} {'[':>2}{pct:3d}%]")
    lines += ["=========================== short test summary info ============================"]
    for t, st in outcomes.items():
        if st == "passed":
            lines.append(f"PASSED {t}")
        elif st == "failed":
            lines.append(f"FAILED {t} - AssertionError")
        elif st == "error":
            lines.append(f"FAILED {t} - ValueError: boom")  # seaborn's parser knows only FAILED
    return "\n".join(lines)


def django(outcomes: dict[str, str]) -> str:
    """Django's runtests.py --verbosity 2: ``test_x (module.Class) ... ok`` and the failure sections."""
    lines = ["Testing against Django installed in '/testbed/django'",
             "Importing application forms_tests", "Skipping setup of unused database(s): default, other.",
             "System check identified no issues (0 silenced)."]
    for t, st in outcomes.items():
        lines.append(f"{t} ... {DJANGO_WORD[st]}")
    bad = [(t, st) for t, st in outcomes.items() if st in ("failed", "error")]
    for t, st in bad:
        lines += ["", "=" * 70, f"{'FAIL' if st == 'failed' else 'ERROR'}: {t}", "-" * 70,
                  "Traceback (most recent call last):", '  File "/testbed/tests/forms_tests/tests.py", line 12, in test',
                  "AssertionError: ValidationError not raised"]
    lines += ["", "-" * 70, f"Ran {len(outcomes)} tests in 0.112s", ""]
    c = _counts(outcomes)
    skipped = c.get("skipped", 0)
    lines.append(f"FAILED (failures={c.get('failed', 0)}, errors={c.get('error', 0)})" if bad else
                 f"OK (skipped={skipped})" if skipped else "OK")
    return "\n".join(lines)


def sympy(outcomes: dict[str, str]) -> str:
    """sympy's bin/test: ``test_x ok`` / ``F`` / ``E`` per line, then the failure sections."""
    lines = ["============================= test process starts ==============================",
             "executable:         /opt/miniconda3/envs/testbed/bin/python  (3.9.19-final-0) [CPython]",
             "architecture:       64-bit", "cache:              no", "ground types:       python",
             "numpy:              None", "random seed:        71324513", "hash randomization: on (PYTHONHASHSEED=1)",
             "", f"sympy/printing/tests/test_latex.py[{len(outcomes)}] "]
    for t, st in outcomes.items():
        lines.append(f"{t} {SYMPY_WORD[st]}")
    lines.append("                                                                          [FAIL]")
    for t, st in outcomes.items():
        if st in ("failed", "error"):
            lines += ["", "_" * 80, f"{'_' * 10} sympy/printing/tests/test_latex.py:{t} {'_' * 10}",
                      "Traceback (most recent call last):", "AssertionError"]
    c = _counts(outcomes)
    lines.append(f"====== tests finished: {c.get('passed', 0)} passed, {c.get('failed', 0)} failed, "
                 f"{c.get('error', 0)} exceptions, in 1.53 seconds =======")
    return "\n".join(lines)


#: The output format each Lite/Verified repository's harness parser reads.
FORMATS = {
    "django/django": django,
    "sympy/sympy": sympy,
    "mwaskom/seaborn": seaborn,
    "sphinx-doc/sphinx": lambda o: pytest_rA(o, color=True),              # tox's colored output (pytest_v2)
    "astropy/astropy": lambda o: pytest_rA(o, verbose_lines=True),        # pytest_v2's "<id> STATUS" lines too
    "scikit-learn/scikit-learn": pytest_rA,
}


def runner_output(repo: str, outcomes: dict[str, str]) -> str:
    """The runner's output for ``repo`` (pytest -rA unless the repository has its own format)."""
    return FORMATS.get(repo, pytest_rA)(outcomes)


def harness_log(repo: str, outcomes: dict[str, str], *, exit_code: int | None, cut: bool = False,
                apply_failed: bool = False) -> str:
    """A whole test_output.txt; ``cut``: the run stopped midway (no end marker, half the output)."""
    head = ["+ source /opt/miniconda3/bin/activate", "+ conda activate testbed", "+ cd /testbed",
            "+ git checkout 0123abc tests/", "Updated 0 paths from 0123abc"]
    if apply_failed:
        return "\n".join(head + [">>>>> Patch Apply Failed", "error: patch failed: src/x.py:3"]) + "\n"
    body = runner_output(repo, outcomes)
    if cut:
        lines = body.split("\n")
        return "\n".join(head + ["+ : '" + START + "'", START] + lines[: len(lines) // 2]) + "\n"
    tail = [f"{EXIT}: {exit_code}"] if exit_code is not None else []
    return "\n".join(head + ["+ : '" + START + "'", START, body, "+ : '" + END + "'", END, *tail]) + "\n"
