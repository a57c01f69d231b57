"""Per-test outcomes from test output: pytest ``-rA`` summary lines and JUnit XML (pytest, Surefire)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from evalkit.sandbox.spec import TestStatus

#: pytest short-summary words and the status they count as. XFAIL is an expected failure and
#: XPASS a non-strict unexpected pass: pytest's exit status treats both as success (a strict
#: XPASS is printed as FAILED), so both count as passed, as in the SWE-bench harness.
PYTEST_WORDS: dict[str, TestStatus] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "passed",
    "XPASS": "passed",
}
_SUMMARY_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S.*)$")
_SKIP_LOCATION = re.compile(r"^\[\d+\] ")

#: When one id is reported twice (a test that passed with a teardown error), the worse wins.
_SEVERITY: dict[str, int] = {"skipped": 0, "passed": 1, "flaky": 2, "failed": 3, "error": 4}


def worse(a: TestStatus | None, b: TestStatus) -> TestStatus:
    """The worse of two statuses for the same test."""
    if a is None:
        return b
    return a if _SEVERITY[a] >= _SEVERITY[b] else b


def parse_pytest_summary(text: str) -> dict[str, TestStatus]:
    """Statuses from pytest ``-rA`` short-summary lines (``PASSED tests/x.py::t``, ``FAILED ... - msg``).

    ``SKIPPED [1] tests/x.py:12: reason`` lines name a location, not a test id, and are left out.
    An ``ERROR tests/x.py`` line without ``::`` is a collection error of that file and is kept
    under the file path (see :func:`apply_collection_errors`).
    """
    out: dict[str, TestStatus] = {}
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        m = _SUMMARY_LINE.match(line)
        if not m:
            continue
        word, rest = m.groups()
        if word == "SKIPPED" and _SKIP_LOCATION.match(rest):
            continue
        test_id = rest.split(" - ", 1)[0].strip()
        if not test_id or " " in test_id and "[" not in test_id:
            continue
        out[test_id] = worse(out.get(test_id), PYTEST_WORDS[word])
    return out


def apply_collection_errors(tests: dict[str, TestStatus], wanted: list[str]) -> dict[str, TestStatus]:
    """Mark wanted ids under a file that failed to collect (``ERROR tests/x.py``) as error."""
    errored = [k for k, v in tests.items() if v == "error" and "::" not in k]
    if not errored:
        return tests
    out = dict(tests)
    for test_id in wanted:
        path = test_id.split("::", 1)[0]
        key = pytest_id_to_junit_key(path)
        if test_id not in out and any(
            path == e or key == e or path.startswith(e.rstrip("/") + "/") for e in errored
        ):
            out[test_id] = "error"
    return out


COLLECTION_ERRORS = (re.compile(r"^E\s+((?:ModuleNotFoundError|ImportError): .*)$", re.MULTILINE),
                     re.compile(r"^(ImportError while importing test module .*)$", re.MULTILINE),
                     re.compile(r"(ERROR collecting \S+)"),
                     re.compile(r"(Interrupted: \d+ errors? during collection)"))
"""What a pytest log says when tests could not be imported or collected, the most telling first."""


def collection_failure(run: dict[str, Any]) -> str | None:
    """A test run (ExecutionResult as JSON) whose every listed test (FAIL_TO_PASS and PASS_TO_PASS) errored
    while its log says the tests could not be imported or collected: what the log says (the import error
    when it names one), else None."""
    wanted = {**(run.get("fail_to_pass") or {}), **(run.get("pass_to_pass") or {})}
    if not wanted or any(s != "error" for s in wanted.values()):
        return None
    log = str(run.get("log") or "")
    for pattern in COLLECTION_ERRORS:
        found = pattern.search(log)
        if found:
            return found.group(1).strip()[:200]
    return None


def _junit_status(case: ET.Element) -> TestStatus:
    tags = {child.tag for child in case}
    if "error" in tags:
        return "error"
    if "failure" in tags:
        return "failed"
    if "skipped" in tags:
        # pytest writes xfail as <skipped type="pytest.xfail">: an expected failure counts as passed.
        skipped = case.find("skipped")
        if skipped is not None and skipped.get("type") == "pytest.xfail":
            return "passed"
        return "skipped"
    return "passed"


def junit_aliases(classname: str, name: str) -> list[str]:
    """Ids a JUnit testcase may be named by: ``cls.name``, ``cls#name``, ``cls::name`` and a pytest node id."""
    aliases = [f"{classname}.{name}", f"{classname}#{name}", f"{classname}::{name}"] if classname else [name]
    if classname:
        parts = classname.split(".")
        # pytest: classname is the dotted module path plus classes; classes start with an upper-case letter.
        split = next((i for i, p in enumerate(parts) if p[:1].isupper()), len(parts))
        module = "/".join(parts[:split]) + ".py"
        aliases.append("::".join([module, *parts[split:], name]))
    return aliases


def pytest_id_to_junit_key(test_id: str) -> str:
    """The ``classname.name`` key pytest's JUnit XML gives a node id (``a/b.py::C::t[x]`` -> ``a.b.C.t[x]``)."""
    path, _, rest = test_id.partition("::")
    if path.endswith(".py"):
        path = path[:-3]
    head = path.replace("/", ".")
    return ".".join([head, *rest.split("::")]) if rest else head


def parse_junit(xml_bytes: bytes, wanted: Sequence[str] = ()) -> dict[str, TestStatus]:
    """Statuses from a JUnit XML document (pytest ``--junitxml`` or Maven Surefire).

    Each testcase is keyed by the first of ``wanted`` it matches under any alias (so the caller's
    ids come back as given), else by the pytest node id for pytest reports and ``classname.name``
    for others. Raises ValueError for a document that is not JUnit XML.
    """
    try:
        root = ET.fromstring(xml_bytes)
    except ET.ParseError as exc:
        raise ValueError(f"not well-formed XML: {exc}") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise ValueError(f"not JUnit XML: root element is <{root.tag}>")
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    is_pytest = any(s.get("name") == "pytest" for s in suites)
    by_key: dict[str, str] = {}
    for test_id in wanted:
        by_key.setdefault(test_id, test_id)
        by_key.setdefault(pytest_id_to_junit_key(test_id), test_id)
    out: dict[str, TestStatus] = {}
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        if not name:
            continue
        aliases = junit_aliases(classname, name)
        known = next((by_key[a] for a in aliases if a in by_key), None)
        found = known if known is not None else aliases[-1] if (is_pytest and classname) else aliases[0]
        out[found] = worse(out.get(found), _junit_status(case))
    return out
