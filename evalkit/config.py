"""evalkit.yaml: the release label, the systems under test, suites, folders, sandbox and judge."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, Union

from pydantic import Discriminator, Field, PrivateAttr, Tag, field_validator, model_validator

from evalkit.errors import InputError, Problem
from evalkit.fsutil import confine_writes
from evalkit.graders.rubric_config import config_rubric_problem
from evalkit.llm.settings import FallbackSettings, JudgeSettings
from evalkit.models import Model
from evalkit.names import NAME_MAX, NAME_PATTERN, is_valid_name, name_problem, release_problem
from evalkit.plugins import registry
from evalkit.yamlio import line_of, load_yaml, validate

AUTO_BACKEND = "auto"
"""``sandbox.backend: auto``: Docker when it answers, else the local backend (evalkit.isolation)."""

NAME_RE = NAME_PATTERN  # the one name rule (evalkit.names): system names and release labels become folder names
PACKAGE_PLACEHOLDER = "{evalkit}"
"""A config path starting so names a file of the installed evalkit package (see `Config.resolve`)."""
PACKAGE_DIR = Path(__file__).resolve().parent
TEMPLATE_CACHE_ENV = "EVALKIT_TEMPLATE_CACHE"
"""A folder for compiled templates that projects share (`Config.template_cache`); unset: each project's own."""
Name = Annotated[str, Field(pattern=NAME_RE, max_length=NAME_MAX)]


class SystemBase(Model):
    """Settings every system has, whatever its adapter."""

    name: Name
    """Unique name of this configuration of the system under test (used in file names and URLs)."""
    description: str = ""
    """One line shown in the report."""
    suites: list[str] | None = None
    """Suites this system runs on; None means every suite of a kind its adapter supports."""
    samples: int = Field(default=1, ge=1, le=50)
    """How many times to run the system per case (k > 1 enables semantic entropy)."""
    matrix: dict[str, Annotated[list[Any], Field(min_length=1)]] | None = None
    """Expand this entry into one system per combination of these settings, merged into `settings`
    (e.g. `{agents: [false, true], solution_server: [false, true]}`: Kai's four scenarios). The first
    combination (first value of every axis) is the group's baseline in the scenario section."""
    names: list[Name] | None = None
    """Names of the expanded systems, in matrix order (default: `<name>-<settings that are on>`,
    `<name>-baseline` for the first)."""
    scenario_of: str | None = None
    """Set by the expansion: the matrix entry this system came from."""


class CommandSystem(SystemBase):
    """Any executable, run with the case materialised in a temporary work folder."""

    adapter: Literal["command"]
    command: list[str]
    """argv of the program; `{python}` is replaced by the running interpreter. Relative paths resolve against
    the config file's folder, whatever the current folder: the program when written as a path (`./run.sh`),
    and every argument naming a file or folder that exists there (`python3 gen/my_generator.py`)."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Wall-clock limit for one run; past it the run is killed and recorded as `timeout`."""
    max_output_bytes: int = Field(default=10_000_000, gt=0)
    """Cap on what the program may print or write as output JSON."""
    env: dict[str, str] = {}
    """Environment variables for the program, besides PATH, HOME, LANG (and the like) and evalkit's protocol
    variables: nothing else of evalkit's environment reaches it (never put secrets here: use `pass_env`)."""
    pass_env: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = []
    """Names of variables of evalkit's own environment the program receives as they are (e.g. its API key);
    their values are not part of the config and never written anywhere."""
    settings: dict[str, Any] = {}
    """Free-form settings handed to the program in the case JSON (`system.settings`)."""
    watch: list[str] = []
    """Files of the program itself (relative to the config file, or to the installed evalkit package when
    written `{evalkit}/...`): editing one reruns this system."""

    @field_validator("command")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("command must name a program")
        return v


class RecordedSystem(SystemBase):
    """Outputs read from files: a folder of `<suite>/<case>.json`, or SWE-bench predictions JSONL."""

    adapter: Literal["recorded"]
    path: str
    """Folder of recorded outputs, or a predictions .jsonl file (relative to the config file)."""
    model_name: str | None = None
    """For predictions JSONL holding several models: which `model_name_or_path` to take."""
    grades: str | None = None
    """A recorded judge (relative to the config file): a recorded-grades JSON written by `evalkit import kai-ci` or
    `kai-eval`; the grade stage takes this system's judge verdicts from it instead of calling a model."""


class GoldSystem(SystemBase):
    """The case's reference answer: what a perfect system would return."""

    adapter: Literal["gold"]


class EmptySystem(SystemBase):
    """No output at all: the floor every metric should sit on."""

    adapter: Literal["empty"]


CANARY_VARIANTS = ("empty", "unchanged", "truncated", "truncated-elided", "placeholder", "lines-deleted")
"""evalkit's canaries (evalkit.graders.canaries), in the order the report lists them."""


def canary_name(variant: str) -> str:
    """The system name of a canary: ``canary-<variant>``."""
    return f"canary-{variant}"


class CanarySystem(SystemBase):
    """An answer doing no real work, made by evalkit from each case (added by `canaries:`; may be listed too)."""

    adapter: Literal["canary"]
    variant: Literal["empty", "unchanged", "truncated", "truncated-elided", "placeholder", "lines-deleted"]
    """Which: no answer, the input as it is, the expected answer's first half (with `-elided`, an elision
    comment where the rest was), a trivial stub, the input with its offending lines deleted."""


class AnthropicSystem(SystemBase):
    """A prompt template sent to a model: the plain model as a baseline system."""

    adapter: Literal["anthropic"]
    model: str
    """Model id of the system under test (never the judge's model)."""
    prompt: str = "templates/prompts/system_migration.md.j2"
    """Jinja prompt template (relative to the config file)."""
    max_tokens: int = 4096
    """Largest answer accepted from the model."""
    base_url: str | None = None
    """API base URL; None means the judge's when the judge uses the same provider, else the provider's default."""
    fallback: FallbackSettings | None = None
    """Model asked when this one keeps failing; its answers are marked with its model (a different system)."""
    api_key: Literal["env", "none"] = "env"
    """env: the provider's key from the environment (OPENAI_API_KEY...); none: the endpoint takes no key (a local
    vLLM or Ollama without auth): no key is needed or sent."""


class OpenAISystem(AnthropicSystem):
    """A prompt template sent to any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, Ollama,
    gateways: set `base_url`); the key comes from OPENAI_API_KEY (or OPENAI_API_KEYS) only."""

    adapter: Literal["openai"]  # type: ignore[assignment]


TYPED_ADAPTERS = ("command", "recorded", "gold", "empty", "canary", "anthropic", "openai")
"""evalkit's own adapters, each with its settings model here (TYPED_SYSTEMS); any other is a PluginSystem."""


class PluginSystem(SystemBase):
    """A system run by an adapter an outside package registers (an `evalkit.adapters` entry point)."""

    adapter: str = Field(json_schema_extra={"not": {"enum": list(TYPED_ADAPTERS)}})
    """Name of the registered adapter (not one of evalkit's own: those have their own settings above)."""
    settings: dict[str, Any] = {}
    """Free-form settings the adapter reads (`system.settings`)."""

    @field_validator("adapter")
    @classmethod
    def _registered(cls, v: str) -> str:
        return registry("adapters").require(v, "adapter")


def _system_tag(value: Any) -> str:
    """The union member of one `systems:` entry: its adapter's own model, else PluginSystem."""
    name = value.get("adapter") if isinstance(value, dict) else getattr(value, "adapter", None)
    return name if isinstance(name, str) and name in TYPED_ADAPTERS else "plugin"


System = Annotated[
    Union[Annotated[CommandSystem, Tag("command")], Annotated[RecordedSystem, Tag("recorded")],
          Annotated[GoldSystem, Tag("gold")], Annotated[EmptySystem, Tag("empty")],
          Annotated[CanarySystem, Tag("canary")],
          Annotated[AnthropicSystem, Tag("anthropic")], Annotated[OpenAISystem, Tag("openai")],
          Annotated[PluginSystem, Tag("plugin")]],
    Discriminator(_system_tag),
]


class SandboxSettings(Model):
    """Where and how tests of patch, agentic and e2e suites run."""

    backend: str = Field(default="auto", json_schema_extra=registry("sandbox_backends").schema_enum("auto"))
    """A registered sandbox backend (evalkit's own: docker, local; an outside package adds one with an
    `evalkit.sandbox_backends` entry point), or `auto`: Docker when a daemon answers, else the local sandbox
    (the most preferred available backend that auto may pick; the report says which)."""
    memory_mb: int = 1024
    """Memory limit per container."""
    cpus: float = 1.0
    """CPU limit per container."""
    pids: int = 256
    """Process limit per container."""
    log_limit_bytes: int = 1_000_000
    """Cap on test output kept per run."""
    reruns: int = 0
    """Rerun failing tests this many times to detect flaky ones."""
    containers: int | None = Field(default=None, ge=1)
    """Most sandbox containers at once in this process, whatever `--jobs` is; empty: from the machine
    (twice the cores, at most half the memory in containers of `memory_mb`). Adaptive: it backs off
    when container starts slow down or fail and grows back after quick ones; the report's run notes
    say what it did. How many run at once never changes a result, so editing it reruns nothing."""
    flaky_policy: Literal["fail", "pass", "exclude"] = "fail"
    """How a flaky FAIL_TO_PASS / PASS_TO_PASS test counts for resolution."""
    swebench_namespace: str = "swebench"
    """Registry namespace of SWE-bench's environment images, for `tree_in_image` cases that name no
    namespace (`sweb.eval.x86_64.<id>:latest` becomes `<namespace>/...`); empty: local names as they are."""
    repos: dict[str, str] = {}
    """`owner/name` -> local clone or URL, for patch cases that record their repository as `owner/name`
    (SWE-bench imports); `EVALKIT_REPOS=owner/name=DIR,...` adds to it."""
    repos_dir: str | None = None
    """Folder of clones found as `<owner>__<name>`, `<owner>/<name>` or `<name>` (also `EVALKIT_REPOS_DIR`)."""
    base_image: str = "evalkit/python-pytest:bookworm"
    """evalkit's own sandbox image: when a case needs it and Docker lacks it, the run builds it first
    (from the Dockerfile in evalkit/sandbox/base_image, or from Debian packages without a registry)."""
    image_store_gb: float | None = Field(default=None, gt=0)
    """Cap on the disk evalkit's sandbox images take on this Docker host (GB, Docker's own sizes); after a run,
    the least recently used evalkit images (ones it built and labelled `evalkit.image`, or ones this project's
    runs pulled) are removed until the store fits, never one the run needs or a container uses; None: no cap."""

    @field_validator("backend")
    @classmethod
    def _registered(cls, v: str) -> str:
        return registry("sandbox_backends").require(v, "sandbox backend", also=(AUTO_BACKEND,))


class ValidationSettings(Model):
    """Settings of case validation and case health (evalkit.stages.validate, evalkit.stages.health)."""

    ablations: int = Field(default=8, ge=0)
    """Partial answers derived from each case's reference and checked against the case (patch: each hunk of
    the gold patch left out in turn, each file alone; other kinds: the kind's own), at most this many per
    case; 0 turns case-health ablations off."""


class MetricsSettings(Model):
    """Settings of the score stage."""

    ks: list[int] = [1, 3, 5, 10]
    """Cut-offs for localization recall@k and hit@k."""
    codebleu_weights: tuple[float, float, float, float] = (0.25, 0.25, 0.25, 0.25)
    """Weights of n-gram, weighted n-gram, syntax and dataflow match."""
    pass_threshold: float = Field(default=0.5, ge=0, le=1)
    """A case's assertion score at or above this passes."""
    corpus_codebleu_max_cases: int = Field(default=300, ge=0)
    """Corpus-level CodeBLEU pools every case of a suite (about 2 s per 1,000 cases and system, redone
    whenever any case changes); suites larger than this report only the per-case mean."""


class ReportSettings(Model):
    """Settings of the summarize stage."""

    bootstrap_resamples: int = Field(default=2000, ge=100)
    """Resamples for every bootstrap interval."""
    seed: int = 0
    """Seed of every resampling: same inputs, same report."""
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    """Confidence level of every interval."""
    detect_difference: float | None = Field(default=None, gt=0)
    """Difference (in the metric's units) the release page's decision summary sizes "cases needed" for,
    for comparisons neither better nor worse; None: the comparison's observed difference."""


class Config(Model):
    """The whole evalkit.yaml."""

    release: Name
    """Version label of the system under test; one report per release (env EVALKIT_RELEASE overrides)."""
    title: str = "evalkit report"
    """Title shown on every page."""
    baseline: str | None = None
    """System every other system is compared with (paired tests); defaults to the first system."""
    systems: list[System]
    """Systems under test, in report order."""
    suites: list[str] | None = None
    """Suites to run (folder names under cases_dir); None runs every suite found."""
    cases_dir: str = "cases"
    """Folder of suites (relative to this file)."""
    work_dir: str = ".evalkit"
    """Artifacts, caches and doit's database (relative to this file)."""
    site_dir: str = "site"
    """Where the report site is written (relative to this file)."""
    templates_dir: str | None = None
    """Override folder for page templates (holding `site/`, e.g. a copy of the shipped one to edit); None uses
    the templates shipped in the evalkit package."""
    sandbox: SandboxSettings = SandboxSettings()
    """Sandbox settings (execute stage)."""
    judge: JudgeSettings = JudgeSettings()
    """LLM judge settings (grade stage); the API key comes from ANTHROPIC_API_KEY only."""
    metrics: MetricsSettings = MetricsSettings()
    """Score stage settings."""
    validation: ValidationSettings = ValidationSettings()
    """Case validation and case health settings (ablations per case)."""
    report: ReportSettings = ReportSettings()
    """Summarize stage settings."""
    canaries: bool | list[str] = False
    """Run evalkit's canary systems beside the real ones (`canary-empty`, `-unchanged`, `-truncated`,
    `-truncated-elided`, `-placeholder`, `-lines-deleted`: answers doing no real work, made from each case, free):
    true for every suite, or a list of suite names. The report shows them apart and raises the metric-validity
    alarm where one scores at or above gold or a real system on a suite's headline."""
    executor: str | dict[str, Any] = "local"
    """Where stage calls run (evalkit.executors): a registered executor's name (default ``local``, in-process),
    or a one-key mapping ``{NAME: SETTINGS}`` (a mapping of settings, or one value, e.g. an address)."""

    @field_validator("executor")
    @classmethod
    def _known_executor(cls, v: str | dict[str, Any]) -> str | dict[str, Any]:
        if isinstance(v, dict) and len(v) != 1:
            raise ValueError("expected one executor name, or a mapping of one executor name to its settings")
        name = v if isinstance(v, str) else next(iter(v))

        known = registry("executors").names()
        if name not in known:
            raise ValueError(f"unknown executor {name!r}; expected one of {', '.join(known)} "
                             "(entry points of group evalkit.executors)")
        return v

    # Set by load_config, not read from YAML.
    root: str = ""
    """Folder of the config file; every relative path resolves against it."""
    path: str = ""
    """The config file itself."""
    _left_out: list[Problem] = PrivateAttr(default_factory=list)

    @property
    def left_out(self) -> list[Problem]:
        """Systems left out of the run because a name of theirs breaks the name rule, each at file:line."""
        return self._left_out

    @model_validator(mode="after")
    def _check(self) -> "Config":
        if any(s.matrix for s in self.systems):
            self.systems = [x for s in self.systems for x in expand_matrix(s)]
        if self.canaries:
            self.systems = [*self.systems, *canary_systems(self.canaries, {s.name for s in self.systems})]
        names = [s.name for s in self.systems]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate system name(s): {', '.join(dupes)}")
        if not self.systems:
            raise ValueError("systems: at least one system is needed")
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline {self.baseline!r} is not one of the systems ({', '.join(names)})")
        return self

    def resolve(self, rel: str) -> Path:
        """A path from the config, resolved against the config's folder; a leading ``{evalkit}`` stands for
        the folder of the installed evalkit package (the demo's systems ship in it)."""
        if rel == PACKAGE_PLACEHOLDER or rel.startswith(PACKAGE_PLACEHOLDER + "/"):
            return PACKAGE_DIR / rel[len(PACKAGE_PLACEHOLDER):].lstrip("/")
        p = Path(rel)
        return p if p.is_absolute() else Path(self.root) / p

    @property
    def baseline_name(self) -> str:
        return self.baseline or self.systems[0].name

    @property
    def cases_path(self) -> Path:
        return self.resolve(self.cases_dir)

    @property
    def work_path(self) -> Path:
        return self.resolve(self.work_dir)

    @property
    def site_path(self) -> Path:
        return self.resolve(self.site_dir)

    @property
    def template_cache(self) -> Path:
        """Compiled templates (Jinja's bytecode cache): ``<work_dir>/cache/jinja``, or the folder
        ``$EVALKIT_TEMPLATE_CACHE`` names, which projects can share: an entry is keyed by the template's name and
        source (evalkit.report.site_env.ContentBytecodeCache), so a project only ever loads what its own templates
        compile to."""
        shared = os.environ.get(TEMPLATE_CACHE_ENV)
        return Path(shared).resolve() if shared else self.work_path / "cache" / "jinja"

    @property
    def executor_name(self) -> str:
        """The executor's registered name."""
        return self.executor if isinstance(self.executor, str) else next(iter(self.executor))

    @property
    def executor_settings(self) -> dict[str, Any]:
        """The executor's settings (a single value given as ``{"value": VALUE}``)."""
        if isinstance(self.executor, str):
            return {}
        value = next(iter(self.executor.values()))
        return dict(value) if isinstance(value, dict) else {} if value is None else {"value": value}

    def system(self, name: str) -> System:
        for s in self.systems:
            if s.name == name:
                return s
        raise KeyError(name)


S = TypeVar("S", bound=SystemBase)


def canary_systems(canaries: bool | list[str], taken: set[str]) -> list[CanarySystem]:
    """The canary systems `canaries:` adds (those whose name a listed system already has are left out)."""
    suites = None if canaries is True else list(canaries) if isinstance(canaries, list) else []
    return [CanarySystem(name=canary_name(v), adapter="canary", variant=v, suites=suites,  # type: ignore[arg-type]
                         description=f"canary: {v} (evalkit makes it from each case; it does no real work)")
            for v in CANARY_VARIANTS if canary_name(v) not in taken]


def _scenario_suffix(combo: dict[str, Any]) -> str:
    parts = []
    for key, value in combo.items():
        if value is True or value in ("on", "yes"):
            parts.append(key)
        elif value is False or value is None or value in ("off", "no"):
            continue
        else:
            parts.append(f"{key}-{value}")
    return "-".join(parts).replace("_", "-") or "baseline"


def expand_matrix(system: S) -> list[S]:
    """One system per combination of a `matrix` entry's settings, in product order."""

    if not system.matrix:
        return [system]
    settings: dict[str, Any] | None = getattr(system, "settings", None)  # CommandSystem's, PluginSystem's
    if settings is None:
        raise ValueError(f"system {system.name!r}: matrix needs an adapter with `settings` (command), "
                         f"not {getattr(system, 'adapter', None)!r}")  # every SystemBase subclass has one
    axes = list(system.matrix)
    combos = [dict(zip(axes, values)) for values in itertools.product(*(system.matrix[a] for a in axes))]
    if system.names is not None and len(system.names) != len(combos):
        raise ValueError(f"system {system.name!r}: names lists {len(system.names)} name(s) for "
                         f"{len(combos)} matrix combinations")
    out = []
    for i, combo in enumerate(combos):
        name = system.names[i] if system.names else f"{system.name}-{_scenario_suffix(combo)}"
        if not is_valid_name(name):
            raise ValueError(f"system {system.name!r}: expanded {name_problem(name, 'name')}; give `names`")
        out.append(system.model_copy(update={
            "name": name, "settings": {**settings, **combo}, "matrix": None, "names": None,
            "scenario_of": system.name}))
    return out


def config_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The config file: explicit argument, else $EVALKIT_CONFIG, else ./evalkit.yaml."""
    if explicit:
        return Path(explicit).resolve()
    env = os.environ.get("EVALKIT_CONFIG")
    return Path(env).resolve() if env else (Path.cwd() / "evalkit.yaml").resolve()


def name_problems(node: dict[str, Any], shown: str) -> list[tuple[int | None, Problem]]:
    """(index of the system or None for the release label, problem) for every name that breaks the
    name rule, each at its line (in plain words: pydantic would only quote the regular expression)."""

    out: list[tuple[int | None, Problem]] = []
    if isinstance(node.get("release"), str) and (why := release_problem(node["release"])):
        out.append((None, Problem(shown, line_of(node, ("release",)), why)))
    systems = node.get("systems")
    for i, raw in enumerate(systems if isinstance(systems, list) else []):
        if not isinstance(raw, dict):
            continue
        if isinstance(raw.get("name"), str) and (why := name_problem(raw["name"], "system name")):
            out.append((i, Problem(shown, line_of(node, ("systems", i, "name")), f"{why}{LEFT_OUT}")))
        names = raw.get("names")
        for j, name in enumerate(names if isinstance(names, list) else []):
            if isinstance(name, str) and (why := name_problem(name, f"systems[{i}].names[{j}]: system name")):
                out.append((i, Problem(shown, line_of(node, ("systems", i, "names", j)), f"{why}{LEFT_OUT}")))
        matrix = raw.get("matrix")
        if names is None and isinstance(raw.get("name"), str) and isinstance(matrix, dict) and matrix \
                and all(isinstance(v, list) and v for v in matrix.values()):
            for values in itertools.product(*matrix.values()):
                expanded = f"{raw['name']}-{_scenario_suffix(dict(zip(matrix, values)))}"
                if why := name_problem(expanded, "expanded system name"):
                    out.append((i, Problem(shown, line_of(node, ("systems", i, "matrix")),
                                           f"system {raw['name']!r}: matrix {why}; give `names`{LEFT_OUT}")))
                    break
    return out


LEFT_OUT = "; the system is left out of the run"


def _leave_out_systems(node: dict[str, Any], shown: str, bad: list[tuple[int | None, Problem]]) -> set[str]:
    """Give each system with a bad name a placeholder name (and matrix `names`) so the rest of the
    config validates as usual; return the placeholders, whose systems load_config then drops."""

    placeholders = set()
    originals = set()
    for i in sorted({i for i, _ in bad if i is not None}):
        raw = node["systems"][i]
        originals.add(raw.get("name"))
        ph = f"evalkit-left-out-{i}"
        placeholders.add(ph)
        raw["name"] = ph
        matrix = raw.get("matrix")
        if isinstance(raw.get("names"), list):
            raw["names"] = [f"{ph}-{j}" for j in range(len(raw["names"]))]
        elif isinstance(matrix, dict) and all(isinstance(v, list) and v for v in matrix.values()):
            n = 1
            for v in matrix.values():
                n *= len(v)
            raw["names"] = [f"{ph}-{j}" for j in range(n)]
    baseline = node.get("baseline")
    if isinstance(baseline, str) and baseline in originals:
        raise InputError([p for _, p in bad] + [Problem(shown, line_of(node, ("baseline",)), (
            f"baseline {baseline!r} is a system left out of the run (its name is not valid); expected one of the "
            "other systems"))])
    return placeholders


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read and validate evalkit.yaml; raise InputError naming file:line on any problem."""
    p = config_path(path)
    shown = str(p)
    if not p.exists():
        raise InputError(Problem(shown, None, "config file not found (set EVALKIT_CONFIG or create evalkit.yaml)"))
    node = load_yaml(p, shown)
    if not isinstance(node, dict):
        raise InputError(Problem(shown, 1, "expected a mapping with keys release, systems, ..."))
    bad_names = name_problems(node, shown)
    if any(i is None for i, _ in bad_names):  # the release label names the report's folder: nothing can run
        raise InputError([p for _, p in bad_names])
    placeholders = _leave_out_systems(node, shown, bad_names) if bad_names else set()
    try:
        cfg = validate(Config, node, shown)
    except InputError as exc:  # say the names first: the other problems may follow from them
        raise InputError([p for _, p in bad_names] + exc.problems) from None
    if placeholders:
        kept = [s for s in cfg.systems if s.name not in placeholders and s.scenario_of not in placeholders]
        if not kept:
            raise InputError([p for _, p in bad_names])
        cfg = cfg.model_copy(update={"systems": kept})
    release = os.environ.get("EVALKIT_RELEASE")
    if release:
        if (why := release_problem(release)) is not None:
            raise InputError(Problem("EVALKIT_RELEASE (or --release)", None, why))
        cfg = cfg.model_copy(update={"release": release})
    if os.environ.get("EVALKIT_CLUSTER"):  # `evalkit run --cluster ADDRESS`: stage calls on that Dask cluster
        cfg = cfg.model_copy(update={"executor": {"cluster": {"address": os.environ["EVALKIT_CLUSTER"]}}})
    cfg = cfg.model_copy(update={"root": str(p.parent), "path": str(p)})
    if cfg.judge.rubric:  # the judge rubric it names must load (a bad rubric file: its own file:line)

        if (problem := config_rubric_problem(cfg, node, shown)) is not None:
            raise problem
    cfg._left_out = [problem for _, problem in bad_names]

    confine_writes(cfg.work_path, cfg.site_path, cfg.template_cache)  # every later write must land below one of these
    return cfg
