"""Repeated run outcomes -> per-suite statistics (rate, Wilson interval, pass@k, pass^k, medians) and the session line.

A run is ``passed``, ``failed`` or ``incomplete``, and an incomplete run's cause is the agent's
(it timed out, hit its budget or turn cap, crashed, gave no result, or claimed a fault the
harness's records do not confirm) or the harness's (proven by its own records: device lost, MCP
server never started, model host unreachable, sealed inputs changed; also any run without a
recorded cause; `audit/causes.py`). The rate counts the agent's incomplete runs as not passed, so giving
up is never better than failing; only the harness's stay out of the numerator and denominator.
Both counts are kept and shown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_agentbench.report.stats.intervals import (
    DEFAULT_LEVEL,
    Interval,
    at_least,
    check_level,
    suite_mean_wilson,
    t_quantile,
    wilson_interval,
)

Status = Literal["passed", "failed", "incomplete"]
STATUSES: tuple[str, ...] = ("passed", "failed", "incomplete")
Cause = Literal["agent", "harness"]
CAUSES: tuple[str, ...] = ("agent", "harness")

# The metrics a suite's repeats are summarised by, as keys of RunOutcome.metrics; `tokens` is
# input + output + cache tokens, as in the summary table (see metrics_from_result).
METRICS: tuple[str, ...] = ("toolCalls", "turns", "tokens", "costUsd", "wallClockSeconds")
_TOKEN_KEYS = ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class RunOutcome:
    """One run of a suite: its verdict, its metrics (missing keys: unknown) and its seeded instance id.

    ``instance`` is the id of the seeded task instance (``pytest_agentbench.suite.params.instance_id``);
    two sessions that ran the same instances can be compared pair by pair. Leave it ``None`` for
    runs of a suite without ``params``, whose repeats are not distinct instances.

    ``cause`` is an incomplete run's cause: ``"agent"`` counts in the rate as not passed;
    ``"harness"`` or ``None`` (not recorded, as in documents written before causes were) leaves
    the run outside the rate. It must be ``None`` for a passed or failed run.
    """

    status: Status
    metrics: Mapping[str, float] = field(default_factory=dict)
    instance: str | None = None
    cause: Cause | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"run outcome: expected a status of {', '.join(STATUSES)}, got {self.status!r}")
        if self.cause is not None and (self.status != "incomplete" or self.cause not in CAUSES):
            raise ValueError(f"run outcome: expected a cause of {', '.join(CAUSES)} on an incomplete run only, got {self.cause!r} on {self.status}")
        for key, value in self.metrics.items():
            if value is not None and not _is_number(value):
                raise ValueError(f"run outcome: expected metric {key!r} to be a finite number or None, got {value!r}")

    @property
    def agent_incomplete(self) -> bool:
        """An incomplete run the agent caused: in the rate, as not passed."""
        return self.status == "incomplete" and self.cause == "agent"

    @property
    def scored(self) -> bool:
        """Whether the run is in the pass rate: passed, failed, or incomplete by the agent's doing."""
        return self.status != "incomplete" or self.cause == "agent"


def metrics_from_result(metrics: Mapping[str, Any]) -> dict[str, float]:
    """Pick the summarised metrics out of a ``result.json`` ``metrics`` block.

    Args:
        metrics: The block as ``audit.metrics_of`` writes it.

    Returns:
        ``toolCalls``, ``turns``, ``costUsd``, ``wallClockSeconds`` when present and numeric, and
        ``tokens`` as the sum of the four token counts when any of them is present.
    """
    picked = {key: float(metrics[key]) for key in METRICS if key != "tokens" and _is_number(metrics.get(key))}
    tokens = [metrics[key] for key in _TOKEN_KEYS if _is_number(metrics.get(key))]
    if tokens:
        picked["tokens"] = float(sum(tokens))
    return picked


def _check_k(n: int, c: int, k: int) -> None:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"pass@k: expected {name} to be a non-negative integer, got {value!r}")
    if c > n:
        raise ValueError(f"pass@k: expected passes c <= judged runs n, got c={c}, n={n}")
    if k < 1:
        raise ValueError(f"pass@k: expected k >= 1, got {k}")


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k: the chance that at least one of k runs drawn from the n judged runs passed.

    ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021), computed as the product
    ``1 - prod_{i=n-c+1}^{n} (1 - k/i)`` so no huge binomial coefficient is formed.

    Args:
        n: Judged runs.
        c: Passed runs among them.
        k: Runs per draw.

    Returns:
        The estimate, or ``None`` when ``n < k`` (fewer judged runs than a draw needs; never 1.0 or
        NaN, which would leak into JSON as an invalid token).
    """
    _check_k(n, c, k)
    if n < k:
        return None
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """pass^k: the chance that all k runs drawn from the n judged runs passed, ``C(c, k) / C(n, k)``.

    Computed as ``prod_{i=0}^{k-1} (c-i)/(n-i)``. Returns ``None`` when ``n < k``, as pass_at_k.
    """
    _check_k(n, c, k)
    if n < k:
        return None
    product = 1.0
    for i in range(k):
        product *= (c - i) / (n - i)
    return max(0.0, product)


#: The k shown beside pass@1 in the terminal and on the HTML page (every k is in the JSON).
SHOWN_K = 3


def shown_k(runs_per_suite: Sequence[int]) -> int:
    """The one k every report shows pass@k and pass^k for: 3, or the most runs any suite had when fewer.

    One k for the whole session, so suites are comparable column by column; a suite with fewer
    judged runs than k shows n/a rather than a value over a different k.
    """
    return max(1, min(SHOWN_K, max(runs_per_suite, default=1)))


def quantile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile by linear interpolation between order statistics (numpy's default, R type 7).

    With the values sorted as x[0..n-1], h = (n-1) q, the result is x[floor h] + (h - floor h) *
    (x[floor h + 1] - x[floor h]). Returns ``None`` for no values.
    """
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 <= q <= 1:
        raise ValueError(f"quantile: expected q between 0 and 1, got {q!r}")
    ordered = sorted(values)
    if not ordered:
        return None
    h = (len(ordered) - 1) * q
    below = math.floor(h)
    if below + 1 >= len(ordered):
        return float(ordered[-1])
    return ordered[below] + (h - below) * (ordered[below + 1] - ordered[below])


@dataclass(frozen=True)
class MetricSummary:
    """Median and quartiles of one metric over the runs that reported it (``n`` of them)."""

    n: int
    median: float
    q1: float
    q3: float

    @property
    def iqr(self) -> float:
        """The interquartile range, ``q3 - q1``."""
        return self.q3 - self.q1


def summarize(values: Sequence[float | None]) -> MetricSummary | None:
    """Median, first and third quartile (numpy's linear method) of ``values``, ``None`` entries skipped; ``None`` when empty."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    return MetricSummary(len(present), quantile(present, 0.5), quantile(present, 0.25), quantile(present, 0.75))


@dataclass(frozen=True)
class SuiteStats:
    """What a suite's repeated runs say: counts, the pass rate with its interval, pass@k, pass^k, metrics.

    ``incomplete`` counts every incomplete run, ``incomplete_agent`` those the agent caused, which
    are judged (in the rate, as not passed). ``pass_at`` and ``pass_hat`` map k = 1..runs to the
    estimate, ``None`` where k exceeds the judged runs. ``metrics`` maps each name in METRICS to
    its summary over passed and failed runs (``None`` when none reported it): an incomplete run
    was stopped, so its calls and seconds describe the stop rather than the agent's work.
    """

    suite: str
    passed: int
    failed: int
    incomplete: int
    interval: Interval | None
    pass_at: Mapping[int, float | None]
    pass_hat: Mapping[int, float | None]
    metrics: Mapping[str, MetricSummary | None]
    incomplete_agent: int = 0

    @property
    def incomplete_harness(self) -> int:
        """Incomplete runs the harness caused (or of unrecorded cause): outside the rate."""
        return self.incomplete - self.incomplete_agent

    @property
    def judged(self) -> int:
        """The denominator of the pass rate: passed, failed and the agent's incomplete runs."""
        return self.passed + self.failed + self.incomplete_agent

    @property
    def runs(self) -> int:
        """Every run, incomplete ones included."""
        return self.passed + self.failed + self.incomplete

    @property
    def rate(self) -> float | None:
        """passes / judged runs, ``None`` without a judged run."""
        return self.passed / self.judged if self.judged else None


def suite_stats(
    suite: str, outcomes: Sequence[RunOutcome], *, level: float = DEFAULT_LEVEL, max_k: int | None = None
) -> SuiteStats:
    """Summarise one suite's repeated runs.

    Args:
        suite: The suite name.
        outcomes: Every run of the suite, incomplete ones included.
        level: Confidence level of the Wilson interval.
        max_k: Largest k for pass@k and pass^k; default the number of runs (``--agentbench-repeat N``).

    Returns:
        The SuiteStats.
    """
    check_level(level)
    counts = {status: sum(1 for o in outcomes if o.status == status) for status in STATUSES}
    agent = sum(1 for o in outcomes if o.agent_incomplete)
    passed, judged = counts["passed"], counts["passed"] + counts["failed"] + agent
    top = len(outcomes) if max_k is None else max_k
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise ValueError(f"suite statistics: expected max_k to be a non-negative integer, got {max_k!r}")
    judged_runs = [o for o in outcomes if o.status != "incomplete"]
    return SuiteStats(
        suite=suite,
        passed=passed,
        failed=counts["failed"],
        incomplete=counts["incomplete"],
        interval=wilson_interval(passed, judged, level),
        pass_at={k: pass_at_k(judged, passed, k) for k in range(1, top + 1)},
        pass_hat={k: pass_hat_k(judged, passed, k) for k in range(1, top + 1)},
        metrics={name: summarize([o.metrics.get(name) for o in judged_runs]) for name in METRICS},
        incomplete_agent=agent,
    )


@dataclass(frozen=True)
class SessionStats:
    """The session line: the mean of per-suite pass rates with an interval clustered by suite.

    ``suites`` counts the suites with at least one judged run (the clusters); suites without one
    are named in ``unjudged_suites`` and left out of the mean. ``interval.method`` is
    ``"clustered-t"`` (m >= 2 suites: mean +- t(m-1) * s / sqrt(m), clipped to [0, 1]; widened
    to the suite-mean Wilson interval where that is wider, method ``FLOORED``), ``"wilson"``
    (one suite: its own interval) or the interval is ``None`` (no suite). ``incomplete`` counts
    every incomplete run, ``incomplete_agent`` the agent's (judged, as not passed).
    """

    suites: int
    unjudged_suites: tuple[str, ...]
    passed: int
    failed: int
    incomplete: int
    mean_rate: float | None
    interval: Interval | None
    spread: float | None
    incomplete_agent: int = 0

    @property
    def judged(self) -> int:
        """Judged runs over all suites (passed, failed, the agent's incomplete runs)."""
        return self.passed + self.failed + self.incomplete_agent

    @property
    def degrees_of_freedom(self) -> int | None:
        """m - 1 for the clustered interval, ``None`` otherwise."""
        return self.suites - 1 if self.interval is not None and self.interval.method.startswith("clustered-t") else None


def session_stats(suites: Sequence[SuiteStats], *, level: float = DEFAULT_LEVEL) -> SessionStats:
    """Combine per-suite statistics into the session line.

    Each suite is one cluster and weighs the same, whatever its number of runs: the question is
    "how does the agent do on a suite", and runs within a suite are correlated (same task). With
    m clusters the standard error of the mean of their rates is s / sqrt(m), s the sample standard
    deviation of the rates (the cluster-robust error with the usual m/(m-1) correction), and the
    interval uses Student's t with m - 1 degrees of freedom. Its width comes from how much suites
    differ, so when every suite has the same rate it would be zero wide: it is never narrower than
    the suite-mean Wilson interval (`intervals.suite_mean_wilson`: the same mean, over the
    suites' effective number of runs m^2 / sum(1/n_i)). Pooling the runs instead would estimate
    another quantity when suites ran different numbers of times.

    Args:
        suites: One SuiteStats per suite.
        level: Confidence level.

    Returns:
        The SessionStats.
    """
    check_level(level)
    scored = [s for s in suites if s.judged > 0]
    totals = {
        "passed": sum(s.passed for s in suites),
        "failed": sum(s.failed for s in suites),
        "incomplete": sum(s.incomplete for s in suites),
        "incomplete_agent": sum(s.incomplete_agent for s in suites),
    }
    unjudged = tuple(s.suite for s in suites if s.judged == 0)
    rates = [s.rate for s in scored]
    m = len(rates)
    if m == 0:
        return SessionStats(0, unjudged, **totals, mean_rate=None, interval=None, spread=None)
    mean = math.fsum(rates) / m
    if m == 1:
        return SessionStats(1, unjudged, **totals, mean_rate=mean, interval=scored[0].interval, spread=None)
    spread = math.sqrt(math.fsum((r - mean) ** 2 for r in rates) / (m - 1))
    half = t_quantile(1 - (1 - level) / 2, m - 1) * spread / math.sqrt(m)
    interval = Interval(max(0.0, mean - half), min(1.0, mean + half), float(level), "clustered-t")
    interval = at_least(interval, suite_mean_wilson(rates, [s.judged for s in scored], level))
    return SessionStats(m, unjudged, **totals, mean_rate=mean, interval=interval, spread=spread)
