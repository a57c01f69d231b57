"""JSON Schemas generated from the models, shipped in evalkit/schemas/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, Union, cast

from pydantic import BaseModel

from evalkit.fsutil import atomic_write_text
from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact, Sample, ScoresArtifact
from evalkit.casemodels import CaseFile, SuiteSpec
from evalkit.config import Config
from evalkit.graders.audit_models import JudgeAudit
from evalkit.graders.migration_judge import JudgeOutcome
from evalkit.graders.rubric_config import JudgeRubric
from evalkit.kind_registry import kinds
from evalkit.models import FIELD_DOCS
from evalkit.plugins import OWN, registry
from evalkit.report.models import CaseDetail, Report
import os
import subprocess
import sys

SCHEMA_DIR = Path(__file__).parent / "schemas"
SCHEMA_NAMES = ("suite", "case", "config", "report", "case-detail", "output", "execution", "grades", "scores",
                "command-output", "judge-audit", "rubric", "judge-outcome")
"""The schemas shipped (and copied into every site), in the order of `models()`; then one case schema per suite
kind (``case-<kind>``)."""


def models(own_only: bool = True) -> dict[str, type[BaseModel]]:
    """Every schema's model by name; the case schemas of evalkit's own kinds, or (``own_only`` False) of every
    registered kind, outside packages' too."""
    classes: tuple[type[BaseModel], ...] = (SuiteSpec, case_file_union(own_only), Config, Report, CaseDetail, OutputArtifact, ExecutionArtifact,
               GradesArtifact, ScoresArtifact, Sample, JudgeAudit, JudgeRubric, JudgeOutcome)
    return {**dict(zip(SCHEMA_NAMES, classes, strict=True)), **kind_case_models(own_only)}


NO_KIND = "(no kind)"
"""The tag of `case_file_union`'s branch for a case file without `kind:`."""


def kind_case_models(own_only: bool = True, says_kind: bool = False) -> dict[str, type[BaseModel]]:
    """``case-<kind>``: a case file of each registered suite kind, its `inputs` and `reference` typed by the kind's
    models (evalkit.kinds), so an editor rejects a misspelled key; evalkit's own kinds unless ``own_only`` is False.
    Its `kind:` is optional (the suite.yaml says it), or required with ``says_kind`` (a branch of the union)."""
    from pydantic import Field, create_model  # deferred: pydantic internals, only here

    literal: Any = Literal  # of a name known only at run time
    out: dict[str, type[BaseModel]] = {}
    for name, k in kinds().items():
        if own_only and registry("kinds").source(name) != OWN:
            continue
        fields: dict[str, Any] = {}
        for part, model in (("inputs", k.inputs), ("reference", k.reference)):
            if model is None:
                continue
            required = any(f.is_required() for f in model.model_fields.values())
            doc = CaseFile.model_fields[part].description
            fields[part] = (model, Field(description=doc) if required else Field(default_factory=model, description=doc))
        said = f"The suite's kind, {name} (evalkit check refuses a case whose kind differs from its suite's): picks this"
        fields["kind"] = ((literal[name], Field(exclude=True, description=f"{said} branch of case.schema.json.")) if says_kind
                          else (literal[name] | None, Field(default=None, exclude=True,
                                                            description=CaseFile.model_fields["kind"].description)))
        title = "".join(p.title() for p in name.replace("-", "_").split("_"))
        out[f"case-{name}"] = create_model(
            f"{title}{'KindCaseFile' if says_kind else 'CaseFile'}", __base__=CaseFile,
            __doc__=f"A case file {f'saying kind: {name}' if says_kind else f'of a {name} suite'}: {k.description}",
            **fields)
    return out


def case_file_union(own_only: bool = True) -> type[BaseModel]:
    """``case``: a case file of any registered suite kind, a union discriminated on its optional `kind:`.

    A file saying ``kind: <name>`` is a ``case-<name>`` case file (inputs and reference typed, an unknown key
    refused); a file saying a kind no one registered is refused; a file without `kind:` is the generic case
    file, inputs and reference free-form (its kind is known only from its suite.yaml)."""
    from pydantic import ConfigDict, Discriminator, Field, RootModel, Tag, create_model  # deferred: pydantic internals, only here

    def tag(node: Any) -> Any:
        said = node.get("kind") if isinstance(node, dict) else getattr(node, "kind", None)
        return NO_KIND if said is None else said

    branches = {name.removeprefix("case-"): m for name, m in kind_case_models(own_only, says_kind=True).items()}
    generic = create_model("CaseFileWithoutKind", __base__=CaseFile,
                           __doc__="A case file without `kind:`: its suite.yaml says the kind, so inputs and "
                                   "reference are free-form here (case-<kind>.schema.json types them).",
                           kind=(None, Field(default=None, exclude=True, description="Absent (or null): the "
                                             "suite.yaml's kind holds.")))
    tags = [*branches, NO_KIND]
    union: Any = Annotated[Union[tuple(Annotated[m, Tag(n)] for n, m in zip(tags, [*branches.values(), generic]))],
                           Discriminator(tag, custom_error_type="unknown_kind",
                                         custom_error_message=f"kind: expected one of {', '.join(branches)} (its "
                                                              "suite's kind), or no kind: key")]

    def kind_picks_the_branch(schema: dict[str, Any]) -> None:
        """pydantic's ``oneOf`` as ``if kind is <name> then <branch>``: a validator or an editor then reports a
        misspelled key at the key itself (under oneOf it can only say that no branch fits), and an unknown kind
        at `kind:`."""
        schema["type"] = "object"
        schema["properties"] = {"kind": {"enum": [*branches, None], "description": CaseFile.model_fields["kind"].description}}
        schema["allOf"] = [{"if": {"properties": {"kind": {"const": t}}, "required": ["kind"]} if t != NO_KIND
                            else {"properties": {"kind": {"type": "null"}}}, "then": branch}
                           for t, branch in zip(tags, schema.pop("oneOf"), strict=True)]

    made = type("CaseFile", (RootModel[union],), {"__module__": __name__, "__doc__": CASE_UNION_DOC,
                                                  "model_config": ConfigDict(json_schema_extra=kind_picks_the_branch)})
    return cast(type[BaseModel], made)  # type() is typed as returning a plain `type`; this one is a RootModel


CASE_UNION_DOC = """A case file: cases/<suite>/<case>/case.yaml or cases/<suite>/<case>.yaml.

One branch per suite kind, chosen by the file's optional `kind:` (which must equal its suite.yaml's `kind:`;
evalkit check refuses one that differs): that branch types `inputs` and `reference` with the kind's models, so a
misspelled key is an error. A file without `kind:` takes the generic branch, where `inputs` and `reference` are
free-form, because its kind is known only from its suite.yaml: for those, associate the kind's own schema,
case-<kind>.schema.json, with the suite's case files (e.g. cases/migration/*/case.yaml), or write `kind:`."""


def write_schemas(out: Path | None = None, own_only: bool = True) -> list[Path]:
    """Write every schema to ``out`` (default: the package's schemas/): the case schemas of evalkit's own kinds, or
    with ``own_only`` False of every registered kind (an outside package's ``case-<kind>.schema.json``, and its
    branch of ``case.schema.json``). Field docstrings become descriptions only in a process started with
    EVALKIT_FIELD_DOCS=1 (evalkit.models.FIELD_DOCS): elsewhere the schemas are written by such a process."""

    out = out or SCHEMA_DIR
    if not FIELD_DOCS:
        code = "import sys; from pathlib import Path; from evalkit.schemas import write_schemas; " \
               "print('\\n'.join(map(str, write_schemas(Path(sys.argv[1]), sys.argv[2] == 'own'))))"
        proc = subprocess.run([sys.executable, "-c", code, str(out), "own" if own_only else "all"],
                              env={**os.environ, "EVALKIT_FIELD_DOCS": "1"},
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"writing the JSON Schemas failed: {proc.stderr[-2000:]}")
        return [Path(line) for line in proc.stdout.splitlines() if line]
    written = []
    for name, model in models(own_only).items():
        path = out / f"{name}.schema.json"
        atomic_write_text(path, json.dumps(model.model_json_schema(by_alias=True), indent=1, sort_keys=True) + "\n")
        written.append(path)
    return written
