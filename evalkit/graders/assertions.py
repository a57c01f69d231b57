"""Deterministic assertion graders: no API, same answer every time.

Types: contains / not_contains (and case-insensitive icontains / not_icontains), regex /
not_regex, is_json (optionally against a JSON Schema), syntax_valid (tree-sitter), file_set (the
expected files and no others) and python (`module:function(output_text, sample, spec) -> bool |
(bool, detail)`). Each has a weight; the case's score is the weighted fraction that held.
An outside package adds a type with an ``evalkit.assertions`` entry point naming a ``Check``.
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Callable

from evalkit.artifacts import AssertionResult, Sample
from evalkit.casemodels import AssertionSpec
from evalkit.graders.degenerate import is_blank
from evalkit.graders.syntax import check_syntax
from evalkit.plugins import Registry, registry

Check = Callable[[AssertionSpec, str, Sample, str], tuple[bool, str]]
"""An assertion type: ``(spec, text, sample, language) -> (passed, detail)``; ``text`` is what the spec looks
at (``subject_text``). Registered under its ``type`` name in the ``evalkit.assertions`` entry-point group
(evalkit's own in pyproject.toml); raising ``re.error``, ``ImportError``, ``AttributeError``, ``ValueError`` or
``TypeError`` records the assertion as failed with the error as its detail."""


def checks() -> Registry:
    """The assertion types by name (``evalkit.plugins.registry("assertions")``)."""
    return registry("assertions")


def _snippet(text: str, start: int, end: int) -> str:
    return text[max(0, start - 20): end + 20].replace("\n", "\\n")


def contains(spec: AssertionSpec, text: str, sample: Sample, language: str) -> tuple[bool, str]:
    i = text.find(str(spec.value))
    return i >= 0, "found" if i >= 0 else "not found"


def not_contains(spec: AssertionSpec, text: str, sample: Sample, language: str) -> tuple[bool, str]:
    i = text.find(str(spec.value))
    return i < 0, "absent" if i < 0 else f"found: …{_snippet(text, i, i + len(str(spec.value)))}…"


def icontains(spec: AssertionSpec, text: str, sample: Sample, language: str) -> tuple[bool, str]:
    i = text.lower().find(str(spec.value).lower())
    return i >= 0, "found" if i >= 0 else "not found"


def not_icontains(spec: AssertionSpec, text: str, sample: Sample, language: str) -> tuple[bool, str]:
    i = text.lower().find(str(spec.value).lower())
    return i < 0, "absent" if i < 0 else f"found: …{_snippet(text, i, i + len(str(spec.value)))}…"


def regex(spec: AssertionSpec, text: str, sample: Sample, language: str) -> tuple[bool, str]:
    m = re.search(str(spec.value), text, re.MULTILINE)
    return m is not None, f"matched {m.group(0)[:80]!r}" if m else "no match"


def not_regex(spec: AssertionSpec, text: str, sample: Sample, language: str) -> tuple[bool, str]:
    m = re.search(str(spec.value), text, re.MULTILINE)
    return m is None, "no match" if m is None else f"matched {m.group(0)[:80]!r}"


def is_json(spec: AssertionSpec, text: str, sample: Sample, language: str) -> tuple[bool, str]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return False, f"not JSON: {exc.msg} at line {exc.lineno}"
    if spec.schema_:
        from jsonschema import Draft202012Validator  # deferred: jsonschema, only when a schema is checked

        errors = sorted(Draft202012Validator(spec.schema_).iter_errors(value), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            return False, f"schema: {'/'.join(map(str, e.path)) or '(root)'}: {e.message[:200]}"
    return True, "valid JSON"


def syntax_valid(spec: AssertionSpec, text: str, sample: Sample, language: str) -> tuple[bool, str]:
    result = check_syntax(text, str(spec.value or language))
    if result.valid is None:
        return False, f"no parser for {result.language}"
    return bool(result.valid), "parses" if result.valid else "; ".join(result.issues) or "empty"


def file_set(spec: AssertionSpec, text: str, sample: Sample, language: str) -> tuple[bool, str]:
    expected = {str(v) for v in (spec.value or [])}
    got = set(sample.files)
    missing, extra = sorted(expected - got), sorted(got - expected)
    if not missing and not extra:
        return True, "exactly the expected files"
    return False, "; ".join(filter(None, [f"missing {missing}" if missing else "", f"unexpected {extra}" if extra else ""]))


def python_check(spec: AssertionSpec, text: str, sample: Sample, language: str) -> tuple[bool, str]:
    module, _, func = str(spec.value).partition(":")
    try:
        fn = getattr(importlib.import_module(module), func)
    except (ImportError, AttributeError):
        raise
    except Exception as exc:  # the user's module fails while importing: the case's problem, said plainly
        raise ImportError(f"importing {module} raised {type(exc).__name__}: {exc}") from None
    try:
        result = fn(text, sample, spec)
    except Exception as exc:  # the user's function failed: recorded as this assertion's failure
        return False, f"{spec.value} raised {type(exc).__name__}: {exc}"
    if isinstance(result, tuple):
        return bool(result[0]), str(result[1])
    return bool(result), ""


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


def run_assertions(specs: list[AssertionSpec], sample: Sample, language: str, main_file: str | None
                   ) -> tuple[list[AssertionResult], float | None]:
    """Every assertion's outcome and the weighted score (None without assertions)."""
    results = []
    for spec in specs:
        text = subject_text(spec, sample, main_file)
        if text is None and spec.type != "file_set":
            missing = spec.file or main_file or "the answer"
            results.append(AssertionResult(type=spec.type, description=describe(spec), passed=False,
                                           weight=spec.weight, detail=f"no output to check: {missing} is missing or empty"))
            continue
        try:
            passed, detail = checks().get(spec.type)(spec, text or "", sample, language)
        except (re.error, ImportError, AttributeError, ValueError, TypeError) as exc:
            passed, detail = False, f"assertion could not run: {type(exc).__name__}: {exc}"
        results.append(AssertionResult(type=spec.type, description=describe(spec), passed=passed,
                                       weight=spec.weight, detail=detail[:500]))
    total = sum(r.weight for r in results)
    if not results or total == 0:
        return results, None
    return results, sum(r.weight for r in results if r.passed) / total
