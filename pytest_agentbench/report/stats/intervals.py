"""Counts -> confidence intervals: Wilson for one rate, Newcombe for a difference, t and normal quantiles.

Everything here is pure standard-library arithmetic. The quantile functions exist so the package
needs no scipy at run time; tests cross-check them against scipy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

DEFAULT_LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval ``[low, high]`` at ``level``, with the method that made it."""

    low: float
    high: float
    level: float
    method: str

    def contains(self, value: float) -> bool:
        """Return whether ``value`` lies inside the interval (ends included)."""
        return self.low <= value <= self.high


#: The method of a suite-clustered interval widened to the suite-mean Wilson interval (see at_least).
FLOORED = "clustered-t, at least suite-mean Wilson"


def at_least(clustered: Interval, floor: Interval | None) -> Interval:
    """A suite-clustered interval, widened where needed to cover ``floor``, another interval for the same mean.

    The clustered t interval's width comes only from how much suites differ: when they agree
    (every suite 100%, or every difference +20 points) it is zero wide, although each suite's
    rate rests on a few runs. The floor (`suite_mean_wilson`, `suite_mean_newcombe`) is an
    interval for the same mean of per-suite rates from the runs' own binomial noise; the
    method says when it was used.
    """
    if floor is None or (clustered.low <= floor.low and clustered.high >= floor.high):
        return clustered
    return Interval(min(clustered.low, floor.low), max(clustered.high, floor.high), clustered.level, FLOORED)


def effective_runs(runs: Sequence[int]) -> float:
    """The runs an equal-weight mean of per-suite rates is worth: m^2 / sum(1/n_i) (n_i > 0).

    With a common rate p the mean of m suite rates has variance p(1 - p) * sum(1/n_i) / m^2,
    that of one rate over this many runs. 13 suites of 1 run are worth 13; nine suites of 2
    runs and one of 1000 are worth 22, not 1018: the big suite is a tenth of the mean.
    """
    if not runs or any(isinstance(n, bool) or not isinstance(n, int) or n <= 0 for n in runs):
        raise ValueError(f"effective runs: expected positive run counts, got {list(runs)!r}")
    return len(runs) ** 2 / math.fsum(1 / n for n in runs)


def _wilson_rate(rate: float, runs: float, level: float) -> tuple[float, float]:
    z = z_quantile(level)
    denominator = 1 + z * z / runs
    center = (rate + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(max(0.0, rate * (1 - rate)) / runs + z * z / (4 * runs * runs)) / denominator
    return (0.0 if rate <= 0 else max(0.0, center - half)), (1.0 if rate >= 1 else min(1.0, center + half))


def suite_mean_wilson(rates: Sequence[float], runs: Sequence[int], level: float = DEFAULT_LEVEL) -> Interval | None:
    """A Wilson interval for the mean of per-suite rates, over the suites' effective number of runs (`effective_runs`).

    This is an interval for the same quantity as the suite-clustered one (the equal-weight mean),
    from the binomial noise of each suite's rate rather than from the spread between suites.
    ``None`` without a suite.
    """
    if not rates:
        return None
    if len(rates) != len(runs):
        raise ValueError("suite-mean Wilson: expected one run count per rate")
    low, high = _wilson_rate(math.fsum(rates) / len(rates), effective_runs(runs), check_level(level))
    return Interval(low, high, float(level), "suite-mean-wilson")


def suite_mean_newcombe(
    rates_a: Sequence[float], runs_a: Sequence[int], rates_b: Sequence[float], runs_b: Sequence[int],
    level: float = DEFAULT_LEVEL,
) -> Interval | None:
    """Newcombe's hybrid score interval for mean(rates_b) - mean(rates_a), each side a suite-mean Wilson interval."""
    if not rates_a or not rates_b:
        return None
    mean_a, mean_b = math.fsum(rates_a) / len(rates_a), math.fsum(rates_b) / len(rates_b)
    low_a, high_a = _wilson_rate(mean_a, effective_runs(runs_a), check_level(level))
    low_b, high_b = _wilson_rate(mean_b, effective_runs(runs_b), level)
    d = mean_b - mean_a
    low = d - math.sqrt((mean_b - low_b) ** 2 + (high_a - mean_a) ** 2)
    high = d + math.sqrt((high_b - mean_b) ** 2 + (mean_a - low_a) ** 2)
    return Interval(max(-1.0, low), min(1.0, high), float(level), "suite-mean-newcombe")


def check_level(level: float) -> float:
    """Validate a confidence level and return it as a float.

    Args:
        level: The two-sided confidence level, such as 0.95.

    Returns:
        ``level`` as a float.

    Raises:
        ValueError: Unless ``level`` is a number strictly between 0 and 1.
    """
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"confidence level: expected a number between 0 and 1 (such as 0.95), got {level!r}")
    return float(level)


def check_counts(successes: int, trials: int, what: str = "count") -> None:
    """Raise ``ValueError`` unless ``0 <= successes <= trials`` are integers."""
    for name, value in (("successes", successes), ("trials", trials)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{what}: expected {name} to be a non-negative integer, got {value!r}")
    if successes > trials:
        raise ValueError(f"{what}: expected successes <= trials, got {successes} of {trials}")


def z_quantile(level: float) -> float:
    """The standard normal quantile for a two-sided ``level`` (1.959964 for 0.95)."""
    return NormalDist().inv_cdf(1 - (1 - check_level(level)) / 2)


def wilson_interval(successes: int, trials: int, level: float = DEFAULT_LEVEL) -> Interval | None:
    """Wilson score interval for a binomial proportion (R's ``prop.test(correct = FALSE)``).

    Args:
        successes: Passed runs.
        trials: Judged runs.
        level: Two-sided confidence level.

    Returns:
        The interval, exactly 0.0 at the low end when ``successes == 0`` and exactly 1.0 at the
        high end when ``successes == trials``; ``None`` when ``trials == 0``, because no runs say
        nothing about the rate and ``[0, 1]`` would look like a result.

    Raises:
        ValueError: For negative counts, successes above trials, or a level outside (0, 1).
    """
    check_counts(successes, trials, "Wilson interval")
    z = z_quantile(level)
    if trials == 0:
        return None
    n, p = trials, successes / trials
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At k = 0 and k = n the two terms cancel analytically; pin the ends so rounding cannot make
    # a 10/10 look like "up to 0.9999999999999998".
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == trials else min(1.0, center + half)
    return Interval(low, high, float(level), "wilson")


def newcombe_interval(
    successes_a: int, trials_a: int, successes_b: int, trials_b: int, level: float = DEFAULT_LEVEL
) -> Interval | None:
    """Newcombe's hybrid score interval for ``rate_b - rate_a`` from independent samples.

    Method 10 of Newcombe (1998), Statistics in Medicine 17:873-890: square and add the distances
    from each rate to the ends of its own Wilson interval.

    Args:
        successes_a: Passes on side A (the baseline).
        trials_a: Judged runs on side A.
        successes_b: Passes on side B.
        trials_b: Judged runs on side B.
        level: Two-sided confidence level.

    Returns:
        The interval for B minus A, or ``None`` when either side has no judged run.
    """
    check_counts(successes_a, trials_a, "side A")
    check_counts(successes_b, trials_b, "side B")
    wilson_a = wilson_interval(successes_a, trials_a, level)
    wilson_b = wilson_interval(successes_b, trials_b, level)
    if wilson_a is None or wilson_b is None:
        return None
    p_a, p_b = successes_a / trials_a, successes_b / trials_b
    d = p_b - p_a
    low = d - math.sqrt((p_b - wilson_b.low) ** 2 + (wilson_a.high - p_a) ** 2)
    high = d + math.sqrt((wilson_b.high - p_b) ** 2 + (p_a - wilson_a.low) ** 2)
    return Interval(max(-1.0, low), min(1.0, high), float(level), "newcombe-hybrid-score")


def paired_newcombe_interval(
    both: int, a_only: int, b_only: int, neither: int, level: float = DEFAULT_LEVEL
) -> Interval | None:
    """Newcombe's square-and-add interval for ``rate_b - rate_a`` from paired runs.

    Method 10 of Newcombe (1998), Statistics in Medicine 17:2635-2650: the independent-samples
    recipe with the correlation between the two rates subtracted, estimated from the 2x2 table
    with Newcombe's continuity correction (a positive ``ad - bc`` is reduced by ``n/2``, not below 0).

    Args:
        both: Instances both sides passed.
        a_only: Instances only A passed.
        b_only: Instances only B passed.
        neither: Instances neither side passed.
        level: Two-sided confidence level.

    Returns:
        The interval for B minus A, or ``None`` when there is no pair.
    """
    cells = (both, a_only, b_only, neither)
    if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in cells):
        raise ValueError(f"paired table: expected four non-negative integers, got {cells!r}")
    n = sum(cells)
    wilson_a = wilson_interval(both + a_only, n, level)
    wilson_b = wilson_interval(both + b_only, n, level)
    if wilson_a is None or wilson_b is None:
        return None
    p_a, p_b = (both + a_only) / n, (both + b_only) / n
    margins = (both + a_only) * (b_only + neither) * (both + b_only) * (a_only + neither)
    phi = 0.0
    if margins > 0:
        cross = both * neither - a_only * b_only
        if cross > n / 2:
            phi = (cross - n / 2) / math.sqrt(margins)
        elif cross < 0:
            phi = cross / math.sqrt(margins)
    d = p_b - p_a
    down_b, up_a = p_b - wilson_b.low, wilson_a.high - p_a
    up_b, down_a = wilson_b.high - p_b, p_a - wilson_a.low
    # max(0, ...) guards the root against a rounding-negative radicand when phi is near 1.
    low = d - math.sqrt(max(0.0, down_b**2 + up_a**2 - 2 * phi * down_b * up_a))
    high = d + math.sqrt(max(0.0, up_b**2 + down_a**2 - 2 * phi * up_b * down_a))
    return Interval(max(-1.0, low), min(1.0, high), float(level), "newcombe-paired")


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz, as in Numerical Recipes 6.4)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-16:
            return result
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}")  # pragma: no cover


def regularized_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    # The continued fraction converges fast only on its own side of the mean; use symmetry otherwise.
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom, for t >= 0."""
    return 0.5 * regularized_beta(df / 2, 0.5, df / (df + t * t))


def _t_central(t: float, df: float) -> float:
    """P(0 < T < t) for t >= 0: accurate near 0, where ``0.5 - t_upper_tail`` would cancel."""
    return 0.5 * regularized_beta(0.5, df / 2, t * t / (df + t * t))


def t_quantile(probability: float, df: float) -> float:
    """The ``probability`` quantile of Student's t with ``df`` degrees of freedom (scipy's ``t.ppf``).

    Args:
        probability: Strictly between 0 and 1, e.g. 0.975 for a two-sided 95% interval.
        df: Degrees of freedom, > 0.

    Returns:
        The quantile, found by bisection to about 1e-15 relative precision.

    Raises:
        ValueError: For a probability outside (0, 1) or ``df <= 0``.
    """
    if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not 0 < probability < 1:
        raise ValueError(f"t quantile: expected a probability between 0 and 1, got {probability!r}")
    if isinstance(df, bool) or not isinstance(df, (int, float)) or not df > 0 or math.isinf(df):
        raise ValueError(f"t quantile: expected positive finite degrees of freedom, got {df!r}")
    if probability == 0.5:
        return 0.0
    # Bisect on whichever probability is small, so no digits are lost subtracting from 1 or 0.5:
    # the upper tail for the usual 0.975, the central part for quantiles near the median.
    distance = abs(probability - 0.5)
    if distance < 0.25:
        target, measure, increasing = distance, _t_central, True
    else:
        target, measure, increasing = 0.5 - distance, t_upper_tail, False

    def below(t: float) -> bool:
        """Whether the quantile lies above ``t``."""
        value = measure(t, df)
        return value < target if increasing else value > target

    low, high = 0.0, 1.0
    while below(high):
        low, high = high, high * 2
    for _ in range(2000):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if below(middle):
            low = middle
        else:
            high = middle
    value = (low + high) / 2
    return value if probability > 0.5 else -value
