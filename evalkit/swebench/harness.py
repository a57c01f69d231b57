"""The official SWE-bench harness's log parsers and grading, called as they are (never re-implemented).

Which parser a row uses: a 5.x row names it in ``log_parser`` (a key of the harness's
``PARSER_REGISTRY``); a 4.x row has only ``repo`` (``owner/name``), looked up in the harness's own
repository table (``MAP_REPO_TO_PARSER_PY``). A case is **SWE-bench's** when its inputs name a
``log_parser``, or when its ``repo`` is an ``owner/name`` that table knows; every other patch case is
graded by evalkit's own pytest/JUnit parsing only.

The harness reads a log shaped by its eval script: test output between ``>>>>> Start Test Output``
and ``>>>>> End Test Output``, then ``>>>>> Test Exit Code: N`` (5.x's cross-check: a non-zero exit
with no failing test in the log is not trusted). :func:`harness_log` gives evalkit's test output that
shape; the exit status is the one evalkit's runner recorded under its nonce.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from swebench.types import TestSpec

    from evalkit.casemodels import PatchInputs

#: ``owner/name`` of a GitHub repository (a SWE-bench row's ``repo``), as opposed to a path or URL.
OWNER_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
#: The four lists of SWE-bench's ``tests_status``, in its order.
TEST_LISTS = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")
INSTALL_HINT = "the official SWE-bench harness is not installed: pip install 'evalkit[swebench]'"


class HarnessUnavailable(RuntimeError):
    """The `swebench` package cannot be imported."""


def harness_registry() -> tuple[dict[str, Any], dict[str, Any]]:
    """(PARSER_REGISTRY, MAP_REPO_TO_PARSER_PY) of the installed harness."""
    try:
        from swebench.harness.log_parsers import PARSER_REGISTRY  # deferred: the official SWE-bench harness (~1.7 s, optional extra), only for SWE-bench cases
        from swebench.harness.log_parsers.python import MAP_REPO_TO_PARSER_PY  # deferred: the official SWE-bench harness (~1.7 s, optional extra), only for SWE-bench cases
    except ImportError as exc:
        raise HarnessUnavailable(f"{INSTALL_HINT} ({exc})") from None
    return PARSER_REGISTRY, MAP_REPO_TO_PARSER_PY


def available() -> bool:
    """Whether the official harness can be used here."""
    try:
        harness_registry()
    except HarnessUnavailable:
        return False
    return True


def parser_names() -> list[str]:
    """Every log parser the installed harness knows (5.x ``log_parser`` values)."""
    return sorted(harness_registry()[0])


def parser_for(repo: str | None, log_parser: str | None) -> str | None:
    """The harness parser (a ``PARSER_REGISTRY`` name) for a row, or None when it is not SWE-bench's.

    ``log_parser`` wins (5.x rows); otherwise ``repo`` as ``owner/name`` through the harness's 4.x
    table, named by the registry key holding that very function (``parse_log_<name>`` preferred).
    Raises ValueError for a ``log_parser`` the harness does not know. A row with neither a ``log_parser`` nor
    an ``owner/name`` repo is not SWE-bench's whatever the harness holds: answered without importing it (~1.5 s
    of CPU, once per process, that every other patch case's run paid).
    """
    if not log_parser and (not repo or not OWNER_NAME.match(repo)):
        return None
    registry, by_repo = harness_registry()
    if log_parser:
        if log_parser not in registry:
            raise ValueError(f"log_parser {log_parser!r} is not one of the harness's {len(registry)} parsers")
        return log_parser
    if not repo or not OWNER_NAME.match(repo) or repo not in by_repo:
        return None
    fn = by_repo[repo]
    names = [k for k, v in registry.items() if v is fn]
    preferred = f"parse_log_{repo.split('/')[1].split('-')[0].lower()}"
    return preferred if preferred in names else (names[0] if names else None)


def is_swebench_case(inputs: PatchInputs) -> bool:
    """A patch case is SWE-bench's when it names a ``log_parser`` or its ``repo`` is an ``owner/name`` the
    harness maps to a parser (False when the harness is not installed)."""
    try:
        return parser_for(inputs.repo, inputs.log_parser) is not None
    except (HarnessUnavailable, ValueError):
        return bool(inputs.log_parser)


def harness_log(test_output: str, exit_code: int | None) -> str:
    """Test output in the shape the harness's eval script leaves: between its start and end markers,
    then the recorded exit status (left out when unknown). Output of a SWE-bench eval script (which
    prints the markers itself) is taken as it is, as the harness would."""
    from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT, TEST_EXIT_CODE  # deferred: the official SWE-bench harness (~1.7 s, optional extra), only for SWE-bench cases

    if START_TEST_OUTPUT in test_output and END_TEST_OUTPUT in test_output:
        return test_output  # the row's own eval script ran: its output is already the harness's shape
    tail = f"{TEST_EXIT_CODE}: {exit_code}\n" if exit_code is not None else ""
    return f"{START_TEST_OUTPUT}\n{test_output}\n{END_TEST_OUTPUT}\n{tail}"


EVALKIT_RUNNER = "===== main: runner ====="
EVALKIT_OUTPUT = "===== main: test output ====="


def harness_shaped(log_text: str) -> str | None:
    """A saved log in the shape the harness grades, or None when it is in no format evalkit knows.

    The harness's own ``test_output.txt`` (its apply and test-output markers) is taken as it is. evalkit's
    sandbox log (``===== main: runner =====`` then ``===== main: test output =====``, as the site's
    ``<case>.<system>.log.txt`` and ``execution.json`` hold it) is rewritten: the runner's "patch applied"
    line becomes the harness's apply marker, the test output goes between its start and end markers with
    the exit status the runner recorded. Anything else would be graded "patch not applied" by the
    harness, silently: the caller reports it instead."""
    from swebench.harness.constants import APPLY_PATCH_FAIL, APPLY_PATCH_PASS, START_TEST_OUTPUT  # deferred: the official SWE-bench harness (~1.7 s, optional extra), only for SWE-bench cases

    if APPLY_PATCH_PASS in log_text or APPLY_PATCH_FAIL in log_text or START_TEST_OUTPUT in log_text:
        return log_text
    if EVALKIT_RUNNER not in log_text:
        return None
    runner = log_text.split(EVALKIT_RUNNER, 1)[1].split(EVALKIT_OUTPUT, 1)[0]
    output = log_text.split(EVALKIT_OUTPUT, 1)[1] if EVALKIT_OUTPUT in log_text else ""
    output = re.split(r"(?m)^===== \w+: runner =====$", output, maxsplit=1)[0]  # the next phase's log
    if not re.search(r"(?m)^evalkit\[main\]: patch applied with ", runner):
        return f"{APPLY_PATCH_FAIL}\n{runner}"
    exited = re.search(r"(?m)^evalkit\[main\]: test command exited with status (\d+)$", runner)
    return f"{APPLY_PATCH_PASS}\n" + harness_log(output, int(exited.group(1)) if exited else None)


def test_spec(instance_id: str, repo: str, parser: str, fail_to_pass: list[str], pass_to_pass: list[str], *,
              version: str = "", eval_type: str | None = None, image: str = "") -> TestSpec:
    """The harness's own TestSpec for grading (no eval script: grading reads only the log)."""
    from swebench.harness.constants import EvalType  # deferred: the official SWE-bench harness (~1.7 s, optional extra), only for SWE-bench cases
    from swebench.types import TestSpec  # deferred: the official SWE-bench harness (~1.7 s, optional extra), only for SWE-bench cases

    return TestSpec(instance_id=instance_id, image=image, eval_script_list=[], repo=repo, version=version,
                    FAIL_TO_PASS=list(fail_to_pass), PASS_TO_PASS=list(pass_to_pass), log_parser=parser,
                    eval_type=EvalType(eval_type or EvalType.PASS_AND_FAIL.value).value)


def eval_report(spec: TestSpec, log_path: Path, model_patch: str | None, model: str = "evalkit") -> dict[str, Any]:
    """The harness's report.json entry for one instance (``get_eval_report``, tests_status included)."""
    harness_registry()
    from swebench.harness.grading import get_eval_report  # deferred: the official SWE-bench harness (~1.7 s, optional extra), only for SWE-bench cases

    prediction = {"instance_id": spec.instance_id, "model_name_or_path": model, "model_patch": model_patch}
    return get_eval_report(spec, prediction, str(log_path), include_tests_status=True)[spec.instance_id]


def grade_text(spec: TestSpec, log_text: str, model_patch: str | None = "", model: str = "evalkit") -> dict[str, Any]:
    """:func:`eval_report` of a log held in memory (written to a temporary file the harness reads)."""
    with tempfile.TemporaryDirectory(prefix="evalkit-harness-") as tmp:
        path = Path(tmp) / "test_output.txt"
        path.write_text(log_text, encoding="utf-8")
        return eval_report(spec, path, model_patch, model)


def case_parser(inputs: PatchInputs) -> str | None:
    """The harness parser of a patch case's inputs, or None when it is not SWE-bench's (or the harness
    is not installed, or its ``log_parser`` is unknown to it: evalkit's own grading alone then)."""
    try:
        return parser_for(inputs.repo, inputs.log_parser)
    except (HarnessUnavailable, ValueError):
        return None
