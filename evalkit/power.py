"""Power of the report's paired tests: the smallest difference a comparison of n cases could detect,
and how many cases would detect a given one, at the level the comparison was held to (Holm's, evalkit.stats.
PairedComparison.alpha_holm; ALPHA when there is no family).

- binary metrics (exact McNemar in the report): the exact test's power by enumeration (`mcnemar_exact_power`:
  the number of discordant pairs, then their split, with the test's own rejection region) with the discordant
  proportion observed; when no case changed outcome, with every changed case changing the same way (the least
  discordance a difference implies, stated in the note). The normal approximation (Connor 1987, power =
  Phi((|d| sqrt(n) - z_a sqrt(p_d)) / sqrt(p_d - d^2))) stays as `mcnemar_power` / `mcnemar_n`, the start of the
  exact search: at its own MDD the exact test has only 74-79% power;
- score metrics (Wilcoxon signed-rank in the report): the paired t-test's power (noncentral t, as
  statsmodels' TTestPower) on the SD of the paired differences, with n scaled by the Wilcoxon test's
  asymptotic relative efficiency 3/pi (Lehmann).

Both are floored by what the exact tests can reach at all: two-sided p < alpha needs at least
``exact_floor(alpha)`` cases changing the same way (6 at alpha 0.05: 2 * 0.5^6 = 0.031; 9 at 0.05 / 12), so
with fewer pairs no difference, however large, can be significant.

Like evalkit.stats, this never imports scipy.stats (only numpy and scipy.special, inside the functions);
tests/test_power.py checks the figures against statsmodels and a brute-force enumeration.
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
    """Two-sided significance level the figures are sized at: the level Holm held the comparison to."""
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


# ---- binary: the exact McNemar test the report runs, power by enumeration ---------------------------------

_THRESHOLDS: dict[float, list[int]] = {}


def mcnemar_thresholds(n: int, alpha: float = ALPHA) -> list[int]:
    """For D = 0..n discordant pairs, the largest k with the exact McNemar p (evalkit.stats.mcnemar_exact:
    min(1, 2 * Binom(D, 1/2).cdf(k))) below alpha, so that the test rejects iff min(b, c) <= k; -1 when no
    split of D rejects. Non-decreasing in D; kept per alpha for the life of the process."""
    from scipy.special import bdtr  # deferred: scipy (~0.3 s), only here

    ks = _THRESHOLDS.setdefault(alpha, [-1])
    k = ks[-1]
    for d in range(len(ks), n + 1):
        while 2 * (k + 1) < d and 2 * float(bdtr(k + 1, d, 0.5)) < alpha:
            k += 1
        ks.append(k)
    return ks[:n + 1]


def mcnemar_exact_power(n: int, p10: float, p01: float, alpha: float = ALPHA) -> float:
    """Power of the two-sided exact McNemar test at level alpha, by enumeration: n pairs, each discordant
    baseline-right (probability p10) or system-right (p01). D ~ Binom(n, p10 + p01) discordant pairs; given
    D, the system-right count c ~ Binom(D, p01 / (p10 + p01)); the test rejects iff min(b, c) <= k_D."""
    import numpy as np  # deferred: numpy, only for these statistics (a no-op run imports none)
    from scipy.special import bdtr, gammaln, xlog1py, xlogy  # deferred: scipy (~0.3 s), only here

    pd = p10 + p01
    if n <= 0 or pd <= 0:
        return 0.0
    if not (0 <= p10 and 0 <= p01 and pd <= 1 + 1e-12):
        raise ValueError(f"need p10, p01 >= 0 and p10 + p01 <= 1, got {p10!r}, {p01!r}")
    pd = min(pd, 1.0)
    ks = np.asarray(mcnemar_thresholds(n, alpha), dtype=np.int64)
    dn = np.arange(n + 1, dtype=np.int64)
    d = dn.astype(float)
    log_pmf = gammaln(n + 1) - gammaln(d + 1) - gammaln(n - d + 1) + xlogy(d, pd) + xlog1py(n - d, -pd)
    q = p01 / pd
    can = ks >= 0
    low_tail = np.where(can, bdtr(np.maximum(ks, 0), dn, q), 0.0)  # c <= k
    high_tail = np.where(can, 1.0 - bdtr(np.maximum(dn - ks - 1, 0), dn, q), 0.0)  # c >= D - k
    return float(np.clip(np.sum(np.exp(log_pmf) * (low_tail + high_tail)), 0.0, 1.0))


def _increasing_root(f, lo: float, hi: float) -> float | None:
    """Smallest x in (lo, hi] with f(x) >= 0 for a non-decreasing f; None when f(hi) < 0."""
    if f(hi) < 0:
        return None
    for _ in range(100):
        mid = (lo + hi) / 2
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-10:
            break
    return hi


def mcnemar_exact_mdd(n: int, p_disc: float | None, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """Smallest difference in rates the exact McNemar test detects with ``power`` at n pairs: with the
    discordant proportion ``p_disc`` when given, else (no case changed outcome) with every changed case
    changing the same way (discordance = the difference, the least a difference implies); None when no
    difference the discordance allows reaches that power."""
    if n <= 0:
        return None
    if p_disc:
        return _increasing_root(lambda d: mcnemar_exact_power(n, (p_disc - d) / 2, (p_disc + d) / 2, alpha) - power,
                                0.0, p_disc)
    return _increasing_root(lambda d: mcnemar_exact_power(n, 0.0, d, alpha) - power, 0.0, 1.0)


def mcnemar_exact_n(diff: float, p_disc: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Pairs for which the exact McNemar test reaches ``power`` for a difference ``diff`` at discordant
    proportion ``p_disc``: the normal approximation's n as a start, then the exact power searched by bisection
    (the exact power saw-tooths a little in n: the n found reaches the power, a neighbour may too)."""
    d = abs(diff)
    p10, p01 = (p_disc - d) / 2, (p_disc + d) / 2
    start = max(1, math.ceil(mcnemar_n(d, p_disc, alpha, power)))
    lo, hi = max(0, start // 2), start
    while mcnemar_exact_power(hi, p10, p01, alpha) < power:
        lo, hi = hi, hi * 2
        if hi > 1_000_000:
            raise ValueError(f"a difference of {diff!r} needs more than a million pairs")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mcnemar_exact_power(mid, p10, p01, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi


# ---- scores: paired t (noncentral t), Wilcoxon by its efficiency ----------------------------------------

def ttest_power(effect: float, nobs: float, alpha: float = ALPHA) -> float:
    """Power of the two-sided one-sample (paired) t-test: statsmodels' TTestPower().power(effect, nobs, alpha)."""
    from scipy.special import nctdtr, stdtrit  # deferred: scipy (~0.3 s), only here

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


_TTEST_EFFECTS: dict[tuple[float, float, float], float] = {}
"""(nobs, alpha, power) -> `ttest_effect` of them, computed in this process or remembered from an earlier one
(`remember_ttest_effects`, summarize's statistics cache): a score comparison whose SD changed (one edited case changes
a command system's wall_s) asks for the effect of the same number of pairs, and computing it imports scipy.special
(~0.2-0.3 s of CPU)."""


def ttest_effect(nobs: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Standardized effect (mean / SD of the differences) the paired t-test detects with ``power``:
    statsmodels' TTestPower().solve_power(nobs=..., alpha=..., power=...). The same number whether computed now or
    remembered."""
    key = (float(nobs), float(alpha), float(power))
    got = _TTEST_EFFECTS.get(key)
    if got is None:
        got = _TTEST_EFFECTS[key] = _solve_ttest_effect(nobs, alpha, power)
    return got


def ttest_effects() -> list[list[float]]:
    """Every `ttest_effect` this process knows, as [nobs, alpha, power, effect] rows (JSON keeps each float exactly)."""
    return [[*key, effect] for key, effect in sorted(_TTEST_EFFECTS.items())]


def remember_ttest_effects(rows: object) -> None:
    """Take rows written by `ttest_effects` under the same code and scipy (the caller checks: summarize's cache
    salt); anything malformed is left out (it is computed again when needed)."""
    if not isinstance(rows, list):
        return
    for row in rows:
        if isinstance(row, list) and len(row) == 4 and all(isinstance(v, float) for v in row):
            _TTEST_EFFECTS.setdefault((row[0], row[1], row[2]), row[3])


def _solve_ttest_effect(nobs: float, alpha: float, power: float) -> float:
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
    """Detectability of a paired binary comparison with discordant counts b, c out of n pairs, by the exact
    McNemar test's power (enumeration) at ``alpha`` (the level Holm held the comparison to)."""
    floor = exact_floor(alpha)
    method = (f"exact McNemar power by enumeration with the observed discordant proportion, power {power:.0%}, "
              f"two-sided alpha {alpha:.3g}; nothing below the exact test's floor ({floor} pairs changing one way)")
    base = {"kind": "binary", "n": n, "alpha": alpha, "power": power, "method": method, "floor": floor}
    p_disc = (b + c) / n if n else None
    notes = []
    reachable = n >= floor
    mdd = None
    if not reachable:
        notes.append(f"with {n} pair{'s' if n != 1 else ''} no difference can reach p < {alpha:.3g}: the exact test "
                     f"needs at least {floor} cases changing the same way")
    elif b + c == 0:
        mdd = mcnemar_exact_mdd(n, None, alpha, power)
        notes.append("no case changed outcome, so there is no discordance to size by: sized as if every case that "
                     "changed did so the same way (the least discordance a difference implies; with more discordance "
                     "the minimum detectable difference is larger)")
    else:
        mdd = mcnemar_exact_mdd(n, p_disc, alpha, power)
        if mdd is None:
            notes.append(f"at the observed discordance ({b + c} of {n} cases changed outcome) no difference "
                         f"reaches {power:.0%} power")
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
            n_req = mcnemar_exact_n(t, pd_used, alpha, power)
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
              f"Wilcoxon test's efficiency 3/pi; power {power:.0%}, two-sided alpha {alpha:.3g}; "
              f"floored by the exact signed-rank test ({floor} pairs)")
    base = {"kind": "score", "n": n, "alpha": alpha, "power": power, "method": method, "floor": floor}
    notes = []
    reachable = n >= floor
    mdd = None
    usable_sd = sd if sd is not None and math.isfinite(sd) and sd > 0 else None  # the SD a difference is sized by
    if not reachable:
        notes.append(f"with {n} pair{'s' if n != 1 else ''} no difference can reach p < {alpha:.3g}: the exact "
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
