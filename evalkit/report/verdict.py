"""What a paired comparison says, one vocabulary everywhere (tables, decision summary, console, report.json):

- **better** / **worse**: significant after Holm, in the metric's direction;
- **no detectable difference**: the test could have rejected at the level Holm held it to but did not; the
  minimum detectable difference at that level says how large a difference could have gone unseen;
- **not testable**: no test (too few pairs), or no outcome of these pairs could have been significant (too
  few cases changed outcome, or too few nonzero differences, for the exact test to reach the Holm level).

Never "no significant difference" where the test could not reject.
"""

from __future__ import annotations

from typing import Any, Callable

from evalkit.metrics.registry import METRICS, SCALE_BOUNDS, MetricInfo
from evalkit.power import Detectability, binary_detectability, score_detectability
from evalkit.stats import ALPHA, MeanEstimate, PairedComparison, Verdict, apply_holm

Call = Callable[..., Any]
"""A cached call: call(model, fn, *args, **kwargs) (evalkit.report.stats_cache.cached_call bound to a cache)."""


def _direct(model: type, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


def verdict(c: PairedComparison, info: MetricInfo | None = None) -> Verdict:
    """better / worse / no detectable difference / not testable for a comparison after apply_holm."""
    info = info if info is not None else METRICS.get(c.metric)
    d = c.difference.value
    if c.significant and info is not None and info.higher_is_better is not None and d:
        return "better" if (d > 0) == info.higher_is_better else "worse"
    if c.p_value is None or not c.testable:
        return "not testable"
    return "no detectable difference"


def level(c: PairedComparison) -> float:
    """The two-sided level the comparison was held to: Holm's, or ALPHA when it had no test."""
    return c.alpha_holm if c.alpha_holm is not None else ALPHA


def detectability(call: Call, c: PairedComparison, target: float | None = None,
                  source: str | None = None) -> Detectability:
    """Power figures of a comparison at the level Holm held it to (cached through ``call``)."""
    if c.kind == "binary":
        b, k = c.discordant or (0, 0)
        return call(Detectability, binary_detectability, c.n_pairs, b, k, target, source, alpha=level(c))
    return call(Detectability, score_detectability, c.n_pairs, c.sd_difference, target, source, alpha=level(c))


def untestable_reason(c: PairedComparison) -> str:
    """Why a comparison is not testable, in words (empty for a testable one)."""
    if c.p_value is None:
        return f"no test with {c.n_pairs} pair{'s' if c.n_pairs != 1 else ''}"
    if c.testable:
        return ""
    if c.kind == "binary":
        k = sum(c.discordant or (0, 0))
        what = ("no case changed outcome" if k == 0 else
                f"only {k} case{'s' if k != 1 else ''} changed outcome")
    else:
        same = c.difference.value == 0 and not c.sd_difference
        what = "every paired difference is 0" if same else "too few nonzero differences"
    family = c.holm_family or 1
    return (f"{what}: the smallest p these pairs allow is {c.p_min:.3g}, which cannot reach p < {ALPHA} after Holm over "
            f"{family} comparison{'s' if family != 1 else ''}" if c.p_min is not None and c.p_min < 1 else
            f"{what}: no outcome of these pairs could be significant")


def settle(group: list[PairedComparison], call: Call | None = None, family: int | None = None) -> list[PairedComparison]:
    """One Holm family (of ``family`` members fixed in advance when given: see apply_holm): apply_holm, then each
    comparison's verdict and, for no detectable difference, its minimum detectable difference at the level
    Holm held it to."""
    call = call or _direct
    out = []
    for c in apply_holm(group, family):
        v = verdict(c)
        mdd = detectability(call, c).mdd if v == "no detectable difference" else None
        out.append(c.model_copy(update={"verdict": v, "mdd": mdd, "difference": within_scale(c)}))
    return out


def within_scale(c: PairedComparison) -> MeanEstimate:
    """The paired difference's interval cut to what the metric's scale allows (+-1 on a 0-1 scale: a t bound of
    +120.9 points on a pass/fail rate from 6 cases cannot hold the difference, so it stops at +100)."""
    info = METRICS.get(c.metric)
    bounds = SCALE_BOUNDS.get(info.scale) if info is not None else None
    d = c.difference
    if bounds is None or d.low is None or d.high is None:
        return d
    span = bounds[1] - bounds[0]
    return d.model_copy(update={"low": max(d.low, -span), "high": min(d.high, span)})
