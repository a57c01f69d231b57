"""What every kind's case page part (``kinds/<kind>/page.py``, each kind's ``Kind.detail``) reads from the case JSON.

Every value here comes from site/<release>/cases/<suite>/<case>.json (the case's inputs,
reference and criteria, and each system's artifacts): the page never reads the work folder.
Re-checks (task matching, incidents, degenerate output, injection findings) call the same
graders the scorers do, so the page shows how a metric came about, not a second opinion.
The result is plain data; templates autoescape every string of it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evalkit.artifacts import Sample, SystemArtifacts
from evalkit.difflines import line_class
from evalkit.outcomes import GradesExtra, RubricOutcome, SandboxRun

M = TypeVar("M", bound=BaseModel)


_LAST_TYPED: tuple[Any, ...] = (None, None, None)  # (model, part, what typed_part gave): see typed_part


def typed_part(model: type[M], part: dict[str, Any]) -> M | None:
    """A part of the case JSON (inputs or reference) read back through its kind's model; None when it does not
    fit (a broken case keeps its raw mapping).

    Each system's part of a case page asks for the same part of the same case JSON: the last answer is given again
    for that same mapping (the object itself, held here, so never another one at its address). Callers read the
    model and do not change it."""
    global _LAST_TYPED
    if _LAST_TYPED[1] is part and _LAST_TYPED[0] is model:
        return _LAST_TYPED[2]  # type: ignore[no-any-return]
    try:
        typed: M | None = model.model_validate(part)
    except ValidationError:
        typed = None
    _LAST_TYPED = (model, part, typed)
    return typed


def first_sample(arts: SystemArtifacts) -> Sample:
    """The system's first sample (an empty one when it gave none)."""
    samples = arts.output.samples if arts.output is not None else []
    return samples[0] if samples else Sample()


def answered(arts: SystemArtifacts) -> bool:
    """The system gave an answer (its output's status is ok)."""
    return arts.output is not None and arts.output.status == "ok"


def first_run(arts: SystemArtifacts) -> SandboxRun | None:
    runs = arts.execution.runs if arts.execution is not None else []
    return runs[0] if runs else None


def graded(arts: SystemArtifacts) -> tuple[RubricOutcome | None, GradesExtra]:
    """The rubric outcome and the kind-specific grades of a system's grades.json."""
    grades = arts.grades
    return (grades.rubric, grades.extra) if grades is not None else (None, GradesExtra())


def diff_lines(text: str) -> list[tuple[str, str]]:
    return [(line_class(x), x) for x in text.splitlines()]

