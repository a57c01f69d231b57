"""Power of the report's paired tests: the smallest difference a comparison of n cases could detect,
and how many cases would detect a given one.

Two approximations, both stated in the result's ``method``:

- binary metrics (exact McNemar in the report): the normal approximation of McNemar's test with the
  discordant proportion observed (Connor 1987): power = Phi((|d| sqrt(n) - z_a sqrt(p_d)) / sqrt(p_d - d^2)),
  where d is the difference in rates and p_d the share of cases whose outcome differs;
- score metrics (Wilcoxon signed-rank in the report): the paired t-test's power (noncentral t, as
  statsmodels' TTestPower) on the SD of the paired differences, with n scaled by the Wilcoxon test's
  asymptotic relative efficiency 3/pi (Lehmann).

Both are floored by what the exact tests can reach at all: two-sided p < alpha needs at least
``exact_floor(alpha)`` cases changing the same way (6 at alpha 0.05: 2 * 0.5^6 = 0.031), so with
fewer pairs no difference, however large, can be significant.

Like evalkit.stats, this never imports scipy.stats (only scipy.special, and only for score metrics);
tests/test_power.py checks the figures against statsmodels.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Literal

from evalkit.models import Model

POWER = 0.8
"""Power the minimum detectable difference is sized for."""
ALPHA = 0.05
"""Two-sided significance level of a single test (before Holm)."""
WILCOXON_ARE = 3 / math.pi
"""Asymptotic relative efficiency of the Wilcoxon signed-rank test against the t-test (normal data)."""


class Detectability(Model):
    """What a paired comparison of this size could detect, and how many cases a given difference needs."""

    kind: Literal["binary", "score"]
    """Binary outcomes (McNemar) or scores (Wilcoxon)."""
    n: int
    """Pairs the comparison had."""
    alpha: float = ALPHA
    """Two-sided significance level of one test (before the Holm correction)."""
    power: float = POWER
    """Probability of detecting a true difference of the size given."""
    method: str
    """The approximation used, in words."""
    floor: int
    """Fewest pairs, all changing the same way, for which the exact test can give p < alpha."""
    reachable: bool
    """Whether any difference at all could reach p < alpha with this many pairs (n >= floor)."""
    spread: float | None
    """Discordant proportion observed (binary) or SD of the paired differences (score); None without one."""
    mdd: float | None
    """Minimum detectable difference in the metric's units (rate or score); None when not reachable or no spread."""
    target: float | None = None
    """Absolute difference the required n is sized for; None when there is none (observed 0, none configured)."""
    target_source: Literal["observed", "configured"] | None = None
    """Where the target came from: this comparison's difference or report.detect_difference."""
    n_required: int | None = None
    """Pairs that would detect the target with the power above; None without a target."""
    more_cases: int | None = None
    """n_required minus n (0 when n already suffices); None without a target."""
    note: str = ""
    """What was assumed, or why a figure is missing."""


def _z(p: float) -> float:
    return NormalDist().inv_cdf(p)


def _sentence(notes: list[str]) -> str:
    text = "; ".join(notes)
    return text[:1].upper() + text[1:]


def exact_floor(alpha: float = ALPHA) -> int:
    """Fewest pairs, all changing the same way, for which the exact two-sided test (McNemar exact, or
    the Wilcoxon signed-rank test's exact null) gives p < alpha: the smallest k with 2 * 0.5^k < alpha."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    k = 1
    while 2 * 0.5**k >= alpha:
        k += 1
    return k


# ---- binary: McNemar, normal approximation -----------------------------------------------------------

def mcnemar_power(diff: float, n: float, p_disc: float, alpha: float = ALPHA) -> float:
    """Power of the two-sided McNemar test (normal approximation) for a difference in rates ``diff``,
    n pairs and a discordant proportion ``p_disc`` (|diff| <= p_disc <= 1)."""
    d = abs(diff)
    if not 0 <= d <= p_disc <= 1:
        raise ValueError(f"need 0 <= |diff| <= p_disc <= 1, got diff={diff!r}, p_disc={p_disc!r}")
    if d == 0:
        return alpha  # no difference: the rejection rate is the level
    za = _z(1 - alpha / 2)
    var_alt = p_disc - d * d
    num = d * math.sqrt(n) - za * math.sqrt(p_disc)
    if var_alt <= 0:
        return 1.0 if num > 0 else 0.0
    return NormalDist().cdf(num / math.sqrt(var_alt))


def mcnemar_n(diff: float, p_disc: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Pairs for which the McNemar test (normal approximation) reaches ``power`` (not rounded)."""
    d = abs(diff)
    if not 0 < d <= p_disc <= 1:
        raise ValueError(f"need 0 < |diff| <= p_disc <= 1, got diff={diff!r}, p_disc={p_disc!r}")
    za, zb = _z(1 - alpha / 2), _z(power)
    return (za * math.sqrt(p_disc) + zb * math.sqrt(p_disc - d * d)) ** 2 / (d * d)


def mcnemar_mdd(n: float, p_disc: float, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """Smallest difference in rates the McNemar test (normal approximation) detects with ``power`` at
    n pairs and discordant proportion ``p_disc``; None when none can (the root exceeds p_disc, the
    largest difference that discordance allows, or there is no root)."""
    if n <= 0 or not 0 < p_disc <= 1:
        return None
    za, zb = _z(1 - alpha / 2), _z(power)
    # d sqrt(n) - za sqrt(p) = zb sqrt(p - d^2), squared: (n + zb^2) d^2 - 2 za sqrt(n p) d + (za^2 - zb^2) p = 0
    a = n + zb * zb
    b = -2 * za * math.sqrt(n * p_disc)
    c = (za * za - zb * zb) * p_disc
    disc = b * b - 4 * a * c
    if disc < 0:
        return None
    d = (-b + math.sqrt(disc)) / (2 * a)
    return d if d <= p_disc + 1e-12 else None


# ---- scores: paired t (noncentral t), Wilcoxon by its efficiency ----------------------------------------

def ttest_power(effect: float, nobs: float, alpha: float = ALPHA) -> float:
    """Power of the two-sided one-sample (paired) t-test: statsmodels' TTestPower().power(effect, nobs, alpha)."""
    from scipy.special import nctdtr, stdtrit

    df = nobs - 1
    if df <= 0:
        raise ValueError(f"need nobs > 1, got {nobs!r}")
    crit = float(stdtrit(df, 1 - alpha / 2))
    nc = effect * math.sqrt(nobs)
    return float((1 - nctdtr(df, nc, crit)) + nctdtr(df, nc, -crit))


def _bisect(f, lo: float, hi: float, tol: float = 1e-12) -> float:
    """Root of an increasing f on [lo, hi] (f(lo) < 0 <= f(hi))."""
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= tol * max(1.0, abs(hi)):
            break
    return (lo + hi) / 2


def ttest_effect(nobs: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Standardized effect (mean / SD of the differences) the paired t-test detects with ``power``:
    statsmodels' TTestPower().solve_power(nobs=..., alpha=..., power=...)."""
    hi = 1.0
    while ttest_power(hi, nobs, alpha) < power:
        hi *= 2
        if hi > 1e9:
            raise ValueError(f"no effect reaches power {power} with nobs={nobs}")
    return _bisect(lambda d: ttest_power(d, nobs, alpha) - power, 0.0, hi)


def ttest_nobs(effect: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Pairs for which the paired t-test detects a standardized ``effect`` with ``power`` (not rounded):
    statsmodels' TTestPower().solve_power(effect_size=..., alpha=..., power=...)."""
    e = abs(effect)
    if e == 0:
        raise ValueError("effect must not be 0")
    lo, hi = 1.0 + 1e-9, 4.0
    while ttest_power(e, hi, alpha) < power:
        hi *= 2
        if hi > 1e12:
            raise ValueError(f"effect {effect!r} needs more than 1e12 pairs")
    return _bisect(lambda n: ttest_power(e, n, alpha) - power, lo, hi)


# ---- what a report comparison could detect -------------------------------------------------------------

def binary_detectability(n: int, b: int, c: int, target: float | None = None,
                         target_source: Literal["observed", "configured"] | None = None,
                         alpha: float = ALPHA, power: float = POWER) -> Detectability:
    """Detectability of a paired binary comparison with discordant counts b, c out of n pairs."""
    floor = exact_floor(alpha)
    method = (f"McNemar normal approximation with the observed discordant proportion, power {power:.0%}, "
              f"two-sided alpha {alpha}; floored by the exact test ({floor} pairs changing one way)")
    base = {"kind": "binary", "n": n, "alpha": alpha, "power": power, "method": method, "floor": floor}
    p_disc = (b + c) / n if n else None
    notes = []
    reachable = n >= floor
    mdd = None
    if not reachable:
        notes.append(f"with {n} pair{'s' if n != 1 else ''} no difference can reach p < {alpha}: the exact test "
                     f"needs at least {floor} cases changing the same way")
    elif b + c == 0:
        mdd = floor / n
        notes.append(f"no case changed outcome, so there is no discordance to size by: the exact test's floor "
                     f"({floor} of {n} cases changing the same way) is given")
    else:
        approx = mcnemar_mdd(n, (b + c) / n, alpha, power)  # = p_disc: b + c > 0 pairs, so n > 0
        if approx is None:
            notes.append(f"at the observed discordance ({b + c} of {n} cases changed outcome) no difference "
                         f"reaches {power:.0%} power")
        else:
            mdd = max(approx, floor / n)
    n_req = more = None
    t = abs(target) if target else 0.0
    if t > 0:
        if t > 1:
            notes.append(f"a difference of {t:g} in a rate is impossible")
            t = 0.0
        else:
            pd_used = max(p_disc or 0.0, t)
            if pd_used > (p_disc or 0.0):
                notes.append(f"sized with the least discordance a difference of {t:.3g} implies ({pd_used:.3g})")
            n_req = max(math.ceil(mcnemar_n(t, pd_used, alpha, power) - 1e-9), math.ceil(floor / t - 1e-9))
            more = max(0, n_req - n)
    return Detectability(**base, reachable=reachable, spread=p_disc, mdd=mdd, target=t or None,
                         target_source=target_source if t else None, n_required=n_req, more_cases=more,
                         note=_sentence(notes))


def score_detectability(n: int, sd: float | None, target: float | None = None,
                        target_source: Literal["observed", "configured"] | None = None,
                        alpha: float = ALPHA, power: float = POWER) -> Detectability:
    """Detectability of a paired score comparison with n pairs whose differences have SD ``sd``."""
    floor = exact_floor(alpha)
    method = (f"paired t-test power (noncentral t) on the SD of the paired differences, n scaled by the "
              f"Wilcoxon test's efficiency 3/pi; power {power:.0%}, two-sided alpha {alpha}; "
              f"floored by the exact signed-rank test ({floor} pairs)")
    base = {"kind": "score", "n": n, "alpha": alpha, "power": power, "method": method, "floor": floor}
    notes = []
    reachable = n >= floor
    mdd = None
    usable_sd = sd if sd is not None and math.isfinite(sd) and sd > 0 else None  # the SD a difference is sized by
    if not reachable:
        notes.append(f"with {n} pair{'s' if n != 1 else ''} no difference can reach p < {alpha}: the exact "
                     f"signed-rank test needs at least {floor} pairs")
    elif usable_sd is None:
        notes.append("the paired differences do not vary (SD 0): there is no spread to size a difference by")
    else:
        mdd = ttest_effect(n * WILCOXON_ARE, alpha, power) * usable_sd
    n_req = more = None
    t = abs(target) if target else 0.0
    if t > 0 and usable_sd is not None:
        n_req = max(floor, math.ceil(ttest_nobs(t / usable_sd, alpha, power) / WILCOXON_ARE - 1e-9))
        more = max(0, n_req - n)
    elif t > 0:
        t = 0.0
    return Detectability(**base, reachable=reachable, spread=sd if usable_sd is not None or sd == 0 else None, mdd=mdd,
                         target=t or None, target_source=target_source if t else None, n_required=n_req,
                         more_cases=more, note=_sentence(notes))
