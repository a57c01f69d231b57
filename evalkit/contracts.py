"""The plug-in contracts: one ``Protocol`` per plug-in point, and the context and results they exchange.

A plug-in is any object of the right shape (structural typing: no base class to inherit), registered under
its point's entry-point group (evalkit.plugins). The points:

=====================  ==============================  ==============================================
point                  group / where                   contract
=====================  ==============================  ==============================================
suite kind             ``evalkit.kinds``               ``evalkit.kinds.base.Kind`` (a class to subclass)
kind scorer            ``Kind.scorers()``              `KindScorer`: ``(ScoreContext) -> ScoreResult``
metric                 ``evalkit.api.register_metric`` `MetricScorer`: ``(ScoreContext) -> MetricValue``
judge                  ``Kind.judge``                  `Judge`: ``(JudgeContext) -> JudgeResult``
assertion type         ``evalkit.assertions``          `Assertion`: ``(AssertionContext) -> AssertionOutcome``
adapter (a system)     ``evalkit.adapters``            `Adapter`
sandbox backend        ``evalkit.sandbox_backends``    `SandboxBackend`
model provider         ``evalkit.providers``           `ProviderClass` building a `Provider`
stage executor         ``evalkit.executors``           `ExecutorFactory` building an `Executor`
=====================  ==============================  ==============================================

Scorers, metrics, judges and assertions take ONE context object (the case, its reference, the answer, the
sandbox runs, the grades, the project's config: what the stage has) and return a typed result with an
explanation. The older positional forms still work and are called as before (``takes_context`` tells them
apart): a kind's judge ``(cfg, case, sample, main_file)``, a kind scorer ``(cfg, case, output, execution, grades) -> {metric: value}``, a metric scorer
``(case, output, execution, grades) -> value``, an assertion ``(spec, text, sample, language) -> (passed,
detail)``.

This module imports nothing of evalkit's at run time (its types are for checkers): any layer may use it,
and it never imports a kind.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, ClassVar, Literal, NamedTuple, Protocol, TypeAlias, Union, cast

if TYPE_CHECKING:

    from evalkit.artifacts import ExecutionArtifact, GradesArtifact, OutputArtifact, Sample
    from evalkit.casemodels import AssertionSpec
    from evalkit.cases import Case
    from pydantic import BaseModel

    from evalkit.config import Config, System
    from evalkit.executors.call import CallResult, StageCall
    from evalkit.llm.calls import LLMError, LLMRequest
    from evalkit.llm.providers.base import ProviderReply
    from evalkit.llm.settings import JudgeSettings
    from evalkit.outcomes import ChangesJudgeOutcome, JudgeOutcome, RubricOutcome
    from evalkit.sandbox.phase import Sandbox
    from evalkit.sandbox.script import ControlFiles
    from evalkit.sandbox.spec import TestRunSpec
    from evalkit.systems.base import RunContext

Metrics = dict[str, float | None]
"""Metric name (evalkit.metrics.registry) -> value of one (system, case); None: not applicable."""

JudgeResult: TypeAlias = "JudgeOutcome | ChangesJudgeOutcome | RubricOutcome | None"
"""What a judge returns: a file judge's, a changes judge's or a rubric's verdict (each with its explanation
and spend), None when the answer is not model-graded."""


# --- contexts ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScoreContext:
    """One system's answer to one case at the score stage: everything the earlier stages made of it."""

    config: Config
    """The project's evalkit.yaml, validated."""
    case: Case
    """The case (its kind's models applied to `inputs` and `reference`)."""
    output: OutputArtifact
    """The generate stage's artifact: the answer's samples."""
    execution: ExecutionArtifact | None
    """The execute stage's artifact (None: the kind executes nothing)."""
    grades: GradesArtifact
    """The grade stage's artifact: assertions, syntax, the judge's verdict."""

    @property
    def reference(self) -> BaseModel:
        """The case's reference, typed by the kind's model (``Kind.reference``; a free-form one without)."""
        return self.case.reference

    @property
    def sample(self) -> Sample:
        """The answer's first sample (the one most metrics score)."""
        return self.output.first


@dataclass(frozen=True)
class JudgeContext:
    """One answer at the grade stage, as a judge sees it."""

    config: Config
    """The project's evalkit.yaml (the judge's settings: ``config.judge``)."""
    case: Case
    """The case judged."""
    sample: Sample
    """The answer judged."""
    main_file: str | None
    """The file the case is about (``Kind.main_file``), None when none."""
    execution: ExecutionArtifact | None = None
    """The execute stage's artifact (None: the kind executes nothing)."""

    @property
    def reference(self) -> BaseModel:
        """The case's reference, typed by the kind's model (``Kind.reference``; a free-form one without)."""
        return self.case.reference


@dataclass(frozen=True)
class AssertionContext:
    """One assertion of a case's `assertions:` on one answer."""

    spec: AssertionSpec
    """The assertion as the case file writes it (type, value, file, weight...)."""
    text: str
    """What it looks at (``evalkit.graders.assertions.subject_text``): a named file, the main file, the answer."""
    sample: Sample
    """The whole answer (its files, patch, text)."""
    language: str
    """The case's language."""
    case: Case | None = None
    """The case (None only where an assertion runs without one, as in a unit test)."""
    config: Config | None = None
    """The project's config (None where there is no project, as in a unit test)."""
    execution: ExecutionArtifact | None = None
    """The execute stage's artifact, when the kind has one and it ran first."""

    @property
    def reference(self) -> BaseModel | None:
        """The case's reference (None without a case)."""
        return self.case.reference if self.case is not None else None


# --- results -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScoreResult:
    """What a kind scorer adds to one (system, case)'s scores."""

    values: Metrics
    """Metric name -> value (None: not applicable); a later scorer's value wins a shared name."""
    explanation: str = ""
    """Why, in a sentence (empty: the values say it): it explains every metric of `values` that `explanations`
    does not."""
    explanations: dict[str, str] = field(default_factory=dict)
    """Metric name -> why it has its value, in a sentence: for a scorer whose metrics each have their own reason
    (an entry, even an empty one, wins over `explanation`; names not in `values` are ignored)."""

    def explained(self) -> dict[str, str]:
        """Metric name -> its explanation, for the metrics of `values` that have one (scores.json's
        ``explanations``)."""
        out = {}
        for name in self.values:
            why = (self.explanations[name] if name in self.explanations else self.explanation).strip()
            if why:
                out[name] = why
        return out


@dataclass(frozen=True)
class MetricValue:
    """The value of one added metric on one (system, case)."""

    value: float | bool | None
    """The value (a bool counts as 0/1; None: not applicable)."""
    explanation: str = ""
    """Why, in a sentence."""


class AssertionOutcome(NamedTuple):
    """Whether an assertion held, and why; a ``(passed, explanation)`` tuple to callers of the older form."""

    passed: bool
    explanation: str


# --- plug-in points ------------------------------------------------------------------------------------

class KindScorer(Protocol):
    """A suite kind's scorer (``Kind.scorers``): the metrics it adds for one (system, case)."""

    def __call__(self, ctx: ScoreContext, /) -> ScoreResult | Metrics: ...


class MetricScorer(Protocol):
    """The scorer of a metric added with ``evalkit.api.register_metric``: its value on one (system, case)."""

    def __call__(self, ctx: ScoreContext, /) -> MetricValue | float | bool | None: ...


class Judge(Protocol):
    """A kind's model grading of one answer (``Kind.judge``): a verdict with its explanation, or None."""

    def __call__(self, ctx: JudgeContext, /) -> JudgeResult: ...


class Assertion(Protocol):
    """An assertion type, registered under its `type:` name in the ``evalkit.assertions`` group.

    Raising ``re.error``, ``ImportError``, ``AttributeError``, ``ValueError`` or ``TypeError`` records the
    assertion as failed with the error as its explanation."""

    def __call__(self, ctx: AssertionContext, /) -> AssertionOutcome | tuple[bool, str]: ...


class Adapter(Protocol):
    """Runs a system on a case (``evalkit.adapters``); returns one sample. Raises nothing for the system's own
    failures (the sample says them). ``system`` is the validated `systems:` entry."""

    def __call__(self, system: System, case: Case, sample_index: int, ctx: RunContext, /) -> Sample: ...


class SandboxBackend(Protocol):
    """Where a test run's phases execute (``evalkit.sandbox_backends``; evalkit.sandbox.backends.SandboxBackend
    is a base class to subclass)."""

    isolation: Literal["docker", "local"]
    auto_preference: int | None
    auto_reason: str
    uses_images: bool

    def available(self) -> bool: ...

    def image_id(self, spec: TestRunSpec) -> str | None: ...

    def open(self, spec: TestRunSpec, ctl: ControlFiles) -> Sandbox: ...


class Provider(Protocol):
    """One model API: a class following this, registered as an ``evalkit.providers`` entry point and built
    with the judge's settings (``cls(settings)``)."""

    name: ClassVar[str]
    """Name used in settings (``judge.provider``) and in key variables (``<NAME>_API_KEY[S]``)."""
    default_base_url: ClassVar[str]
    """Base URL when the settings give none."""
    cache_scoped: ClassVar[bool]
    """True when cache keys include the provider and base URL (every provider but the original anthropic,
    whose keys stay as they were so existing caches keep answering)."""
    endpoint: str
    """The base URL in use: the circuit and the rate limiter are per endpoint."""

    def send(self, request: LLMRequest, key: str) -> ProviderReply:
        """One attempt; raise the API's own errors (``classify`` maps them) or ``LLMError``."""
        ...

    def classify(self, exc: BaseException) -> tuple[LLMError, float | None] | None:
        """``exc`` as an ``LLMError`` and the seconds the server asked to wait; None when it is not the API's."""
        ...

    def count_tokens(self, request: LLMRequest, key: str) -> int | None:
        """Input tokens by the API's count endpoint, or None when the API has none."""
        ...


LegacyKindScorer: TypeAlias = (
    "Callable[[Config, Case, OutputArtifact, ExecutionArtifact | None, GradesArtifact], ScoreResult | Metrics]")
"""A kind scorer in the older positional form: ``(cfg, case, output, execution, grades) -> {metric: value}`` (or a
`ScoreResult`, to say why)."""

LegacyMetricScorer: TypeAlias = (
    "Callable[[Case, OutputArtifact, ExecutionArtifact | None, GradesArtifact], float | bool | None]")
"""An added metric's scorer in the older positional form: ``(case, output, execution, grades) -> value``."""

LegacyAssertion: TypeAlias = "Callable[[AssertionSpec, str, Sample, str], tuple[bool, str]]"
"""An assertion type in the older positional form: ``(spec, text, sample, language) -> (passed, detail)``."""

class ProviderClass(Protocol):
    """What an ``evalkit.providers`` entry point names: a `Provider` class, built with the judge's settings."""

    name: str
    default_base_url: str
    cache_scoped: bool

    def __call__(self, settings: JudgeSettings, /) -> Provider: ...


class Executor(Protocol):
    """Runs stage calls and returns their artifacts (evalkit.executors)."""

    def run(self, call: StageCall, /) -> CallResult:
        """The call's artifact (a validate call: its `Validation`; a health call: its `CaseHealth`), from `run_call`
        wherever it ran."""
        ...


ExecutorFactory: TypeAlias = "Callable[[Config, dict[str, object]], Executor]"
"""What an ``evalkit.executors`` entry point names: built with the project's config and the executor's settings."""

AnyKindScorer: TypeAlias = Union[KindScorer, "LegacyKindScorer"]
"""A kind scorer in either form."""

AnyMetricScorer: TypeAlias = Union[MetricScorer, "LegacyMetricScorer"]
"""An added metric's scorer in either form."""

AnyAssertion: TypeAlias = Union[Assertion, "LegacyAssertion"]
"""An assertion type in either form."""


# --- calling either form -------------------------------------------------------------------------------

def takes_context(fn: Callable[..., object]) -> bool:
    """Whether ``fn`` takes the one context argument (the contracts above) rather than the older positional
    form: it accepts exactly one positional argument."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: the older form
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    return len(required) == 1 or (len(required) == 0 and len(positional) == 1)


def score_with(fn: Callable[..., object], ctx: ScoreContext) -> ScoreResult:
    """A kind scorer's result on ``ctx``, whichever form it takes and returns."""
    got = fn(ctx) if takes_context(fn) else fn(ctx.config, ctx.case, ctx.output, ctx.execution, ctx.grades)
    if isinstance(got, ScoreResult):
        return got
    if not isinstance(got, dict):
        raise TypeError(f"scorer {getattr(fn, '__qualname__', fn)!r} returned {type(got).__name__}; expected a "
                        "ScoreResult or a dict of metric values")
    return ScoreResult(values=got)


def metric_with(fn: Callable[..., object], ctx: ScoreContext) -> MetricValue:
    """An added metric's value on ``ctx``, whichever form its scorer takes and returns."""
    got = fn(ctx) if takes_context(fn) else fn(ctx.case, ctx.output, ctx.execution, ctx.grades)
    if isinstance(got, MetricValue):
        return got
    if got is None or isinstance(got, (bool, int, float)):
        return MetricValue(value=got)
    raise TypeError(f"metric scorer {getattr(fn, '__qualname__', fn)!r} returned {type(got).__name__}; expected "
                    "a MetricValue, a number, a bool or None")


def judge_with(fn: Callable[..., object], ctx: JudgeContext) -> JudgeResult:
    """A kind's judge (``Kind.judge``) on ``ctx``, whichever form it takes (the older: ``(cfg, case, sample,
    main_file)``)."""
    got = fn(ctx) if takes_context(fn) else fn(ctx.config, ctx.case, ctx.sample, ctx.main_file)
    return cast("JudgeResult", got)  # the grade stage keeps only the outcome types it knows (evalkit.stages.grade)


def assert_with(fn: Callable[..., object], ctx: AssertionContext) -> AssertionOutcome:
    """An assertion type's outcome on ``ctx``, whichever form it takes."""
    got = fn(ctx) if takes_context(fn) else fn(ctx.spec, ctx.text, ctx.sample, ctx.language)
    if isinstance(got, tuple) and len(got) == 2:
        return AssertionOutcome(bool(got[0]), str(got[1]))
    raise TypeError(f"assertion {getattr(fn, '__qualname__', fn)!r} returned {type(got).__name__}; expected an "
                    "AssertionOutcome (passed, explanation)")
