"""Statistics -> the words and numbers the summary prints; a rate never appears without its n and interval."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_agentbench.report.stats.compare import Comparison
from pytest_agentbench.report.stats.intervals import DEFAULT_LEVEL, FLOORED, Interval, wilson_interval
from pytest_agentbench.report.stats.repeats import MetricSummary, SessionStats, SuiteStats

METRIC_LABELS = {
    "toolCalls": "tool calls",
    "turns": "turns",
    "tokens": "tokens",
    "costUsd": "cost",
    "wallClockSeconds": "wall time",
}
_TEST_NAMES = {"mcnemar-exact": "McNemar exact", "fisher-exact": "Fisher exact"}


def percent(fraction: float) -> str:
    """A fraction as a whole percentage; ``<1%`` and ``>99%`` instead of rounding to a false 0% or 100%."""
    value = round(fraction * 100)
    if value == 0 and fraction > 0:
        return "<1%"
    if value == 100 and fraction < 1:
        return ">99%"
    return f"{value}%"


def _bare(fraction: float) -> str:
    return percent(fraction).rstrip("%")


def interval_percent(interval: Interval) -> str:
    """``95% CI 40–89%``."""
    return f"{interval.level * 100:g}% CI {_bare(interval.low)}–{percent(interval.high)}"


def format_incomplete(incomplete: int, agent: int = 0) -> str:
    """``3 incomplete (1 the agent's, counted as not passed; 2 the harness's, left out)``; empty when none.

    Without an agent-caused one it is ``2 incomplete``: every one the harness's, outside the rate
    (the legend and docs/statistics.md say so).
    """
    if not incomplete:
        return ""
    if not agent:
        return f"{incomplete} incomplete"
    harness = incomplete - agent
    if not harness:
        return f"{incomplete} incomplete (the agent's, counted as not passed)"
    return f"{incomplete} incomplete ({agent} the agent's, counted as not passed; {harness} the harness's, left out)"


def format_rate(passed: int, judged: int, interval: Interval | None, incomplete: int = 0, agent_incomplete: int = 0) -> str:
    """``7/10 passed (70%, 95% CI 40–89%), 1 incomplete (...)``; without judged runs, says so instead of a rate.

    Args:
        passed: Passed runs.
        judged: Passed, failed and agent-caused incomplete runs.
        interval: The Wilson interval for passed / judged (``None`` only when judged is 0).
        incomplete: Every incomplete run, shown when there are any, with its cause.
        agent_incomplete: Those the agent caused (they are in ``judged``).
    """
    if judged == 0 or interval is None:
        text = "no judged run (no pass rate)"
    else:
        text = f"{passed}/{judged} passed ({percent(passed / judged)}, {interval_percent(interval)})"
    return f"{text}, {format_incomplete(incomplete, agent_incomplete)}" if incomplete else text


def format_suite(stats: SuiteStats) -> str:
    """The rate sentence of one suite."""
    return format_rate(stats.passed, stats.judged, stats.interval, stats.incomplete, stats.incomplete_agent)


def format_pass_k(stats: SuiteStats, ks: Sequence[int] = (1, 3)) -> str:
    """``pass@1 0.70, pass@3 0.99, pass^3 0.29``: pass@k for each k, then pass^k for k > 1 (pass^1 = pass@1).

    Values of k above the number of runs are skipped; where fewer runs were judged than k needs,
    the value reads ``n/a (2 judged)``.
    """
    parts: list[str] = []
    wanted = [k for k in ks if k in stats.pass_at]
    for label, table, shown in (("@", stats.pass_at, wanted), ("^", stats.pass_hat, [k for k in wanted if k > 1])):
        for k in shown:
            value = table[k]
            parts.append(f"pass{label}{k} " + (f"{value:.2f}" if value is not None else f"n/a ({stats.judged} judged)"))
    return ", ".join(parts)


def _number(value: float, name: str, *, signed: bool = False) -> str:
    sign = "+" if signed and value > 0 else ("-" if value < 0 else "")
    size = abs(value)
    if name == "costUsd":
        return f"{sign}${size:.3f}" if size < 10 else f"{sign}${size:.2f}"
    if name == "wallClockSeconds":
        return f"{sign}{size:.1f}s"
    if name == "tokens" and size >= 1000:
        return f"{sign}{size / 1000:.1f}k" if size < 1_000_000 else f"{sign}{size / 1_000_000:.1f}M"
    return f"{sign}{size:.0f}" if float(size).is_integer() else f"{sign}{size:.1f}"


def format_metric(name: str, summary: MetricSummary | None) -> str:
    """``14.5 (IQR 12.2–16.8)``: the median and the quartiles Q1–Q3; ``-`` when no run reported it."""
    if summary is None:
        return "-"
    return f"{_number(summary.median, name)} (IQR {_number(summary.q1, name)}–{_number(summary.q3, name)})"


def format_session(session: SessionStats) -> str:
    """The session line: mean of suite rates, its interval and how it was made, then the run counts."""
    counts = f"{session.passed}/{session.judged} runs passed"
    if session.incomplete:
        counts += f", {format_incomplete(session.incomplete, session.incomplete_agent)}"
    left_out = ""
    if session.unjudged_suites:
        n = len(session.unjudged_suites)
        left_out = f"; {n} suite{'s' if n > 1 else ''} without a judged run left out: {', '.join(session.unjudged_suites)}"
    if session.mean_rate is None or session.interval is None:
        incomplete = f", {format_incomplete(session.incomplete, session.incomplete_agent)}" if session.incomplete else ""
        return f"all suites: no judged run (no pass rate){incomplete}{left_out}"
    if session.interval.method == "clustered-t":
        how = f"clustered by suite, {session.suites} suites"
    elif session.interval.method == FLOORED:
        how = f"clustered by suite, {session.suites} suites, widened to the suite-mean Wilson interval"
    else:
        how = "Wilson, one suite"
    rate = f"mean pass rate {percent(session.mean_rate)} ({interval_percent(session.interval)}, {how})"
    return f"all suites: {rate}; {counts}{left_out}"


def points(fraction: float, *, signed: bool = True) -> str:
    """A difference of rates in percentage points: ``+20``, ``-50``, ``0``; ``-0.3`` rather than a ``0`` that is not zero.

    An interval end just below zero must not read as ``0``: the verdict may say the interval
    excludes zero, and the printed end has to agree.
    """
    value = round(fraction * 100)
    if value == 0 and fraction != 0:
        shown = f"{fraction * 100:+.1f}" if signed else f"{fraction * 100:.1f}"
        if shown.lstrip("+-") != "0.0":
            return shown
        return f"{fraction * 100:+.2g}" if signed else f"{fraction * 100:.2g}"
    return f"{value:+d}" if signed and value else f"{value:d}"


def format_difference(comparison: Comparison) -> str:
    """``-50 points (95% CI -73 to -8)``."""
    if comparison.difference is None or comparison.interval is None:
        return "no difference (a side has no judged run)"
    interval = comparison.interval
    return (
        f"{points(comparison.difference)} points "
        f"({interval.level * 100:g}% CI {points(interval.low)} to {points(interval.high)})"
    )


def format_p(p_value: float | None) -> str:
    """``p = 0.062``, ``p < 0.001``, or ``p n/a``."""
    if p_value is None:
        return "p n/a"
    return "p < 0.001" if p_value < 0.001 else f"p = {p_value:.3f}"


def format_metric_deltas(comparison: Comparison) -> str:
    """``tool calls -5, tokens +1.2k``: median B minus median A over passed runs, metrics either side lacks left out."""
    parts = [
        f"{METRIC_LABELS[name]} {_number(delta, name, signed=True)}"
        for name, delta in comparison.metric_deltas.items()
        if delta is not None
    ]
    return ", ".join(parts) if parts else "no passed run with metrics on both sides"


def comparison_lines(comparison: Comparison, names: tuple[str, str] = ("A", "B")) -> list[str]:
    """The lines of one A/B comparison: both rates, the difference with its interval and exact test, deltas, verdict."""
    level = comparison.interval.level if comparison.interval is not None else DEFAULT_LEVEL
    name_a, name_b = names
    rate_a = format_rate(
        comparison.passed_a, comparison.judged_a,
        wilson_interval(comparison.passed_a, comparison.judged_a, level), comparison.incomplete_a,
        comparison.incomplete_agent_a,
    )
    rate_b = format_rate(
        comparison.passed_b, comparison.judged_b,
        wilson_interval(comparison.passed_b, comparison.judged_b, level), comparison.incomplete_b,
        comparison.incomplete_agent_b,
    )
    design = "independent runs"
    if comparison.pairs is not None:
        design = f"{comparison.pairs.pairs} paired instances"
        if comparison.pairs.dropped:
            design += f", {comparison.pairs.dropped} with a harness-incomplete side left out"
        if comparison.pairs.unmatched:
            design += f", {comparison.pairs.unmatched} unmatched (a run without a result) left out"
    test = f"{_TEST_NAMES[comparison.test]} {format_p(comparison.p_value)}"
    return [
        f"{name_a}: {rate_a}",
        f"{name_b}: {rate_b}",
        f"difference {name_b} - {name_a}: {format_difference(comparison)}; {test} ({design})",
        f"metric deltas over passed runs (median {name_b} - median {name_a}): {format_metric_deltas(comparison)}",
        comparison.verdict,
    ]
