"""A session's runs, statistics and comparison + the verbosity -> the agentbench terminal section, following pytest's conventions.

At the default verbosity passes are silent (pytest lists them only with `-rA` or `-v`): the
section says how many runs passed, lists the runs that did not, groups them by first reason
(`48 runs: failed: no final answer (...)`) and, with repeats or a comparison, shows the
statistics with a compact block per suite. A single run per suite gets one table and no
intervals (an interval over one run says nothing). `-v` adds every run's row and verdict line,
the statistics with their legend, each run's baseline details and the full comparison, so
every fact of the section stays reachable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_agentbench.records.result import RunResult
from pytest_agentbench.report.ab import ABReport, render_comparison
from pytest_agentbench.report.aggregate import SessionStatistics, render_statistics
from pytest_agentbench.report.stats import format_incomplete
from pytest_agentbench.report.summary import (
    failure_groups,
    fit,
    render_failure_groups,
    render_summary_table,
    render_verbose_details,
    verdict_line,
)


@dataclass(frozen=True)
class Part:
    """One piece of the section: a `rule` (pytest's `write_sep("-", text)`), plain `text`, or a `warning` (yellow, bold)."""

    kind: Literal["rule", "text", "warning"]
    text: str


def counts_line(results: Sequence[RunResult], statistics: SessionStatistics) -> str:
    """`13 runs of 13 suites: 11 passed, 1 failed, 1 incomplete (1 the agent's)`: every run, harness demos too."""
    runs = len(results) + len(statistics.unrecorded)
    suites = len(statistics.suites)
    passed, failed = sum(s.passed for s in statistics.suites), sum(s.failed for s in statistics.suites)
    incomplete, incomplete_agent = sum(s.incomplete for s in statistics.suites), sum(s.incomplete_agent for s in statistics.suites)
    parts = [f"{passed} passed", f"{failed} failed"]
    if incomplete:
        parts.append(format_incomplete(incomplete, incomplete_agent))
    else:
        parts.append("0 incomplete")
    each = " (one run each)" if single_run(statistics) and runs > 1 else ""
    return f"{runs} run{'s' if runs != 1 else ''} of {suites} suite{'s' if suites != 1 else ''}{each}: {', '.join(parts)}"


def single_run(statistics: SessionStatistics) -> bool:
    """Every suite ran once: no rate, interval or pass@k is worth printing."""
    return all(stats.runs <= 1 for stats in statistics.suites)


def unconfined_line(results: Sequence[RunResult]) -> str | None:
    """The summary's warning when runs were not confined (`sandbox.mode` off), with why; None when every run was."""
    off = [result for result in results if result.confinement is not None and result.confinement.mode == "off"]
    if not off:
        return None
    reasons = sorted({(result.confinement.reason if result.confinement else None) or "unknown" for result in off})
    return (f"UNCONFINED: {len(off)} of {len(results)} runs ran without the sandbox ({'; '.join(reasons)}): "
            "their agents could reach the device, the host and the suites directly (docs/isolation.md)")


def render_section(
    results: Sequence[RunResult],
    statistics: SessionStatistics,
    comparison: ABReport | None = None,
    *,
    width: int = 80,
    verbose: bool = False,
    show_passes: bool = False,
) -> list[Part]:
    """The agentbench section after pytest's own summary.

    Args:
        results: The runs that left a result, in run order.
        statistics: `aggregate.session_statistics` of them and of the runs that left none.
        comparison: With `--agentbench-compare`.
        width: Terminal width; no line is wider.
        verbose: `-v`: every run's row, verdict line and details, the statistics' legend, the full comparison.
        show_passes: `-rA` (or `-rp`): every run's verdict line and row, passing runs too.
    """
    parts = [Part("text", fit(counts_line(results, statistics), width))]
    text = lambda line: parts.append(Part("text", line))  # noqa: E731
    if verbose or show_passes:
        for result in results:
            # Wrapped, not cut as pytest's short summary cuts: the reason is the point of this line.
            text(fit(verdict_line(result), width))
    single = single_run(statistics) and comparison is None
    listed = list(results) if verbose or show_passes else [result for result in results if result.status != "passed"]
    if single or verbose or show_passes:
        if listed:
            text("")
            text(render_summary_table(listed, width=width, legend=verbose))
    hidden = len(results) - len(listed)
    if hidden:
        text(f"{hidden} passing run{'s' if hidden != 1 else ''} not listed (-rA lists them, -v shows every detail)")
    groups = failure_groups(results, [(run.nodeid.rsplit("::", 1)[-1], run.reason) for run in statistics.unrecorded])
    if groups:
        text("")
        text("not passed, by first reason:")
        text(render_failure_groups(groups, width=width))
    unconfined = unconfined_line(results)
    if unconfined:
        text("")
        parts.append(Part("warning", fit(unconfined, width)))
    if verbose and results:
        text("")
        text(render_verbose_details(results, width=width))
    if not single or verbose:
        parts.append(Part("rule", "agentbench statistics"))
        text(render_statistics(statistics, width=width, verbose=verbose))
    if comparison is not None:
        parts.append(Part("rule", "agentbench comparison"))
        text(render_comparison(comparison, width=width, verbose=verbose))
    if not verbose:
        text(fit("(-v: every run's row and details, the statistics' legend, the full comparison)", width))
    return parts
