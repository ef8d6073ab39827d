"""Run counts and a baseline rate -> the exact power of the comparison's own test, the smallest detectable difference, the runs needed.

The power is that of the exact test the comparison reports, computed exactly (no normal
approximation up to 200 runs a side): for independent runs, the chance that Fisher's exact test gives p < alpha when
side A passes at rate p_a and side B at p_b, summed over every pair of outcomes; for paired runs,
the chance that McNemar's exact test gives p < alpha when the two runs of a pair pass
independently at p_a and p_b (instances of unequal difficulty make the sides agree more, which
only helps McNemar, so this is the conservative case). Standard library only; tests check it
against a seeded simulation of `compare` itself.
"""

from __future__ import annotations

import bisect
import math
from functools import lru_cache

DEFAULT_ALPHA = 0.05
DEFAULT_POWER = 0.80
# Differences are searched to this precision (a tenth of a point); the text shows whole points.
_PRECISION = 0.001
# Above this many outcome pairs (200 runs a side) Fisher's power is computed by the normal
# approximation with Yates' continuity correction, which at that size is within a point of it.
EXACT_LIMIT = 40_000
# Above this many pairs McNemar's power is computed by the normal approximation (Connor 1987).
PAIRED_EXACT_LIMIT = 200
# scipy's tie tolerance, as exact integers (see exact.fisher_exact_p).
_TIE_SCALE = 10**14


def check_probability(value: float, what: str) -> float:
    """Validate a number strictly between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(f"{what}: expected a number between 0 and 1, got {value!r}")
    return float(value)


def _check_runs(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what}: expected a non-negative integer, got {value!r}")


def binomial_pmf(n: int, p: float) -> list[float]:
    """P(X = x) for x = 0..n, X ~ Binomial(n, p); computed in logs so large n does not overflow."""
    if p <= 0.0:
        return [1.0] + [0.0] * n
    if p >= 1.0:
        return [0.0] * n + [1.0]
    log_p, log_q = math.log(p), math.log1p(-p)
    front = math.lgamma(n + 1)
    return [math.exp(front - math.lgamma(x + 1) - math.lgamma(n - x + 1) + x * log_p + (n - x) * log_q) for x in range(n + 1)]


@lru_cache(maxsize=256)
def fisher_rejections(runs_a: int, runs_b: int, alpha: float) -> tuple[tuple[int, int], ...]:
    """Every outcome (passes on A, passes on B) for which Fisher's exact test (as `exact.fisher_exact_p`) gives p < alpha.

    For each total of passes the tables form one hypergeometric family; their p-values come
    from one sort of its weights, with the same exact-integer tie rule as `fisher_exact_p`.
    """
    comb_a = [math.comb(runs_a, x) for x in range(runs_a + 1)]
    comb_b = [math.comb(runs_b, y) for y in range(runs_b + 1)]
    total = runs_a + runs_b
    region: list[tuple[int, int]] = []
    for passes in range(1, total):
        low, high = max(0, passes - runs_b), min(runs_a, passes)
        if runs_a == 0 or runs_b == 0:
            break
        weights = [comb_a[x] * comb_b[passes - x] for x in range(low, high + 1)]
        ordered = sorted(w * _TIE_SCALE for w in weights)
        prefix = [0]
        for scaled in ordered:
            prefix.append(prefix[-1] + scaled // _TIE_SCALE)
        denominator = math.comb(total, passes)
        for offset, weight in enumerate(weights):
            count = bisect.bisect_right(ordered, weight * (_TIE_SCALE + 1))
            if min(1.0, prefix[count] / denominator) < alpha:
                x = low + offset
                region.append((x, passes - x))
    return tuple(region)


@lru_cache(maxsize=256)
def mcnemar_rejections(pairs: int, alpha: float) -> tuple[tuple[int, int], ...]:
    """Every (discordant pairs, of them B-only) for which McNemar's exact test (as `exact.mcnemar_exact_p`) gives p < alpha."""
    region: list[tuple[int, int]] = []
    for discordant in range(1, pairs + 1):
        tail = 0
        whole = 2**discordant
        for smaller in range((discordant // 2) + 1):
            tail += math.comb(discordant, smaller)
            if min(1.0, 2 * tail / whole) >= alpha:
                break
            region += [(discordant, smaller), (discordant, discordant - smaller)]
    return tuple(region)


def exact_power(
    rate_a: float, rate_b: float, runs_a: int, runs_b: int, *, paired: bool = False, alpha: float = DEFAULT_ALPHA
) -> float:
    """The chance the comparison's exact test finds a difference (p < alpha) when the true rates are rate_a and rate_b.

    Args:
        rate_a: Side A's true pass rate, 0 to 1.
        rate_b: Side B's true pass rate, 0 to 1.
        runs_a: Judged runs on side A (for paired runs: the pairs).
        runs_b: Judged runs on side B (ignored when paired: both sides have runs_a).
        paired: McNemar's test on runs_a pairs whose two runs pass independently; else Fisher's.
        alpha: Two-sided significance level.
    """
    check_probability(alpha, "alpha")
    _check_runs(runs_a, "runs on side A")
    _check_runs(runs_b, "runs on side B")
    for rate, name in ((rate_a, "rate A"), (rate_b, "rate B")):
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ValueError(f"power: expected {name} between 0 and 1, got {rate!r}")
    if paired:
        only_a, only_b = rate_a * (1 - rate_b), rate_b * (1 - rate_a)
        discordant = only_a + only_b
        if discordant == 0:
            return 0.0
        if runs_a > PAIRED_EXACT_LIMIT:
            return _approximate_mcnemar_power(only_a, only_b, runs_a, alpha)
        pmf_d = binomial_pmf(runs_a, discordant)
        split = {d: binomial_pmf(d, only_b / discordant) for d in range(runs_a + 1)}
        return math.fsum(pmf_d[d] * split[d][b] for d, b in mcnemar_rejections(runs_a, alpha))
    if runs_a * runs_b > EXACT_LIMIT:
        return _approximate_fisher_power(rate_a, rate_b, runs_a, runs_b, alpha)
    pmf_a, pmf_b = binomial_pmf(runs_a, rate_a), binomial_pmf(runs_b, rate_b)
    return math.fsum(pmf_a[x] * pmf_b[y] for x, y in fisher_rejections(runs_a, runs_b, alpha))


def _smallest(rate: float, runs_a: int, runs_b: int, sign: int, paired: bool, alpha: float, power: float) -> float | None:
    """The smallest difference in one direction (sign -1: B lower) detected with the given power; None if none is."""
    room = rate if sign < 0 else 1 - rate
    if room <= 0 or exact_power(rate, rate + sign * room, runs_a, runs_b, paired=paired, alpha=alpha) < power:
        return None
    low, high = 0.0, room
    while high - low > _PRECISION:
        middle = (low + high) / 2
        if exact_power(rate, rate + sign * middle, runs_a, runs_b, paired=paired, alpha=alpha) >= power:
            high = middle
        else:
            low = middle
    return high


def detectable_differences(
    baseline_rate: float, runs_a: int, runs_b: int, *, paired: bool = False,
    alpha: float = DEFAULT_ALPHA, power: float = DEFAULT_POWER,
) -> tuple[float | None, float | None]:
    """The smallest drop and the smallest rise from the baseline rate that these runs detect with the given power.

    Each is the smallest d (to a tenth of a point) such that the exact test (see exact_power)
    rejects with probability >= power when A's true rate is baseline_rate and B's is
    baseline_rate -/+ d. A direction is None when even the largest possible difference (B at 0%
    or at 100%) is not detected that often: from a 10/10 baseline no rise can be shown.

    Returns:
        (drop, rise) as fractions; (None, None) when a side has no run.
    """
    p = check_probability(baseline_rate, "baseline rate")
    check_probability(alpha, "alpha")
    check_probability(power, "power")
    _check_runs(runs_a, "runs on side A")
    _check_runs(runs_b, "runs on side B")
    if runs_a <= 0 or runs_b <= 0:
        return None, None
    return (_smallest(p, runs_a, runs_b, -1, paired, alpha, power), _smallest(p, runs_a, runs_b, +1, paired, alpha, power))


def runs_needed(
    baseline_rate: float, difference: float, *, paired: bool = False,
    alpha: float = DEFAULT_ALPHA, power: float = DEFAULT_POWER,
) -> int:
    """Judged runs per side for the exact test to detect B at baseline_rate + difference with the given power.

    The exact test's power does not grow smoothly with n (it zigzags by a point or two), so this
    is the smallest n found by bisection above the normal approximation's n, where every n
    tried from it on had the power: 82 per side for 80% -> 60% (the normal formula says 63,
    where Fisher's power is 0.64).
    """
    p = check_probability(baseline_rate, "baseline rate")
    if isinstance(difference, bool) or not isinstance(difference, (int, float)) or difference == 0 or not 0 <= p + difference <= 1:
        raise ValueError(f"runs needed: expected a non-zero difference keeping the rate within 0 to 1, got {difference!r} from {p}")
    check_probability(alpha, "alpha")
    check_probability(power, "power")
    target = p + difference

    def enough(n: int) -> bool:
        return exact_power(p, target, n, n, paired=paired, alpha=alpha) >= power

    z = _normal_z(alpha) + _normal_z(2 * (1 - power))
    low = max(1, math.floor(2 * z * z * p * (1 - p) / (difference * difference)) - 1)
    while enough(low) and low > 1:
        low = max(1, low // 2)
    high = max(low + 1, math.ceil(low * 1.25))
    while not enough(high):
        low, high = high, math.ceil(high * 1.25) + 1
        if high > 100_000:
            raise ValueError(f"runs needed: more than 100000 runs per side for {difference:+g} from {p}")
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    return high


def _approximate_fisher_power(rate_a: float, rate_b: float, runs_a: int, runs_b: int, alpha: float) -> float:
    """Fisher's power for large samples: the continuity-corrected normal test (Fleiss, Levin and Paik 2003, 4.2)."""
    from statistics import NormalDist

    normal = NormalDist()
    pooled = (runs_a * rate_a + runs_b * rate_b) / (runs_a + runs_b)
    null_sd = math.sqrt(pooled * (1 - pooled) * (1 / runs_a + 1 / runs_b))
    sd = math.sqrt(rate_a * (1 - rate_a) / runs_a + rate_b * (1 - rate_b) / runs_b)
    if sd == 0:
        return 1.0 if rate_a != rate_b else 0.0
    shift = abs(rate_b - rate_a) - (1 / runs_a + 1 / runs_b) / 2
    return normal.cdf((shift - _normal_z(alpha) * null_sd) / sd)


def _approximate_mcnemar_power(only_a: float, only_b: float, pairs: int, alpha: float) -> float:
    """McNemar's power for many pairs: Connor's (1987) normal approximation with a continuity correction of one pair.

    psi is the discordant probability, delta = only_b - only_a; at 150-200 pairs it is within
    about 1.5 points of the exact power, and below it.
    """
    from statistics import NormalDist

    psi, delta = only_a + only_b, only_b - only_a
    spread = math.sqrt(max(pairs * (psi - delta * delta), 1e-300))
    return NormalDist().cdf((pairs * abs(delta) - 1 - _normal_z(alpha) * math.sqrt(pairs * psi)) / spread)


def _normal_z(alpha: float) -> float:
    """z(1 - alpha/2)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - alpha / 2)
