"""What a suite.yaml and a case file may say, per suite kind (JSON Schema is generated from these)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from evalkit.models import Model
from evalkit.names import NAME_MAX, NAME_PATTERN
from evalkit.plugins import registry
from evalkit.kind_registry import kind as kind_named, kinds, names

SuiteKind = str
"""A registered suite kind's name (evalkit.kinds: patch, migration, generation, rag, agentic, e2e and any an
outside package registers)."""
CASE_ID = NAME_PATTERN  # the one name rule (evalkit.names): a case id becomes a folder and page name


class ChangesJudgeSpec(Model):
    """A patch or e2e suite's `judge:`: the rubric judge reads the files each answer changed."""

    max_files: int = Field(default=3, ge=1, le=100)
    """Changed files judged per output, the largest changes first (each is one judge item: at most
    max_files x judge.samples calls per output)."""


def _known_kinds(schema: dict[str, Any]) -> None:
    """The JSON Schema of `kind:` lists the registered kinds."""

    schema["enum"] = list(names())


class SuiteSpec(Model):
    """cases/<suite>/suite.yaml"""

    kind: SuiteKind = Field(json_schema_extra=_known_kinds)
    """What the cases are: a registered suite kind (patch, migration, generation, rag, agentic, e2e, or one an
    outside package registers under the `evalkit.kinds` entry point)."""
    language: str = "text"
    """Language of the code in this suite (java, python, typescript, text); picks the parser."""
    description: str = ""
    """One paragraph shown on the suite page."""
    defaults: dict[str, Any] = {}
    """Values merged into every case's `inputs` (a case's own value wins)."""
    trusted: bool = False
    """The suite's cases and the outputs scored on them may run on this host: with `sandbox.backend: auto`
    and no Docker daemon at the start of a run, only trusted suites are executed (by the local backend)."""
    test_changes: Literal["refuse", "revert"] = "refuse"
    """Patch, agentic and e2e suites: a system's change to test infrastructure (conftest.py, pytest/tox
    settings, plugins, start-up hooks) is refused (`tampered_with_tests`, not resolved) or reverted to
    the base version before the tests run."""
    test_paths: list[str] | None = None
    """Patch, agentic and e2e suites: where the tests live (`name/`: a folder at any depth; `test_*.py`: file
    names; with `/`: whole paths). Whatever a system's change does to files there, they go back to base before
    the case's test patch. None: `tests/`, `test_*.py`, `*_test.py`, `conftest.py` and every pytest, tox and
    setup configuration file."""
    rubric: str | None = None
    """Migration suites (and patch or e2e suites with `judge:`): the judge rubric, a shipped name (codejudge,
    kai_ci, kai_eval) or a rubric .yaml path relative to the suite folder (evalkit.graders.rubric_config); None:
    the judge config's (default codejudge)."""
    judge: bool | ChangesJudgeSpec = False
    """Patch and e2e suites: `true` or `{max_files: N}` has the rubric judge grade each output besides the tests,
    one judge item per file the answer changed (before: the case's tree, after: the patched tree; e2e: the final
    iteration's tree), the N largest changes (default 3), the case's description and task as context
    (evalkit.graders.judge_changes); the report then gives the judge's agreement with the tests."""
    solved_store: str | None = None
    """Migration suites: a solved-incident store (Kai's index JSON; path relative to the suite folder). A case
    without its own `solved_example` gets the store's most similar incident of the same rule (by file and
    message; evalkit.solved_store), shown to the system and the judge."""

    @field_validator("kind")
    @classmethod
    def _registered_kind(cls, value: str) -> str:
        return registry("kinds").require(value, "suite kind")

    @field_validator("judge")
    @classmethod
    def _judge_kind(cls, value: bool | ChangesJudgeSpec, info: ValidationInfo) -> bool | ChangesJudgeSpec:
        kind = info.data.get("kind")
        if value is not False and kind is not None and not kind_named(kind).judging.changes_judge:
            judged = [n for n, k in kinds().items() if k.judging.changes_judge]
            raise ValueError(f"judge: is an option of {' and '.join(judged)} suites, not of a {kind} "
                             "suite (migration suites are always judged; generation suites by their criteria)")
        return value

    def judged_files(self) -> int:
        """How many changed files the rubric judge reads per output (0: the suite's outputs are not judged)."""
        if self.judge is False:
            return 0
        return self.judge.max_files if isinstance(self.judge, ChangesJudgeSpec) else ChangesJudgeSpec().max_files


class AssertionSpec(Model):
    """One deterministic check of a system's output."""

    type: str = Field(json_schema_extra=registry("assertions").schema_enum())
    """Kind of check: a registered assertion type (evalkit's own: contains, not_contains, icontains,
    not_icontains, regex, not_regex, is_json, syntax_valid, file_set, python; an outside package adds one
    with an `evalkit.assertions` entry point)."""
    value: Any = None
    """The string, pattern, expected file list, or `module:function` the check uses."""
    file: str | None = None
    """Which output file to check (default: the case's main file, or the whole answer)."""
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    """JSON Schema for `is_json`."""
    weight: float = Field(default=1.0, ge=0)
    """Weight in the case's assertion score."""
    description: str = ""
    """What the check means, shown in the report."""

    @field_validator("type")
    @classmethod
    def _registered(cls, v: str) -> str:
        return registry("assertions").require(v, "assertion type")


class Criterion(Model):
    """One rubric criterion a judge marks met / not met."""

    id: str | None = None
    """Short id (defaults to c1, c2, ...)."""
    text: str
    """The criterion, in plain words."""
    weight: float = Field(default=1.0, ge=0)
    """Weight in the case's rubric score."""


class Incident(Model):
    """One analyzer incident (Konveyor style)."""

    rule_id: str
    """Rule that fired, e.g. javax-to-jakarta-import-00001."""
    description: str = ""
    """The rule's description."""
    message: str = ""
    """The incident's message."""
    line: int | None = Field(default=None, ge=1)
    """1-based line in the legacy file."""
    file: str | None = None
    """File the incident is in, when the case spans several files."""
    category: Literal["mandatory", "optional", "potential"] | None = None
    """Konveyor's category: `optional` and `potential` incidents may need no change, so they are
    shown to the system and the judge but not counted in a migration case's incidents_resolved."""


class LegacyFileInputs(Model):
    """One legacy file and its analyzer incidents: what the code judge reads of a migration case
    (evalkit.graders.judge_dispatch); the migration kind's MigrationInputs extends it."""

    file_path: str
    """Path of the file inside the application (shown, and used as the output file name)."""
    legacy_file: str
    """The legacy source (path relative to the case)."""
    source_technology: str = "Java EE"
    """Technology migrated from."""
    target_technology: str = "Quarkus"
    """Technology migrated to."""
    incidents: list[Incident] = Field(min_length=1)
    """Analyzer incidents in the legacy file."""


class PatchInputs(Model):
    """Inputs of a SWE-bench-style patch case."""

    problem_statement: str = ""
    """The issue text the system sees."""
    source_dir: str | None = None
    """The source tree (folder relative to the case, inside the suite)."""
    repo: str | None = None
    """Or a git repository (path or URL) ..."""
    base_commit: str | None = None
    """... and the commit to check out."""
    test_patch_file: str | None = None
    """Patch adding the tests (applied after the system's patch)."""
    test_command: str = "python3 -m pytest -rA -p no:cacheprovider"
    """Command that runs the tests inside the sandbox."""
    junit_paths: list[str] = []
    """JUnit XML reports the test command writes (relative to the tree)."""
    image: str = "evalkit/python-pytest:bookworm"
    """Container image the tests run in."""
    dockerfile_dir: str | None = None
    """Folder with a Dockerfile to build the image when it is absent (relative to the case)."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Limit for one test run."""
    log_parser: str | None = None
    """SWE-bench 5.x row's harness log parser (e.g. `parse_log_django`): the official harness grades its runs too."""
    tree_in_image: str | None = None
    """Folder of the image that already holds the tree at base_commit (SWE-bench's images: `/testbed`);
    nothing is copied in, the patches are applied there (Docker only)."""
    eval_script_file: str | None = None
    """With tree_in_image: the row's eval script (relative to the case), run as the test command."""
    eval_type: str | None = None
    """SWE-bench 5.x row's `eval_type` (how the harness runs its tests), kept as the row gave it."""


class PatchReference(Model):
    """Reference of a patch case."""

    patch_file: str
    """The gold patch (path relative to the case)."""
    fail_to_pass: list[str]
    """Tests that fail before the fix and must pass after it."""
    pass_to_pass: list[str] = []
    """Tests that pass before and must still pass."""


class IncidentMatcher(Model):
    """How to tell whether an incident of one rule is still there after a system's changes."""

    type: Literal["regex", "import"]
    """`regex`: the pattern matches the file; `import`: the file imports the module (Java or Python)."""
    pattern: str
    """A regular expression (regex), or a module prefix such as `javax.ejb` (import)."""


class SandboxInputs(Model):
    """Inputs of a case whose source tree is tested in the sandbox."""

    source_dir: str
    """The application's source tree (folder relative to the case, inside the suite)."""
    instructions: str = ""
    """What the assistant is asked to do, in plain words."""
    incidents: list[Incident] = []
    """The code-analysis report: rule id, file, line, message."""
    test_command: str | None = None
    """Command that runs the application's tests inside the sandbox (None: the case has no tests)."""
    junit_paths: list[str] = []
    """JUnit XML reports the test command writes (relative to the tree)."""
    image: str = "evalkit/python-pytest:bookworm"
    """Container image the tests run in."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Limit for one test run."""


class CaseFile(Model):
    """A case file: cases/<suite>/<case>/case.yaml or cases/<suite>/<case>.yaml."""

    id: str = Field(pattern=CASE_ID, max_length=NAME_MAX)
    """Unique id within the suite (used in file names and URLs)."""
    kind: str | None = Field(default=None, exclude=True)
    """The suite's kind, optional: lets an editor pick this kind's schema from case.schema.json; evalkit check
    rejects a case whose kind differs from its suite's."""
    description: str = ""
    """What the case checks."""
    tags: list[str] = []
    """Labels for breakdowns in the report."""
    inputs: dict[str, Any] = {}
    """What the system under test gets (schema depends on the suite kind)."""
    reference: dict[str, Any] = {}
    """The expected answer (schema depends on the suite kind)."""
    assertions: list[AssertionSpec] = []
    """Deterministic checks of the output."""
    criteria: list[Criterion] = []
    """Rubric criteria for a judge (generation suites)."""

