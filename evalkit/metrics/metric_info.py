"""Metric metadata and its one registry (``METRICS``), below the rubric configuration that adds to it; the built-in
metrics are declared in evalkit.metrics.registry, which every reader imports."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Literal

from evalkit.contracts import AnyMetricScorer, MetricValue, ScoreContext, metric_with
from evalkit.contracts import Metrics as Metrics  # re-exported: the scorers import it from here
from evalkit.kind_registry import kind, known, names
from evalkit.models import Model



class MetricInfo(Model):
    """Metadata of one metric."""

    name: str
    """Key in scores.json and report.json."""
    display: str
    """Short column title."""
    description: str
    """One sentence shown as the column's explanation."""
    aggregate: Literal["rate", "mean", "sum"]
    """rate: 0/1 values, Wilson interval; mean: bootstrap BCa interval; sum: a total."""
    higher_is_better: bool | None = True
    """Direction, None when neither (counts, sizes)."""
    unit: str = ""
    """Unit shown after values ("s", "USD", "tokens", "" for fractions)."""
    scale: str = "0-1"
    """Range of a per-case value: "0-1", "1-5", "0-5", "count", "any"."""
    kinds: tuple[str, ...] = ()
    """Suite kinds the metric applies to (empty: all)."""
    headline: bool = False
    """Shown in the systems x metrics table and trend charts."""
    binary: bool = False
    """Paired comparisons use McNemar (binary) or Wilcoxon (scores)."""
    primary: int | None = None
    """Rank as a case's one-number summary in case tables (lowest present wins)."""
    judge_field: bool = False
    """A judge rubric's field or overall score: an output whose judge gave no verdict (judge_error, infra_error,
    budget) has no value of it and is counted as excluded (``judge error``), not as not applicable."""
    uncalibrated: str | None = None
    """Set in a report only: the judge field behind this metric agrees with people below
    judge.calibration.min_kappa (why, in a few words); marked on every page, never a suite's headline."""


METRICS: dict[str, MetricInfo] = {}
#: Metrics added from outside evalkit (evalkit.api.register_metric): name -> its metadata and scorer,
#: as JSON. Part of the score and summarize config slices: adding or changing one rescores.
ADDED: dict[str, str] = {}
#: Scorers of added metrics: ``(ScoreContext) -> MetricValue | value`` (evalkit.contracts.MetricScorer), or the
#: older ``(case, output, execution, grades) -> value`` (a bool counts as 0/1, None: not applicable).
ADDED_SCORERS: dict[str, AnyMetricScorer] = {}


def added_results(ctx: ScoreContext) -> dict[str, MetricValue]:
    """The added metrics whose kinds include the case's, each with its value and explanation (the score stage
    writes them beside its own)."""
    out: dict[str, MetricValue] = {}
    for name, fn in ADDED_SCORERS.items():
        info = METRICS.get(name)
        if info is not None and (not info.kinds or ctx.case.kind in info.kinds):
            out[name] = metric_with(fn, ctx)
    return out


def primary_metric(values: dict[str, float | None]) -> str | None:
    """The metric that best summarises one case's cell (e.g. resolved, then judge score)."""
    ranked = [(METRICS[m].primary, m) for m, v in values.items()
              if v is not None and m in METRICS and METRICS[m].primary is not None]
    return min(ranked)[1] if ranked else None


class LeaderboardMetrics(Mapping[str, tuple[str, ...]]):
    """Suite kind -> the metric its leaderboard ranks by, with fallbacks in order (the first one the suite has
    values of wins: e.g. a rag suite without a judge has no faithfulness, only similarity): each kind's
    ``Kind.leaderboard`` (evalkit.kinds), with a judge rubric's overall score ranked beside ``judge_mean``."""

    def __init__(self) -> None:
        self._beside: dict[str, list[str]] = {}

    def rank_beside(self, anchor: str, name: str) -> None:
        """``name`` ranks right after ``anchor`` wherever a kind ranks by ``anchor`` (a rubric's overall score)."""
        names = self._beside.setdefault(anchor, [])
        if name != anchor and name not in names:
            names.insert(0, name)  # the latest loaded rubric's first, as each is inserted right after the anchor

    def __getitem__(self, kind_name: str) -> tuple[str, ...]:
        if not known(kind_name):
            raise KeyError(kind_name)
        ranked: list[str] = []
        for name in kind(kind_name).leaderboard:
            ranked += [name, *(m for m in self._beside.get(name, ()) if m not in kind(kind_name).leaderboard)]
        return tuple(ranked)

    def __iter__(self) -> Iterator[str]:
        return iter(names())

    def __len__(self) -> int:
        return len(names())


LEADERBOARD_METRICS = LeaderboardMetrics()


def leaderboard_metric(kind: str, present: set[str] | dict[str, object]) -> str | None:
    """The metric a suite of ``kind`` is ranked by: the first of the kind's declared ones in ``present``
    (metrics with values), else the first primary metric present, else None."""
    for name in LEADERBOARD_METRICS.get(kind, ()):
        if name in present:
            return name
    return primary_metric({m: 1.0 for m in present})


SCALE_BOUNDS = {"0-1": (0.0, 1.0), "1-5": (1.0, 5.0)}
"""The range a value on this scale (MetricInfo.scale) lies in: a mean's interval is cut to it, a paired
difference's to plus or minus its width."""


def show_in_order(names: Sequence[str]) -> None:
    """Put the registered metrics among ``names`` first in ``METRICS``, in that order (the order of a suite's columns,
    the headline tables and report.json's metric_info); the others follow in the order they were registered."""
    first = [n for n in names if n in METRICS]
    ordered = {n: METRICS[n] for n in [*first, *(n for n in METRICS if n not in set(first))]}
    METRICS.clear()
    METRICS.update(ordered)


def metric(*, name: str, display: str, description: str, aggregate: Literal["rate", "mean", "sum"],
           higher_is_better: bool | None = True, unit: str = "", scale: str = "0-1", kinds: tuple[str, ...] = (),
           headline: bool = False, binary: bool = False, primary: int | None = None) -> MetricInfo:
    """Declare a metric (the fields of ``MetricInfo``, each explained there) and register it by ``name``.

    A kind's module calls it at import for the metrics its scorers write; a missing or misspelled argument is a
    TypeError naming it at the call (an outside kind's is then exit 2 naming its entry point)."""
    info = MetricInfo(name=name, display=display, description=description, aggregate=aggregate,
                      higher_is_better=higher_is_better, unit=unit, scale=scale, kinds=tuple(kinds), headline=headline,
                      binary=binary, primary=primary)
    METRICS[info.name] = info
    return info
