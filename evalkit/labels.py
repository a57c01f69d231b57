"""People's labels of system outputs: what a careful reviewer says the judge's fields should be.

A case folder may hold ``labels/<labeller>.yaml``, one file per person, mapping the system whose
output they read to their values of the judge rubric's fields::

    # cases/migration/ejb-stateless/labels/ana.yaml
    rule-rewriter:
      output_sha256: 3f9c0a1b        # optional: prefix of the sha256 of the file read (the case page shows it)
      semantic_equivalence_score: 4
      rule_adherence_score: 5
      is_compilable: true
      note: keeps the EJB import      # optional, shown on the case page
    naive-rewriter:
      semantic_equivalence_score: 2

A field left out is not labelled. A case file (a single-file case too) may carry the same under
``reference.labels: {<labeller>: {<system>: {...}}}``. With ``output_sha256`` a label is bound to
the output it was written for: once the system's output changes the label is *stale*, left out of
every figure and counted on the release page.

Labels are inputs of summarize (report.json) only: editing them re-summarizes and re-renders and
never re-runs a grade (no judge call). They are validated against the suite's judge rubric;
problems name file:line (``evalkit check`` exits 2; a run leaves the bad labels out and says so).
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable

from pydantic import BeforeValidator, Field, RootModel, ValidationError, create_model

import evalkit.graders.rubric_config as judge_rubric
from evalkit.errors import InputError, Problem, rel
from evalkit.graders.rubric_config import JudgeRubric, field_validator_of
from evalkit.kind_registry import kinds
from evalkit.models import Model
from evalkit.names import is_valid_name, name_problem
from evalkit.yamlio import describe_error, line_of, load_yaml, plain

if TYPE_CHECKING:
    from evalkit.cases import Case, Project
    from evalkit.config import Config

LABELS_DIR = "labels"
SHA_PATTERN = r"^[0-9a-f]{8,64}$"
RESERVED = ("output_sha256", "note")


class HumanLabel(Model):
    """One person's values of the judge's fields for one system's output on one case."""

    case: str
    """Case key (suite/case)."""
    system: str
    """The system whose output was read."""
    labeller: str
    """Who labelled it (the labels file's name, or the key under reference.labels)."""
    values: dict[str, int | float | bool]
    """Rubric field -> the person's value (fields left out are not labelled)."""
    output_sha256: str | None = None
    """Prefix of the sha256 of the output file the person read; None: not bound to an output."""
    note: str = ""
    """The person's remark."""
    source: str
    """file:line of the label."""


def label_files(case: Case) -> list[str]:
    """``<case folder>/labels/*.yaml`` of a folder case (sorted); none for a single-file case."""
    if os.path.basename(case.path) != "case.yaml":
        return []
    folder = os.path.join(case.dir, LABELS_DIR)
    try:
        with os.scandir(folder) as it:
            return sorted(e.path for e in it if e.is_file() and e.name.endswith((".yaml", ".yml"))
                          and not e.name.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return []


def output_sha256(text: str) -> str:
    """Hex sha256 of an output file's text (UTF-8): what ``output_sha256`` prefixes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _none_or(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A validator letting None through and checking any other value with ``check``."""
    return lambda v: None if v is None else check(v)


@cache
def _entry_model(rubric_json: str) -> type[Model]:
    """The model of one labelled output under a rubric: every field optional, on its scale."""

    rubric = JudgeRubric.model_validate_json(rubric_json)
    fields: dict[str, Any] = {}
    for f in rubric.fields:
        check = field_validator_of(f)
        fields[f.name] = (Annotated[int | float | bool | None, BeforeValidator(_none_or(check)),
                                    Field(description=f.description)], None)
    fields["output_sha256"] = (str | None, Field(default=None, pattern=SHA_PATTERN,
                                                 description="Prefix (8-64 hex digits) of the sha256 of the output file read."))
    fields["note"] = (str, Field(default="", description="The person's remark."))
    model = create_model("LabelledOutput", __base__=Model, **fields)
    model.__doc__ = f"One person's labels of one system's output under rubric {rubric.name!r}."
    return model


def file_model(rubric: JudgeRubric) -> type[RootModel]:
    """A labels file: system name -> that system's labelled output."""
    entry = _entry_model(rubric.model_dump_json())
    return RootModel[dict[str, entry]]  # type: ignore[valid-type]


def _entries(node: Any, loc: tuple[Any, ...], rubric: Any, shown: str, case_key: str, labeller: str
             ) -> tuple[list[HumanLabel], list[Problem]]:
    where = " > ".join(str(p) for p in loc)
    sub = node
    for part in loc:
        sub = sub[part]
    if not isinstance(sub, dict):
        return [], [Problem(shown, line_of(node, loc) or 1, f"{where + ': ' if where else ''}expected a mapping of "
                            "system name -> the judge's fields (e.g. rule-rewriter: {semantic_equivalence_score: 4})")]
    try:
        parsed = file_model(rubric).model_validate(plain(sub))
    except ValidationError as exc:
        problems = []
        for e in exc.errors():
            eloc = loc + tuple(e.get("loc", ()))
            message = describe_error({**e, "loc": tuple(e.get("loc", ()))})
            if e.get("type") == "extra_forbidden":
                message += (f" (rubric {rubric.name!r} has fields {', '.join(f.name for f in rubric.fields)}; "
                            f"besides them: {', '.join(RESERVED)})")
            problems.append(Problem(shown, line_of(node, eloc), message))
        return [], problems
    labels, problems = [], []
    for system, entry in parsed.root.items():
        line = line_of(node, loc + (system,))
        bad = name_problem(str(system), "system name")
        if bad:
            problems.append(Problem(shown, line, bad))
            continue
        values = {k: v for k, v in entry.model_dump().items() if k not in RESERVED and v is not None}
        if not values:
            problems.append(Problem(shown, line, f"{system}: no field labelled (expected some of "
                                                 f"{', '.join(f.name for f in rubric.fields)})"))
            continue
        labels.append(HumanLabel(case=case_key, system=system, labeller=labeller, values=values,
                                 output_sha256=entry.output_sha256, note=entry.note, source=f"{shown}:{line}"))
    return labels, problems


def load_case_labels(case: Case, rubric: JudgeRubric, shown_root: Path | None = None) -> tuple[list[HumanLabel], list[Problem]]:
    """Every label of ``case`` (its labels/ files and reference.labels) checked against ``rubric``, and the problems.

    A file with a problem contributes nothing; the others still count.
    """

    def show(path: str) -> str:
        return rel(path, shown_root) if shown_root is not None else path

    labels: list[HumanLabel] = []
    problems: list[Problem] = []
    seen: dict[tuple[str, str], str] = {}

    def add(found: list[HumanLabel]) -> None:
        for lab in found:
            key = (lab.labeller, lab.system)
            if key in seen:
                file, _, line = lab.source.rpartition(":")
                problems.append(Problem(file, int(line) if line.isdigit() else None,
                                        f"{lab.labeller} labels {lab.system}'s output twice (also at {seen[key]}); "
                                        "expected one label per labeller and system"))
                continue
            seen[key] = lab.source
            labels.append(lab)

    inline = getattr(case.reference, "labels", None) if case.ok else None
    if inline:
        shown = show(case.path)
        try:
            node = load_yaml(Path(case.path), shown)
        except InputError as exc:
            return [], exc.problems
        ref_loc = ("reference", "labels")
        if not isinstance(inline, dict):
            problems.append(Problem(shown, line_of(node, ref_loc), "reference.labels: expected a mapping of labeller -> "
                                                                   "system -> the judge's fields"))
        else:
            for labeller in inline:
                bad = name_problem(str(labeller), "labeller name")
                if bad:
                    problems.append(Problem(shown, line_of(node, ref_loc + (labeller,)), bad))
                    continue
                found, bad_entries = _entries(node, ref_loc + (labeller,), rubric, shown, case.key, str(labeller))
                problems += bad_entries
                if not bad_entries:
                    add(found)
    for path in label_files(case):
        shown = show(path)
        labeller = Path(path).stem
        if not is_valid_name(labeller):
            problems.append(Problem(shown, None, f"{name_problem(labeller, 'labeller name (the file name)')}"))
            continue
        try:
            node = load_yaml(Path(path), shown)
        except InputError as exc:
            problems += exc.problems
            continue
        if node is None:
            continue  # an empty file labels nothing
        found, bad_entries = _entries(node, (), rubric, shown, case.key, labeller)
        problems += bad_entries
        if not bad_entries:
            add(found)
    return labels, problems


def labelled_kinds() -> tuple[str, ...]:
    """Suite kinds whose outputs the rubric judge grades, so people's labels have a verdict to meet."""

    return tuple(n for n, k in kinds().items() if k.judging.audited)


def project_labels(cfg: Config, project: Project) -> tuple[list[HumanLabel], list[Problem]]:
    """Every label of the project's cases, and every problem (file:line) in them."""
    labels: list[HumanLabel] = []
    problems: list[Problem] = []
    shown_root = Path(cfg.root)
    for case in project.cases:
        files = label_files(case)
        inline = getattr(case.reference, "labels", None)  # a kind's reference with people's labels (migration)
        if not files and not inline:
            continue
        if case.kind not in labelled_kinds():
            problems.append(Problem(rel(files[0] if files else case.path, shown_root), None,
                                    f"labels of a {case.kind} case: only suites the rubric judge grades "
                                    f"({', '.join(labelled_kinds())}) take labels"))
            continue
        try:
            rubric = rubric_for(cfg, project, case)
        except InputError as exc:
            problems += exc.problems
            continue
        found, bad = load_case_labels(case, rubric, shown_root)
        labels += found
        problems += bad
    return labels, problems


def rubric_for(cfg: Config, project: Project, case: Case) -> JudgeRubric:
    """The judge rubric grading ``case``'s suite (evalkit.graders.rubric_config)."""

    finder = getattr(judge_rubric, "rubric_for_suite", None)
    suite = project.suites.get(case.suite)
    if finder is not None:
        return finder(cfg, suite)
    ref = getattr(suite.spec, "rubric", None) if suite and suite.spec else None
    base = suite.dir if suite and ref else cfg.root
    ref = ref or getattr(cfg.judge, "rubric", None)
    return judge_rubric.load_rubric(ref, base)
