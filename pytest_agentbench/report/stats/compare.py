"""Two sessions' run outcomes (A = baseline, B = this one) -> the difference in pass rate, its interval, an exact test, a verdict.

Paired when both sides ran the same seeded instances (matched by instance id): Newcombe's paired
interval and McNemar's exact test; a run that ended without a result (no instance id) is an
unmatched pair, left out and counted, never a reason to drop the pairing. Independent otherwise:
Newcombe's hybrid score interval and Fisher's exact test. An incomplete run the agent caused
counts as not passed; the harness's are left out. The smallest detectable difference is computed
from the exact power of the test used (`power`); metric deltas compare passed runs only.
docs/statistics.md explains how to read all of it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_agentbench.report.stats.exact import fisher_exact_p, mcnemar_exact_p
from pytest_agentbench.report.stats.intervals import (
    DEFAULT_LEVEL,
    Interval,
    at_least,
    check_level,
    newcombe_interval,
    paired_newcombe_interval,
    suite_mean_newcombe,
    t_quantile,
)
from pytest_agentbench.report.stats.power import (
    DEFAULT_ALPHA,
    DEFAULT_POWER,
    check_probability,
    detectable_differences,
)
from pytest_agentbench.report.stats.repeats import METRICS, RunOutcome, summarize


def _check_probability(value: float, what: str) -> float:
    return check_probability(value, what)


def detectable_difference(
    baseline_rate: float, runs_a: int, runs_b: int, *, paired: bool = False,
    alpha: float = DEFAULT_ALPHA, power: float = DEFAULT_POWER,
) -> float | None:
    """The larger of the smallest drop and the smallest rise these runs detect with the given power (`power.detectable_differences`).

    Computed with the exact test the comparison uses, not a normal approximation (which claimed
    80% power where Fisher's test had about half). ``None`` when no difference in either
    direction is detected that often, or a side has no run.
    """
    found = [d for d in detectable_differences(baseline_rate, runs_a, runs_b, paired=paired, alpha=alpha, power=power) if d is not None]
    return max(found) if found else None


@dataclass(frozen=True)
class PairTable:
    """Paired instances by who passed (an agent-caused incomplete run counts as not passed).

    ``dropped`` pairs had a harness-caused incomplete run on a side; ``unmatched`` runs had no
    partner (a run that ended without a result carries no instance id). Both are left out.
    """

    both: int
    a_only: int
    b_only: int
    neither: int
    dropped: int
    unmatched: int = 0

    @property
    def pairs(self) -> int:
        """Pairs analysed (judged on both sides)."""
        return self.both + self.a_only + self.b_only + self.neither


@dataclass(frozen=True)
class Comparison:
    """A/B comparison of pass rates on the analysed runs (both sides judged; for pairs, complete pairs).

    ``difference`` is rate B minus rate A; ``metric_deltas`` are median B minus median A over each
    side's passed runs (``None`` where a side has no passed run with the metric). ``judged_*``
    count the agent's incomplete runs (as not passed), ``incomplete_*`` every incomplete run and
    ``incomplete_agent_*`` the agent's. ``detectable`` is the larger of ``detectable_drop`` and
    ``detectable_rise`` (each ``None`` when no difference that way is detected with ``power``).
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
    incomplete_agent_a: int = 0
    incomplete_agent_b: int = 0
    detectable_drop: float | None = None
    detectable_rise: float | None = None

    @property
    def rate_a(self) -> float | None:
        """Side A's pass rate on the analysed runs."""
        return self.passed_a / self.judged_a if self.judged_a else None

    @property
    def rate_b(self) -> float | None:
        """Side B's pass rate on the analysed runs."""
        return self.passed_b / self.judged_b if self.judged_b else None


def _pairing(a: Sequence[RunOutcome], b: Sequence[RunOutcome]) -> tuple[list[str], int] | None:
    """The instance ids both sides ran and the unmatched pairs, or None when the runs are not paired instances.

    Paired instances: every passed or failed run carries an instance id, ids are unique per
    side, some ids are on both sides, and an id on one side only is explained by a run without
    an id (one that ended before it wrote a result) on the other.
    """
    ids: list[set[str]] = []
    idless: list[int] = []
    for side in (a, b):
        present = [o.instance for o in side if o.instance is not None]
        if len(set(present)) != len(present) or any(o.instance is None and o.status != "incomplete" for o in side):
            return None
        ids.append(set(present))  # type: ignore[arg-type]
        idless.append(len(side) - len(present))
    common = ids[0] & ids[1]
    only_a, only_b = len(ids[0] - common), len(ids[1] - common)
    if not common or only_a > idless[1] or only_b > idless[0]:
        return None
    order = [o.instance for o in a if o.instance in common]
    return order, max(only_a + idless[0], only_b + idless[1])  # type: ignore[return-value]


def pairable(a: Sequence[RunOutcome], b: Sequence[RunOutcome]) -> bool:
    """Whether A and B ran the same seeded instances (runs without a result aside; see `_pairing`)."""
    return _pairing(a, b) is not None


def _pair_table(a: Sequence[RunOutcome], b: Sequence[RunOutcome]) -> PairTable:
    pairing = _pairing(a, b)
    if pairing is None:
        raise ValueError("paired comparison: the runs are not paired instances")
    common, unmatched = pairing
    by_id_a = {o.instance: o for o in a}
    by_id_b = {o.instance: o for o in b}
    cells = {"both": 0, "a_only": 0, "b_only": 0, "neither": 0, "dropped": 0}
    key = {(True, True): "both", (True, False): "a_only", (False, True): "b_only", (False, False): "neither"}
    for instance in common:
        run_a, run_b = by_id_a[instance], by_id_b[instance]
        if not (run_a.scored and run_b.scored):
            cells["dropped"] += 1
            continue
        cells[key[(run_a.status == "passed", run_b.status == "passed")]] += 1
    return PairTable(**cells, unmatched=unmatched)


def _metric_deltas(a: Sequence[RunOutcome], b: Sequence[RunOutcome]) -> dict[str, float | None]:
    """Median B minus median A over each side's passed runs: failed runs that did nothing look cheap."""
    deltas: dict[str, float | None] = {}
    for name in METRICS:
        summary_a = summarize([o.metrics.get(name) for o in a if o.status == "passed"])
        summary_b = summarize([o.metrics.get(name) for o in b if o.status == "passed"])
        deltas[name] = summary_b.median - summary_a.median if summary_a and summary_b else None
    return deltas


def _points(fraction: float) -> str:
    return f"{abs(fraction) * 100:.0f}"


def could_detect(drop: float | None, rise: float | None, power: float = DEFAULT_POWER) -> str:
    """``could detect about ±60 points with 80% power``, or per direction, or that no difference would be detected."""
    chance = f"with {power * 100:g}% power"
    if drop is None and rise is None:
        return f"no difference of any size would be detected {chance} at this N"
    if drop is not None and rise is not None:
        if _points(drop) == _points(rise):
            return f"could detect about ±{_points(drop)} points {chance}"
        return f"could detect a drop of about {_points(drop)} or a rise of about {_points(rise)} points {chance}"
    if drop is not None:
        return f"could detect a drop of about {_points(drop)} points {chance}; no rise from this baseline"
    return f"could detect a rise of about {_points(rise)} points {chance}; no drop from this baseline"


def verdict_sentence(
    difference: float | None,
    interval: Interval | None,
    p_value: float | None,
    detectable: tuple[float | None, float | None] | None,
    *,
    alpha: float = DEFAULT_ALPHA,
    power: float = DEFAULT_POWER,
    names: tuple[str, str] = ("A", "B"),
) -> str:
    """The plain sentence under a comparison; "no detectable difference at this N" whenever the interval spans zero.

    Args:
        difference: Rate B minus rate A (``None``: a side has no judged run).
        interval: The difference's interval.
        p_value: The exact test's two-sided p-value.
        detectable: The smallest detectable (drop, rise), for the "could detect about" clause
            (`power.detectable_differences`); ``None``: not sized.
        alpha: The significance level the p-value is held against.
        power: The power the detectable differences were sized for.
        names: How to call A and B.

    Returns:
        One of: a difference in a direction, "no detectable difference at this N (...)", a
        borderline sentence when the interval and the exact test disagree, or "nothing to compare".
    """
    name_a, name_b = names
    if difference is None or interval is None or p_value is None:
        return "nothing to compare: a side has no judged run"
    could = could_detect(*detectable, power) if detectable is not None else "no runs to size it"
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
    agent_a = sum(1 for o in a if o.agent_incomplete)
    agent_b = sum(1 for o in b if o.agent_incomplete)
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
        judged_a = sum(1 for o in a if o.scored)
        passed_b = sum(1 for o in b if o.status == "passed")
        judged_b = sum(1 for o in b if o.scored)
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
    drop = rise = None
    if judged_a and judged_b:
        # The baseline's true rate is taken as its rate with two passes and two failures added:
        # off 0 and 1, so a 10/10 baseline is not assumed perfect.
        drop, rise = detectable_differences((passed_a + 2) / (judged_a + 4), judged_a, judged_b,
                                            paired=use_pairs, alpha=alpha, power=power)
    sized = [d for d in (drop, rise) if d is not None]
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
        detectable=max(sized) if sized else None,
        alpha=float(alpha),
        power=float(power),
        metric_deltas=_metric_deltas(a, b),
        verdict=verdict_sentence(difference, interval, p_value, (drop, rise) if judged_a and judged_b else None,
                                 alpha=alpha, power=power, names=names),
        incomplete_agent_a=agent_a,
        incomplete_agent_b=agent_b,
        detectable_drop=drop,
        detectable_rise=rise,
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
    #: Suites compared on their own but left out of `overall` and the mean (harness demos), as the session line leaves them out.
    pooled_out: tuple[str, ...] = ()


def compare_sessions(
    a: Mapping[str, Sequence[RunOutcome]],
    b: Mapping[str, Sequence[RunOutcome]],
    *,
    paired: bool | None = None,
    level: float = DEFAULT_LEVEL,
    alpha: float = DEFAULT_ALPHA,
    power: float = DEFAULT_POWER,
    names: tuple[str, str] = ("A", "B"),
    pooled_out: Collection[str] = (),
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
        pooled_out: Suites compared on their own but not pooled into `overall` nor the mean
            difference (harness demos: the session's "all suites" line leaves them out too).

    Returns:
        The SessionComparison; suites run on one side only are listed, not compared.
    """
    common = [name for name in b if name in a]
    pooled_suites = [name for name in common if name not in pooled_out]
    options = {"level": level, "alpha": alpha, "power": power, "names": names}
    per_suite = tuple(compare(a[name], b[name], suite=name, paired=paired, **options) for name in common)

    def pooled(side: Mapping[str, Sequence[RunOutcome]]) -> list[RunOutcome]:
        # Instance ids are unique within a suite only; prefix the suite so pairs match within it.
        return [
            RunOutcome(o.status, o.metrics, None if o.instance is None else f"{name}\0{o.instance}", o.cause)
            for name in pooled_suites
            for o in side[name]
        ]

    overall = compare(pooled(a), pooled(b), suite=None, paired=paired, **options)
    measured = [c for c in per_suite if c.difference is not None and c.suite not in pooled_out]
    differences = [c.difference for c in measured]
    mean = math.fsum(differences) / len(differences) if differences else None
    interval = None
    if len(differences) >= 2:
        m = len(differences)
        spread = math.sqrt(math.fsum((d - mean) ** 2 for d in differences) / (m - 1))
        half = t_quantile(1 - (1 - level) / 2, m - 1) * spread / math.sqrt(m)
        # The floor is an interval for the same mean of per-suite differences (not the pooled
        # runs', which weighs suites by their run counts).
        floor = suite_mean_newcombe([c.rate_a for c in measured], [c.judged_a for c in measured],
                                    [c.rate_b for c in measured], [c.judged_b for c in measured], level)
        interval = at_least(Interval(max(-1.0, mean - half), min(1.0, mean + half), float(level), "clustered-t"), floor)
    return SessionComparison(
        suites=per_suite,
        overall=overall,
        only_a=tuple(name for name in a if name not in b),
        only_b=tuple(name for name in b if name not in a),
        mean_difference=mean,
        mean_difference_interval=interval,
        pooled_out=tuple(name for name in common if name in pooled_out),
    )
