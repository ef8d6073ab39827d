"""Two sessions' run outcomes (A = baseline, B = this one) -> the difference in pass rate, its interval, an exact test, a verdict.

Paired when both sides ran the same seeded instances (matched by instance id): Newcombe's paired
interval and McNemar's exact test. Independent otherwise: Newcombe's hybrid score interval and
Fisher's exact test. The smallest detectable difference uses a normal approximation around the
baseline rate (see detectable_difference); docs/statistics.md explains how to read all of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from pytest_agentbench.report.stats.exact import fisher_exact_p, mcnemar_exact_p
from pytest_agentbench.report.stats.intervals import (
    DEFAULT_LEVEL,
    Interval,
    at_least,
    check_level,
    newcombe_interval,
    paired_newcombe_interval,
    t_quantile,
)
from pytest_agentbench.report.stats.repeats import METRICS, RunOutcome, summarize

DEFAULT_ALPHA = 0.05
DEFAULT_POWER = 0.80


def _check_probability(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(f"{what}: expected a number between 0 and 1, got {value!r}")
    return float(value)


def _z_sum(alpha: float, power: float) -> float:
    """z(1 - alpha/2) + z(power): 1.96 + 0.84 = 2.80 at the defaults."""
    normal = NormalDist()
    return normal.inv_cdf(1 - _check_probability(alpha, "alpha") / 2) + normal.inv_cdf(_check_probability(power, "power"))


def detectable_difference(
    baseline_rate: float, runs_a: int, runs_b: int, *, alpha: float = DEFAULT_ALPHA, power: float = DEFAULT_POWER
) -> float | None:
    """The smallest difference in pass rate these run counts would detect (a two-sided test).

    Normal approximation with the variance at the baseline rate p on both sides:
    ``(z(1 - alpha/2) + z(power)) * sqrt(p (1 - p) (1/runs_a + 1/runs_b))``. The caller passes a p
    kept away from 0 and 1 (compare uses the baseline's rate with two passes and two failures
    added), because at p = 0 or 1 the approximation would claim any difference is detectable.

    Args:
        baseline_rate: p, strictly between 0 and 1.
        runs_a: Judged runs on side A.
        runs_b: Judged runs on side B.
        alpha: Two-sided significance level.
        power: Chance of detecting a true difference of the returned size.

    Returns:
        The difference as a fraction (0.3 = 30 points), at most 1.0; ``None`` when a side has no run.
    """
    p = _check_probability(baseline_rate, "baseline rate")
    z = _z_sum(alpha, power)
    if runs_a <= 0 or runs_b <= 0:
        return None
    return min(1.0, z * math.sqrt(p * (1 - p) * (1 / runs_a + 1 / runs_b)))


def runs_needed(
    baseline_rate: float, difference: float, *, alpha: float = DEFAULT_ALPHA, power: float = DEFAULT_POWER
) -> int:
    """Judged runs per side needed to detect ``difference`` from ``baseline_rate`` (detectable_difference inverted).

    ``ceil(2 (z(1 - alpha/2) + z(power))^2 p (1 - p) / difference^2)``: 99 per side for 20 points
    at p = 0.5, 80% power and alpha 0.05.
    """
    p = _check_probability(baseline_rate, "baseline rate")
    d = _check_probability(abs(difference), "difference")
    z = _z_sum(alpha, power)
    # The tolerance keeps an exact whole number (rounded up by a last-bit error) from becoming n + 1.
    return math.ceil(2 * z * z * p * (1 - p) / (d * d) - 1e-9)


@dataclass(frozen=True)
class PairTable:
    """Paired instances by who passed; ``dropped`` pairs had an incomplete run on a side and are left out."""

    both: int
    a_only: int
    b_only: int
    neither: int
    dropped: int

    @property
    def pairs(self) -> int:
        """Pairs analysed (judged on both sides)."""
        return self.both + self.a_only + self.b_only + self.neither


@dataclass(frozen=True)
class Comparison:
    """A/B comparison of pass rates on the analysed runs (both sides judged; for pairs, complete pairs).

    ``difference`` is rate B minus rate A; ``metric_deltas`` are median B minus median A over each
    side's judged runs (``None`` where a side lacks the metric).
    """

    suite: str | None
    design: Literal["paired", "independent"]
    passed_a: int
    judged_a: int
    incomplete_a: int
    passed_b: int
    judged_b: int
    incomplete_b: int
    pairs: PairTable | None
    difference: float | None
    interval: Interval | None
    test: Literal["mcnemar-exact", "fisher-exact"]
    p_value: float | None
    detectable: float | None
    alpha: float
    power: float
    metric_deltas: Mapping[str, float | None]
    verdict: str

    @property
    def rate_a(self) -> float | None:
        """Side A's pass rate on the analysed runs."""
        return self.passed_a / self.judged_a if self.judged_a else None

    @property
    def rate_b(self) -> float | None:
        """Side B's pass rate on the analysed runs."""
        return self.passed_b / self.judged_b if self.judged_b else None


def _instance_ids(outcomes: Sequence[RunOutcome]) -> list[str] | None:
    ids = [o.instance for o in outcomes]
    if any(i is None for i in ids) or len(set(ids)) != len(ids):
        return None
    return ids  # type: ignore[return-value]


def pairable(a: Sequence[RunOutcome], b: Sequence[RunOutcome]) -> bool:
    """Whether A and B ran the same seeded instances: every run has an id, unique per side, same sets."""
    ids_a, ids_b = _instance_ids(a), _instance_ids(b)
    return bool(ids_a) and ids_b is not None and set(ids_a) == set(ids_b)


def _pair_table(a: Sequence[RunOutcome], b: Sequence[RunOutcome]) -> PairTable:
    by_id = {o.instance: o for o in b}
    cells = {"both": 0, "a_only": 0, "b_only": 0, "neither": 0, "dropped": 0}
    for run_a in a:
        run_b = by_id[run_a.instance]
        if "incomplete" in (run_a.status, run_b.status):
            cells["dropped"] += 1
            continue
        key = {(True, True): "both", (True, False): "a_only", (False, True): "b_only", (False, False): "neither"}
        cells[key[(run_a.status == "passed", run_b.status == "passed")]] += 1
    return PairTable(**cells)


def _metric_deltas(a: Sequence[RunOutcome], b: Sequence[RunOutcome]) -> dict[str, float | None]:
    deltas: dict[str, float | None] = {}
    for name in METRICS:
        summary_a = summarize([o.metrics.get(name) for o in a if o.status != "incomplete"])
        summary_b = summarize([o.metrics.get(name) for o in b if o.status != "incomplete"])
        deltas[name] = summary_b.median - summary_a.median if summary_a and summary_b else None
    return deltas


def _points(fraction: float) -> str:
    return f"{abs(fraction) * 100:.0f}"


def verdict_sentence(
    difference: float | None,
    interval: Interval | None,
    p_value: float | None,
    detectable: float | None,
    *,
    alpha: float = DEFAULT_ALPHA,
    names: tuple[str, str] = ("A", "B"),
) -> str:
    """The plain sentence under a comparison; "no detectable difference at this N" whenever the interval spans zero.

    Args:
        difference: Rate B minus rate A (``None``: a side has no judged run).
        interval: The difference's interval.
        p_value: The exact test's two-sided p-value.
        detectable: The smallest detectable difference, for the "could detect about" clause.
        alpha: The significance level the p-value is held against.
        names: How to call A and B.

    Returns:
        One of: a difference in a direction, "no detectable difference at this N (...)", a
        borderline sentence when the interval and the exact test disagree, or "nothing to compare".
    """
    name_a, name_b = names
    if difference is None or interval is None or p_value is None:
        return "nothing to compare: a side has no judged run"
    could = f"could detect about ±{_points(detectable)} points" if detectable is not None else "no runs to size it"
    if interval.contains(0.0):
        text = f"no detectable difference at this N ({could})"
        if p_value < alpha:
            text += f"; borderline: the exact test's p = {p_value:.3f} is below {alpha:g}"
        return text
    if p_value >= alpha:
        # The score interval is approximate and the exact test conservative; near the edge they can
        # disagree, and then the claim "different" is not safe.
        return (
            f"borderline: the interval excludes zero but the exact test does not (p = {p_value:.3f}); "
            f"not a detectable difference at this N ({could})"
        )
    direction = "more" if difference > 0 else "less"
    return f"{name_b} passes {direction} often than {name_a}, by about {_points(difference)} points"


def compare(
    a: Sequence[RunOutcome],
    b: Sequence[RunOutcome],
    *,
    suite: str | None = None,
    paired: bool | None = None,
    level: float = DEFAULT_LEVEL,
    alpha: float = DEFAULT_ALPHA,
    power: float = DEFAULT_POWER,
    names: tuple[str, str] = ("A", "B"),
) -> Comparison:
    """Compare the pass rates of two sets of runs of the same suite.

    Args:
        a: Side A's runs (the baseline session), incomplete ones included.
        b: Side B's runs (this session).
        suite: The suite name, for display.
        paired: ``None`` pairs by instance id when ``pairable(a, b)``; ``True`` requires pairing;
            ``False`` forces the independent-samples analysis.
        level: Confidence level of the difference's interval.
        alpha: Significance level of the verdict and of the detectable difference.
        power: Power of the detectable difference.
        names: How the verdict names A and B.

    Returns:
        The Comparison.

    Raises:
        ValueError: When ``paired=True`` but the runs cannot be paired, or for a bad level, alpha or power.
    """
    check_level(level)
    _check_probability(alpha, "alpha")
    _check_probability(power, "power")
    can_pair = pairable(a, b)
    if paired and not can_pair:
        raise ValueError(
            "paired comparison: expected both sides to carry the same set of unique instance ids; "
            "run both sessions with the same --agentbench-seed and repeat count, or compare unpaired"
        )
    use_pairs = can_pair if paired is None else paired
    incomplete_a = sum(1 for o in a if o.status == "incomplete")
    incomplete_b = sum(1 for o in b if o.status == "incomplete")
    table: PairTable | None = None
    if use_pairs:
        table = _pair_table(a, b)
        n = table.pairs
        passed_a, judged_a = table.both + table.a_only, n
        passed_b, judged_b = table.both + table.b_only, n
        interval = paired_newcombe_interval(table.both, table.a_only, table.b_only, table.neither, level)
        p_value = mcnemar_exact_p(table.a_only, table.b_only) if n else None
    else:
        passed_a = sum(1 for o in a if o.status == "passed")
        judged_a = passed_a + sum(1 for o in a if o.status == "failed")
        passed_b = sum(1 for o in b if o.status == "passed")
        judged_b = passed_b + sum(1 for o in b if o.status == "failed")
        interval = newcombe_interval(passed_a, judged_a, passed_b, judged_b, level)
        p_value = (
            fisher_exact_p(passed_a, judged_a - passed_a, passed_b, judged_b - passed_b)
            if judged_a and judged_b
            else None
        )
    difference = None
    if judged_a and judged_b:
        # One division of exact integers: 2/10 - 7/10 is -0.5, not -0.49999999999999994.
        difference = (passed_b * judged_a - passed_a * judged_b) / (judged_a * judged_b)
    detectable = None
    if judged_a and judged_b:
        # Two passes and two failures added keep p off 0 and 1, where the approximation breaks down.
        detectable = detectable_difference((passed_a + 2) / (judged_a + 4), judged_a, judged_b, alpha=alpha, power=power)
    return Comparison(
        suite=suite,
        design="paired" if use_pairs else "independent",
        passed_a=passed_a,
        judged_a=judged_a,
        incomplete_a=incomplete_a,
        passed_b=passed_b,
        judged_b=judged_b,
        incomplete_b=incomplete_b,
        pairs=table,
        difference=difference,
        interval=interval,
        test="mcnemar-exact" if use_pairs else "fisher-exact",
        p_value=p_value,
        detectable=detectable,
        alpha=float(alpha),
        power=float(power),
        metric_deltas=_metric_deltas(a, b),
        verdict=verdict_sentence(difference, interval, p_value, detectable, alpha=alpha, names=names),
    )


@dataclass(frozen=True)
class SessionComparison:
    """Per-suite comparisons, the pooled overall one, and the suite-clustered mean difference.

    ``overall`` pools the runs of the suites both sides ran (paired only if every one of them is);
    pooling ignores that runs of one suite resemble each other, which for suites run equally often
    on both sides makes it conservative. ``mean_difference`` is the mean of the per-suite
    differences with a t interval clustered by suite (m - 1 degrees of freedom; ``None`` below two suites).
    """

    suites: tuple[Comparison, ...]
    overall: Comparison
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    mean_difference: float | None
    mean_difference_interval: Interval | None


def compare_sessions(
    a: Mapping[str, Sequence[RunOutcome]],
    b: Mapping[str, Sequence[RunOutcome]],
    *,
    paired: bool | None = None,
    level: float = DEFAULT_LEVEL,
    alpha: float = DEFAULT_ALPHA,
    power: float = DEFAULT_POWER,
    names: tuple[str, str] = ("A", "B"),
) -> SessionComparison:
    """Compare two sessions suite by suite and overall.

    Args:
        a: Suite name -> side A's runs.
        b: Suite name -> side B's runs.
        paired: As in compare, applied per suite and to the pooled runs.
        level: Confidence level.
        alpha: Significance level.
        power: Power of the detectable difference.
        names: How verdicts name A and B.

    Returns:
        The SessionComparison; suites run on one side only are listed, not compared.
    """
    common = [name for name in b if name in a]
    options = {"level": level, "alpha": alpha, "power": power, "names": names}
    per_suite = tuple(compare(a[name], b[name], suite=name, paired=paired, **options) for name in common)

    def pooled(side: Mapping[str, Sequence[RunOutcome]]) -> list[RunOutcome]:
        # Instance ids are unique within a suite only; prefix the suite so pairs match within it.
        return [
            RunOutcome(o.status, o.metrics, None if o.instance is None else f"{name}\0{o.instance}")
            for name in common
            for o in side[name]
        ]

    overall = compare(pooled(a), pooled(b), suite=None, paired=paired, **options)
    differences = [c.difference for c in per_suite if c.difference is not None]
    mean = math.fsum(differences) / len(differences) if differences else None
    interval = None
    if len(differences) >= 2:
        m = len(differences)
        spread = math.sqrt(math.fsum((d - mean) ** 2 for d in differences) / (m - 1))
        half = t_quantile(1 - (1 - level) / 2, m - 1) * spread / math.sqrt(m)
        interval = at_least(Interval(max(-1.0, mean - half), min(1.0, mean + half), float(level), "clustered-t"),
                            overall.interval)
    return SessionComparison(
        suites=per_suite,
        overall=overall,
        only_a=tuple(name for name in a if name not in b),
        only_b=tuple(name for name in b if name not in a),
        mean_difference=mean,
        mean_difference_interval=interval,
    )
