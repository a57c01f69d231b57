"""Deterministic assertion graders: no API, same answer every time.

Types: contains / not_contains (and case-insensitive icontains / not_icontains), regex /
not_regex, is_json (optionally against a JSON Schema), syntax_valid (tree-sitter), file_set (the
expected files and no others) and python (`module:function(output_text, sample, spec) -> bool |
(bool, detail)`). Each has a weight; the case's score is the weighted fraction that held.
An outside package adds a type with an ``evalkit.assertions`` entry point naming an
``evalkit.contracts.Assertion``: ``(AssertionContext) -> AssertionOutcome`` (the older ``Check`` form still works).
"""

from __future__ import annotations

import importlib
import json
import re
from typing import TYPE_CHECKING, cast

from evalkit.artifacts import AssertionResult, ExecutionArtifact, Sample
from evalkit.casemodels import AssertionSpec
from evalkit.graders.degenerate import is_blank
from evalkit.graders.syntax import check_syntax
from evalkit.contracts import AnyAssertion, AssertionContext, AssertionOutcome, LegacyAssertion, assert_with
from evalkit.plugins import Registry, registry

if TYPE_CHECKING:
    from evalkit.cases import Case
    from evalkit.config import Config

Check = LegacyAssertion
"""An assertion type in the older form: ``(spec, text, sample, language) -> (passed, detail)``; ``text`` is what the
spec looks at (``subject_text``). The context form is evalkit.contracts.Assertion. Either is registered under its
``type`` name in the ``evalkit.assertions`` entry-point group (evalkit's own in pyproject.toml); raising
``re.error``, ``ImportError``, ``AttributeError``, ``ValueError`` or ``TypeError`` records the assertion as failed
with the error as its detail."""


def checks() -> Registry[AnyAssertion]:
    """The assertion types by name (``evalkit.plugins.registry("assertions")``)."""
    return cast("Registry[AnyAssertion]", registry("assertions"))  # the group's contract


def _snippet(text: str, start: int, end: int) -> str:
    return text[max(0, start - 20): end + 20].replace("\n", "\\n")


def contains(ctx: AssertionContext) -> AssertionOutcome:
    spec, text = ctx.spec, ctx.text
    i = text.find(str(spec.value))
    return AssertionOutcome(i >= 0, "found" if i >= 0 else "not found")


def not_contains(ctx: AssertionContext) -> AssertionOutcome:
    spec, text = ctx.spec, ctx.text
    i = text.find(str(spec.value))
    return AssertionOutcome(i < 0, "absent" if i < 0 else f"found: …{_snippet(text, i, i + len(str(spec.value)))}…")


def icontains(ctx: AssertionContext) -> AssertionOutcome:
    spec, text = ctx.spec, ctx.text
    i = text.lower().find(str(spec.value).lower())
    return AssertionOutcome(i >= 0, "found" if i >= 0 else "not found")


def not_icontains(ctx: AssertionContext) -> AssertionOutcome:
    spec, text = ctx.spec, ctx.text
    i = text.lower().find(str(spec.value).lower())
    return AssertionOutcome(i < 0, "absent" if i < 0 else f"found: …{_snippet(text, i, i + len(str(spec.value)))}…")


def regex(ctx: AssertionContext) -> AssertionOutcome:
    spec, text = ctx.spec, ctx.text
    m = re.search(str(spec.value), text, re.MULTILINE)
    return AssertionOutcome(m is not None, f"matched {m.group(0)[:80]!r}" if m else "no match")


def not_regex(ctx: AssertionContext) -> AssertionOutcome:
    spec, text = ctx.spec, ctx.text
    m = re.search(str(spec.value), text, re.MULTILINE)
    return AssertionOutcome(m is None, "no match" if m is None else f"matched {m.group(0)[:80]!r}")


def is_json(ctx: AssertionContext) -> AssertionOutcome:
    spec, text = ctx.spec, ctx.text
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return AssertionOutcome(False, f"not JSON: {exc.msg} at line {exc.lineno}")
    if spec.schema_:
        from jsonschema import Draft202012Validator  # deferred: jsonschema, only when a schema is checked

        errors = sorted(Draft202012Validator(spec.schema_).iter_errors(value), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            return AssertionOutcome(False, f"schema: {'/'.join(map(str, e.path)) or '(root)'}: {e.message[:200]}")
    return AssertionOutcome(True, "valid JSON")


def syntax_valid(ctx: AssertionContext) -> AssertionOutcome:
    spec, text = ctx.spec, ctx.text
    result = check_syntax(text, str(spec.value or ctx.language))
    if result.valid is None:
        return AssertionOutcome(False, f"no parser for {result.language}")
    return AssertionOutcome(bool(result.valid), "parses" if result.valid else "; ".join(result.issues) or "empty")


def file_set(ctx: AssertionContext) -> AssertionOutcome:
    spec = ctx.spec
    expected = {str(v) for v in (spec.value or [])}
    got = set(ctx.sample.files)
    missing, extra = sorted(expected - got), sorted(got - expected)
    if not missing and not extra:
        return AssertionOutcome(True, "exactly the expected files")
    return AssertionOutcome(False, "; ".join(filter(None, [f"missing {missing}" if missing else "", f"unexpected {extra}" if extra else ""])))


def python_check(ctx: AssertionContext) -> AssertionOutcome:
    spec, text = ctx.spec, ctx.text
    module, _, func = str(spec.value).partition(":")
    try:
        fn = getattr(importlib.import_module(module), func)
    except (ImportError, AttributeError):
        raise
    except Exception as exc:  # the user's module fails while importing: the case's problem, said plainly
        raise ImportError(f"importing {module} raised {type(exc).__name__}: {exc}") from None
    try:
        result = fn(text, ctx.sample, spec)
    except Exception as exc:  # the user's function failed: recorded as this assertion's failure
        return AssertionOutcome(False, f"{spec.value} raised {type(exc).__name__}: {exc}")
    if isinstance(result, tuple):
        return AssertionOutcome(bool(result[0]), str(result[1]))
    return AssertionOutcome(bool(result), "")


def subject_text(spec: AssertionSpec, sample: Sample, main_file: str | None) -> str | None:
    """What an assertion looks at: a named output file, the main file, or the whole answer.

    None when that is missing or blank (the named file, the main file of an answer made of files,
    or the whole answer): every assertion about it fails, negative ones included. A file the answer
    deletes (``deleted_files``) is checked as empty text.
    """

    deleted = getattr(sample, "deleted_files", None) or []
    if (spec.file or main_file) in deleted and (spec.file or main_file) not in sample.files:
        return ""  # the answer deletes the file: checked as gone (absent text is absent, required text missing)
    if spec.file:
        text = sample.files.get(spec.file)
        return None if is_blank(text) else text
    if main_file and main_file in sample.files:
        return None if is_blank(sample.files[main_file]) else sample.files[main_file]
    if main_file and sample.files:  # files, but not the one the case is about
        return None
    parts = [sample.files[k] for k in sorted(sample.files)]
    parts += [p for p in (sample.patch, sample.text) if p]
    text = "\n".join(parts)
    return None if is_blank(text) else text


def describe(spec: AssertionSpec) -> str:
    if spec.description:
        return spec.description
    value = spec.value if not isinstance(spec.value, str) or len(spec.value) < 80 else spec.value[:77] + "..."
    return f"{spec.type} {value!r}" + (f" in {spec.file}" if spec.file else "")


def run_assertions(specs: list[AssertionSpec], sample: Sample, language: str, main_file: str | None, *,
                   case: Case | None = None, config: Config | None = None,
                   execution: ExecutionArtifact | None = None) -> tuple[list[AssertionResult], float | None]:
    """Every assertion's outcome and the weighted score (None without assertions). An assertion type sees the
    ``case`` (and its reference), the ``config`` and the ``execution`` given, in its ``AssertionContext``."""
    results = []
    for spec in specs:
        text = subject_text(spec, sample, main_file)
        if text is None and spec.type != "file_set":
            missing = spec.file or main_file or "the answer"
            results.append(AssertionResult(type=spec.type, description=describe(spec), passed=False,
                                           weight=spec.weight, detail=f"no output to check: {missing} is missing or empty"))
            continue
        try:
            ctx = AssertionContext(spec=spec, text=text or "", sample=sample, language=language, case=case,
                                   config=config, execution=execution)
            passed, detail = assert_with(checks().get(spec.type), ctx)
        except (re.error, ImportError, AttributeError, ValueError, TypeError) as exc:
            passed, detail = False, f"assertion could not run: {type(exc).__name__}: {exc}"
        results.append(AssertionResult(type=spec.type, description=describe(spec), passed=passed,
                                       weight=spec.weight, detail=detail[:500]))
    total = sum(r.weight for r in results)
    if not results or total == 0:
        return results, None
    return results, sum(r.weight for r in results if r.passed) / total
