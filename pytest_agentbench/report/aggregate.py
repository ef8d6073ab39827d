"""A session's RunResults (and the runs that left none) -> per-suite statistics: the summary section, JSON and JUnit properties.

The numbers come from `report.stats` (pure); this module only groups runs by suite and lays
the numbers out. A run that ended without a result document (a setup error, an infrastructure
crash) is an incomplete run here: counted and shown, never in a rate. docs/statistics.md
explains every number printed.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.records.result import RunResult
from pytest_agentbench.report.stats import (
    DEFAULT_LEVEL,
    METRIC_LABELS,
    METRICS,
    Interval,
    RunOutcome,
    SessionStats,
    SuiteStats,
    format_metric,
    format_session,
    percent,
    session_stats,
    shown_k,
    suite_stats,
)
from pytest_agentbench.report.stats.repeats import metrics_from_result
from pytest_agentbench.report.summary import fit, table

STATISTICS_LEGEND = (
    "passed = passes/judged runs (judged = passed + failed + incomplete by the agent's doing: timeout, "
    "budget or turn cap, crash, no result); incomplete: all incomplete runs, (N agent) of them the agent's, "
    "counted as not passed; the harness's (proven by its own records: device lost, server never started, "
    "model host unreachable, no result document) are in neither number; CI: Wilson {level} interval of the rate; pass@k: chance at least one of "
    "k runs passes, pass^k: that all k pass (unbiased, over judged runs; k = {k}, the most runs a suite had "
    "up to 3; n/a: fewer than k judged); metrics: median (Q1–Q3, the interquartile range) over passed and failed runs"
)
#: An unrecorded run's reason is shown up to this many characters (pytest prints it whole above).
_REASON_CHARS = 160


@dataclass(frozen=True)
class Unrecorded:
    """A run that ended without a result document (setup error, crash); it counts as incomplete."""

    nodeid: str
    suite: str
    instance: str | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        """The session document's `unrecorded` entry."""
        return {"nodeid": self.nodeid, "suite": self.suite, "instance": self.instance, "reason": self.reason}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Unrecorded:
        """Read a session document's `unrecorded` entry back."""
        return cls(str(data.get("nodeid") or "?"), str(data.get("suite") or "?"), data.get("instance"), str(data.get("reason") or ""))


def outcome_of(result: RunResult | Mapping[str, Any]) -> RunOutcome:
    """A run -> the RunOutcome the statistics count (verdict, its cause, summarised metrics, instance id).

    An incomplete run without a recorded cause (a document written before causes were) counts
    as the harness's, as all incomplete runs did then. A result.json mapping (a saved document's
    run) is read through `RunResult.from_json`.
    """
    run = result if isinstance(result, RunResult) else RunResult.from_json(result)
    status = run.status
    return RunOutcome(
        status if status in ("passed", "failed") else "incomplete",  # type: ignore[arg-type]
        metrics_from_result(run.metrics),
        run.instance_key,
        run.verdict.cause,
    )


def outcomes_by_suite(
    results: Iterable[RunResult | Mapping[str, Any]], unrecorded: Iterable[Unrecorded] = ()
) -> dict[str, list[RunOutcome]]:
    """Suite name -> its runs' outcomes, suites in the order their first run appears; unrecorded runs are incomplete.

    Mappings (result.json documents, as report/html passes them) are read through `RunResult.from_json`.
    """
    grouped: dict[str, list[RunOutcome]] = {}
    for result in results:
        run = result if isinstance(result, RunResult) else RunResult.from_json(result)
        grouped.setdefault(run.suite or "?", []).append(outcome_of(run))
    for run in unrecorded:
        # No result document: the harness never got the run to a verdict (setup error, crash).
        grouped.setdefault(run.suite, []).append(RunOutcome("incomplete", {}, run.instance, "harness"))
    return grouped


@dataclass(frozen=True)
class SessionStatistics:
    """Every suite's statistics and the session line."""

    suites: tuple[SuiteStats, ...]
    session: SessionStats
    unrecorded: tuple[Unrecorded, ...] = ()
    #: Suites marked `demo: true` (harness demos): in the table, left out of the session line.
    demo_suites: tuple[str, ...] = ()

    @property
    def level(self) -> float:
        return next((s.interval.level for s in self.suites if s.interval is not None), DEFAULT_LEVEL)


def session_statistics(
    results: Sequence[RunResult | Mapping[str, Any]], unrecorded: Sequence[Unrecorded] = (), *, level: float = DEFAULT_LEVEL
) -> SessionStatistics:
    """Group the runs by suite and compute each suite's statistics and the session line.

    Args:
        results: The runs, in run order.
        unrecorded: Runs without a result document.
        level: Confidence level of every interval.

    Returns:
        The SessionStatistics; pass@k and pass^k go up to each suite's number of runs.
    """
    suites = tuple(suite_stats(name, outcomes, level=level) for name, outcomes in outcomes_by_suite(results, unrecorded).items())
    runs = [result if isinstance(result, RunResult) else RunResult.from_json(result) for result in results]
    demo = tuple(sorted({run.suite for run in runs if run.demo}))
    # A harness demo (a job of a dropped kind, docs/jobs.md) is reported, never pooled with the core jobs.
    core = tuple(stats for stats in suites if stats.suite not in demo)
    return SessionStatistics(suites, session_stats(core, level=level), tuple(unrecorded), demo)


# --------------------------------------------------------------------------- terminal


def _k_shown(statistics: SessionStatistics) -> int:
    return shown_k([s.runs for s in statistics.suites])


def incomplete_cell(stats: SuiteStats) -> str:
    """``3 (1 agent)``: every incomplete run, and how many of them the agent caused (in the rate as not passed)."""
    return f"{stats.incomplete} ({stats.incomplete_agent} agent)" if stats.incomplete_agent else str(stats.incomplete)


def _estimate(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "n/a"


def _interval(interval: Interval | None) -> str:
    if interval is None:
        return "-"
    return f"{percent(interval.low).rstrip('%')}–{percent(interval.high)}"


def _metrics_cell(stats: SuiteStats) -> str:
    """``tool calls 6 (5–7), turns 7, ...``: each metric's median and quartiles, the quartiles left out where they equal it."""
    parts = []
    for name in METRICS:
        summary = stats.metrics.get(name)
        shown = format_metric(name, summary).replace("(IQR ", "(")
        if summary is not None and summary.q1 == summary.median == summary.q3:
            shown = shown.split(" (", 1)[0]
        parts.append(f"{METRIC_LABELS[name]} {shown}")
    return ", ".join(parts)


def render_statistics(statistics: SessionStatistics, *, width: int = 80, verbose: bool = False) -> str:
    """The statistics section: the per-suite table, a table of each suite's metrics, the session line.

    Args:
        statistics: From `session_statistics`.
        width: Terminal width; a suite name too long for its column takes a line of its own (never cut).
        verbose: Also list the runs that ended without a result and print the legend (`-v`);
            at the default verbosity those runs are in the failures grouped by reason.

    Returns:
        Lines no wider than `width`.
    """
    k = _k_shown(statistics)
    level = f"{statistics.level * 100:g}%"
    headers = ["suite", "runs", "passed", "incomplete", "rate", f"{level} CI", "pass@1"]
    if k > 1:
        headers += [f"pass@{k}", f"pass^{k}"]
    rows = []
    for stats in statistics.suites:
        rate = percent(stats.rate) if stats.rate is not None else "no rate"
        name = f"{stats.suite} (demo)" if stats.suite in statistics.demo_suites else stats.suite
        row = [name, str(stats.runs), f"{stats.passed}/{stats.judged}", incomplete_cell(stats), rate,
               _interval(stats.interval), _estimate(stats.pass_at.get(1))]
        if k > 1:
            row += [_estimate(stats.pass_at.get(k)), _estimate(stats.pass_hat.get(k))]
        rows.append(row)
    lines = table(headers, rows, width=width)
    lines.append("")
    lines.append("metrics, median (Q1–Q3):")
    for stats in statistics.suites:
        lines.append(fit(f"  {stats.suite}: {_metrics_cell(stats)}", width))
    if statistics.unrecorded and verbose:
        lines.append("")
        lines.append(f"{len(statistics.unrecorded)} run(s) ended without a result and count as incomplete:")
        lines += [fit(f"  {run.nodeid} - {_cut(run.reason)}", width) for run in statistics.unrecorded]
    lines.append("")
    lines.append(fit(format_session(statistics.session), width))
    if statistics.demo_suites:
        lines.append(fit(f"not in the session line: {', '.join(statistics.demo_suites)} (harness demos, docs/jobs.md)", width))
    if verbose:
        lines += textwrap.wrap(STATISTICS_LEGEND.format(level=level, k=k), width)
    return "\n".join(lines)


def _cut(text: str) -> str:
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"


# --------------------------------------------------------------------------- JSON and JUnit


def _interval_json(interval: Interval | None) -> dict[str, Any] | None:
    if interval is None:
        return None
    return {"low": interval.low, "high": interval.high, "level": interval.level, "method": interval.method}


def suite_block(stats: SuiteStats) -> dict[str, Any]:
    """One suite's statistics as the session document holds them."""
    return {
        "runs": stats.runs,
        "passed": stats.passed,
        "failed": stats.failed,
        "incomplete": stats.incomplete,
        "incompleteAgent": stats.incomplete_agent,
        "incompleteHarness": stats.incomplete_harness,
        "judged": stats.judged,
        "rate": stats.rate,
        "interval": _interval_json(stats.interval),
        "passAtK": {str(k): value for k, value in stats.pass_at.items()},
        "passHatK": {str(k): value for k, value in stats.pass_hat.items()},
        "metrics": {
            name: None if summary is None else {"n": summary.n, "median": summary.median, "q1": summary.q1, "q3": summary.q3}
            for name, summary in stats.metrics.items()
        },
    }


def statistics_block(statistics: SessionStatistics) -> dict[str, Any]:
    """The session document's `statistics`: per suite, and the session line."""
    session = statistics.session
    return {
        "level": statistics.level,
        "shownK": _k_shown(statistics),
        "suites": {stats.suite: suite_block(stats) for stats in statistics.suites},
        **({"demoSuites": list(statistics.demo_suites)} if statistics.demo_suites else {}),
        "session": {
            "suites": session.suites,
            "unjudgedSuites": list(session.unjudged_suites),
            "passed": session.passed,
            "failed": session.failed,
            "incomplete": session.incomplete,
            "incompleteAgent": session.incomplete_agent,
            "judged": session.judged,
            "meanRate": session.mean_rate,
            "interval": _interval_json(session.interval),
            "spread": session.spread,
        },
    }


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6g}"


def junit_properties(statistics: SessionStatistics) -> list[tuple[str, str]]:
    """Suite-level JUnit properties (`<testsuite><properties>`): `agentbench.<suite>.<number>` and `agentbench.session.<number>`."""
    properties: list[tuple[str, str]] = []
    for stats in statistics.suites:
        prefix = f"agentbench.{stats.suite}"
        properties += [
            (f"{prefix}.runs", str(stats.runs)),
            (f"{prefix}.passed", str(stats.passed)),
            (f"{prefix}.failed", str(stats.failed)),
            (f"{prefix}.incomplete", str(stats.incomplete)),
            (f"{prefix}.incompleteAgent", str(stats.incomplete_agent)),
            (f"{prefix}.judged", str(stats.judged)),
            (f"{prefix}.rate", _number(stats.rate)),
            (f"{prefix}.ciLow", _number(stats.interval.low if stats.interval else None)),
            (f"{prefix}.ciHigh", _number(stats.interval.high if stats.interval else None)),
        ]
        properties += [(f"{prefix}.passAt{k}", _number(value)) for k, value in stats.pass_at.items()]
        properties += [(f"{prefix}.passHat{k}", _number(value)) for k, value in stats.pass_hat.items() if k > 1]
    session = statistics.session
    properties += [
        ("agentbench.session.suites", str(session.suites)),
        ("agentbench.session.meanRate", _number(session.mean_rate)),
        ("agentbench.session.ciLow", _number(session.interval.low if session.interval else None)),
        ("agentbench.session.ciHigh", _number(session.interval.high if session.interval else None)),
    ]
    return properties
