"""The shipped case.schema.json is a union discriminated on a case file's optional `kind:` (issue 13 item 2).

A real JSON Schema validator (jsonschema, Draft 2020-12) checks every demo case file and every case file the
importers write from the real public data, with and without `kind:`; a misspelled inputs key in a file saying
`kind: migration` is refused at its line, and so is a kind nobody registered. pydantic's own validation of the
same union (evalkit.schemas.case_file_union) is the oracle the schema must agree with.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from pydantic import ValidationError as PydanticError

from evalkit.cases import _case_files
from evalkit.casemodels import CaseFile
from evalkit.kinds import kind
from evalkit.schemas import SCHEMA_DIR, case_file_union, kind_case_models
from evalkit.yamlio import line_of, load_yaml, plain
from helpers import REALDATA, REPO, evalkit

REAL = REALDATA
KONVEYOR = REPO / "tests" / "importers" / "data" / "konveyor"
needs_real = pytest.mark.realdata()
OWN_KINDS = ("agentic", "e2e", "generation", "migration", "patch", "rag")


def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


UNION = validator("case")
PER_KIND = {k: validator(f"case-{k}") for k in OWN_KINDS}
ORACLE = case_file_union()


def case_files(cases_dir: Path) -> list[tuple[str, Path]]:
    """(suite kind, case file) of every case under a cases/ folder, found as evalkit finds them."""
    out = []
    for suite in sorted(p for p in cases_dir.iterdir() if (p / "suite.yaml").is_file()):
        said = plain(load_yaml(suite / "suite.yaml"))["kind"]
        out += [(said, path) for _name, path in _case_files(suite)]
    return out


def problems(v: Draft202012Validator, node: Any) -> list[ValidationError]:
    return list(v.iter_errors(node))


def assert_valid_every_way(said: str, path: Path) -> None:
    """Valid against the union and the kind's own schema, without `kind:` and with it, as pydantic says too."""
    node = plain(load_yaml(path))
    assert "kind" not in node, path
    for with_kind in (False, True):
        data = {**node, "kind": said} if with_kind else node
        for name, v in (("case", UNION), (f"case-{said}", PER_KIND[said])):
            errors = problems(v, data)
            assert not errors, f"{path} (kind: {data.get('kind')}) against {name}.schema.json: {best_match(errors)}"
        branch = type(ORACLE.model_validate(data).root).__name__
        assert branch == (kind_case_models(says_kind=True)[f"case-{said}"].__name__ if with_kind
                          else "CaseFileWithoutKind"), path


def test_every_demo_case_file_is_valid_with_and_without_kind() -> None:
    found = case_files(REPO / "cases")
    assert {k for k, _ in found} == set(OWN_KINDS)
    for said, path in found:
        assert_valid_every_way(said, path)


def line_of_error(node: Any, error: ValidationError) -> int | None:
    """The file line a validator's error points at: the unexpected key itself for additionalProperties."""
    loc = tuple(error.absolute_path)
    unexpected = re.findall(r"'([^']+)' (?:was|were) unexpected", error.message)
    return line_of(node, loc + (unexpected[0],) if unexpected else loc)


def misspelled_migration_case(tmp_path: Path, says_kind: str | None) -> tuple[Path, int]:
    """The demo cdi-inject case with `legacy_file` misspelled `legacy_fle` (and `kind:` when given), and the
    line of the misspelled key."""
    lines = (REPO / "cases" / "migration" / "cdi-inject" / "case.yaml").read_text().splitlines()
    if says_kind is not None:
        lines.insert(1, f"kind: {says_kind}")
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("legacy_file:"))
    lines[at] = lines[at].replace("legacy_file:", "legacy_fle:")
    path = tmp_path / "case.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path, at + 1


def test_a_misspelled_inputs_key_with_kind_migration_is_refused_at_its_line(tmp_path: Path) -> None:
    path, line = misspelled_migration_case(tmp_path, "migration")
    node = load_yaml(path)
    errors = problems(UNION, plain(node))
    assert errors, "case.schema.json accepted inputs.legacy_fle"
    best = best_match(errors)
    assert "legacy_fle" in best.message and list(best.absolute_path) == ["inputs"], best
    assert line_of_error(node, best) == line
    # the kind's own schema says the same, and so does pydantic's validation of the union
    best = best_match(problems(PER_KIND["migration"], plain(node)))
    assert "legacy_fle" in best.message and line_of_error(node, best) == line
    with pytest.raises(PydanticError) as exc:
        ORACLE.model_validate(plain(node))
    assert {(e["type"], e["loc"][-1]) for e in exc.value.errors()} >= {("extra_forbidden", "legacy_fle"),
                                                                       ("missing", "legacy_file")}


def test_without_kind_only_the_kinds_own_schema_sees_the_misspelling(tmp_path: Path) -> None:
    """Without `kind:` the union cannot know the kind (suite.yaml says it): its generic branch takes the file,
    which is why case-<kind>.schema.json is the schema to associate with a suite's case files."""
    path, line = misspelled_migration_case(tmp_path, None)
    node = load_yaml(path)
    assert not problems(UNION, plain(node))
    assert type(ORACLE.model_validate(plain(node)).root).__name__ == "CaseFileWithoutKind"
    best = best_match(problems(PER_KIND["migration"], plain(node)))
    assert line_of_error(node, best) == line


@pytest.mark.parametrize("said", ["migrashun", "Migration", "", 3])
def test_a_kind_nobody_registered_is_refused(said: Any) -> None:
    node = {**plain(load_yaml(REPO / "cases" / "migration" / "cdi-inject" / "case.yaml")), "kind": said}
    assert problems(UNION, node), f"case.schema.json accepted kind: {said!r}"
    with pytest.raises(PydanticError) as exc:
        ORACLE.model_validate(node)
    if isinstance(said, str) and said:
        assert [e["type"] for e in exc.value.errors()] == ["unknown_kind"]
        assert all(k in str(exc.value) for k in OWN_KINDS)


def test_a_file_saying_another_kind_than_its_content_is_refused() -> None:
    """A rag case saying `kind: migration` is checked against migration's models, which it does not fit."""
    node = {**plain(load_yaml(REPO / "cases" / "rag" / "ejb-stateless-to-cdi.yaml")), "kind": "migration"}
    assert problems(UNION, node)
    assert not problems(UNION, {**node, "kind": "rag"})


def test_union_branches_are_the_kinds_models_once_each() -> None:
    schema = json.loads((SCHEMA_DIR / "case.schema.json").read_text())
    assert "kind" in schema["description"] and "case-<kind>.schema.json" in schema["description"]
    defs = schema["$defs"]
    branches = [b["then"]["$ref"].rsplit("/", 1)[-1] for b in schema["allOf"]]
    consts = {}
    for when, name in zip(schema["allOf"], branches):
        branch = defs[name]
        assert branch["additionalProperties"] is False
        said = branch["properties"]["kind"]
        if name == "CaseFileWithoutKind":
            assert said["type"] == "null" and branch["properties"]["inputs"]["type"] == "object"
            continue
        assert "kind" in branch["required"] and when["if"]["properties"]["kind"]["const"] == said["const"]
        consts[said["const"]] = name
        k = kind(said["const"])
        for part, model in (("inputs", k.inputs), ("reference", k.reference)):
            if model is not None:
                assert branch["properties"][part]["$ref"] == f"#/$defs/{model.__name__}"
                assert defs[model.__name__]["additionalProperties"] is False
    assert sorted(consts) == sorted(OWN_KINDS) and "CaseFileWithoutKind" in branches
    assert schema["properties"]["kind"]["enum"] == [*sorted(OWN_KINDS), None]
    titles = [d.get("title") for d in defs.values()]
    assert len(titles) == len(set(titles)), "a model is defined twice in case.schema.json"
    # per-kind files keep kind optional: existing case files without it stay valid
    for k in OWN_KINDS:
        per_kind = json.loads((SCHEMA_DIR / f"case-{k}.schema.json").read_text())
        assert "kind" not in per_kind.get("required", []) and "kind" in per_kind["properties"]


def test_kind_is_only_a_model_field_not_in_the_case_dump() -> None:
    """`kind:` is read from the file but never dumped: the case data a command system gets, and the cache,
    stay as they were."""
    node = plain(load_yaml(REPO / "cases" / "migration" / "cdi-inject" / "case.yaml"))
    said = CaseFile.model_validate({**node, "kind": "migration"})
    assert said.kind == "migration"
    assert said.model_dump(mode="json", by_alias=True) == CaseFile.model_validate(node).model_dump(mode="json",
                                                                                                  by_alias=True)
    typed = kind_case_models()["case-migration"].model_validate({**node, "kind": "migration"})
    assert "kind" not in typed.model_dump(mode="json")
    assert "kind" not in ORACLE.model_validate({**node, "kind": "migration"}).model_dump(mode="json")


@needs_real
def test_case_files_imported_from_the_real_data_are_valid(tmp_path: Path) -> None:
    """Every case file the importers write from ../shared/realdata (SWE-bench Lite rows, Kai CI and kai-eval,
    the LLMService datasets) and the konveyor analyzer excerpt is valid with and without `kind:`."""
    (tmp_path / "evalkit.yaml").write_text("release: r\nsystems: []\n")
    datasets = sorted(p for p in (REAL / "api_automation_agent_evals" / "evaluations" / "data").iterdir() if p.is_dir())
    imports = [
        ("swebench", str(REAL / "swebench" / "offline_candidates_lite_dev.json"), "--suite-dir", str(tmp_path / "cases/swe"),
         "--repo", "marshmallow-code/marshmallow=https://example.invalid/m.git",
         "--repo", "pydicom/pydicom=https://example.invalid/p.git"),
        ("kai-ci", str(REAL / "kai_judge" / "kai-ci_report.json"), "--suite-dir", str(tmp_path / "cases/kai-ci")),
        ("kai-eval", str(REAL / "kai_eval_pranavgaikwad"), "--suite-dir", str(tmp_path / "cases/kai-eval"), "--grader", "gpt-4o"),
        ("llmservice", *map(str, datasets), "--suite-dir", str(tmp_path / "cases")),
        ("konveyor", str(KONVEYOR / "output.yaml"), "--source", str(KONVEYOR / "source"), "--suite-dir",
         str(tmp_path / "cases/files"), "--kind", "migration"),
        ("konveyor", str(KONVEYOR / "output.yaml"), "--source", str(KONVEYOR / "source"), "--suite-dir",
         str(tmp_path / "cases/app"), "--kind", "agentic"),
    ]
    written = 0
    for args in imports:
        proc = evalkit(tmp_path, "import", *args, env={"PYTHONPATH": str(REPO)})
        written += sum(int(n) for n in re.findall(r"(?:wrote|: \S+:) (\d+) (?:\w+ )?case\(s\)", proc.stdout + proc.stderr))
    found = case_files(tmp_path / "cases")
    assert len(found) == written > 0
    assert {k for k, _ in found} == {"patch", "migration", "generation", "agentic"}
    for said, path in found:
        assert_valid_every_way(said, path)
