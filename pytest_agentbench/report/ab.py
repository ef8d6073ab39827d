"""An earlier session document (A, the baseline) + this session's runs (B) -> the A/B comparison: rates, difference, exact test, deltas, flags.

Per suite and overall: both pass rates with their intervals, the difference with its interval,
McNemar's exact test when both sides ran the same seeded instances (Fisher's otherwise), the
median metric deltas, the plain verdict ("no detectable difference at this N" with the smallest
difference the run counts could detect), and the fingerprint flags of `baseline.compare` for
every way the two sides' setups differ. Runs pair by the values their instances drew
(`pairing_keys`), so sessions on one seed pair run for run, and sessions on different seeds pair
only where every instance coincides; the section says when the seeds differ. docs/statistics.md
says how to read it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_agentbench.baseline.compare import FLAG_ABBREVIATIONS, ComparabilityFlag, comparability_flags
from pytest_agentbench.records.result import RunResult, SessionResult
from pytest_agentbench.report.aggregate import Unrecorded, outcomes_by_suite
from pytest_agentbench.report.stats import (
    DEFAULT_LEVEL,
    FLOORED,
    Comparison,
    RunOutcome,
    SessionComparison,
    comparison_lines,
    compare_sessions,
    format_difference,
    format_p,
    points,
)
from pytest_agentbench.report.summary import fit

NAMES = ("baseline", "this run")


def load_session_document(path: Path) -> SessionResult:
    """Read an earlier `--agentbench-json` document (through `SessionResult.from_json`).

    Raises:
        ValueError: A sentence naming the file and what is wrong with it.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"--agentbench-compare {path}: no such file; pass a document written by --agentbench-json") from None
    except OSError as exc:
        raise ValueError(f"--agentbench-compare {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise ValueError(f"--agentbench-compare {path}: not JSON ({exc})") from None
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, list) or not all(isinstance(run, dict) and run.get("suite") for run in runs):
        raise ValueError(
            f"--agentbench-compare {path}: expected a session document written by --agentbench-json "
            "(an object whose \"runs\" list holds result.json documents)"
        )
    return SessionResult.from_json(data)


def _fingerprint_sets(results: Sequence[RunResult]) -> list[dict[str, Any]]:
    """The distinct fingerprint sets among runs, in first-seen order."""
    seen: dict[str, dict[str, Any]] = {}
    for result in results:
        current = result.fingerprints.comparable()
        seen.setdefault(json.dumps(current, sort_keys=True, default=str), current)
    return list(seen.values())


def fingerprint_flags(a: Sequence[RunResult], b: Sequence[RunResult]) -> tuple[ComparabilityFlag, ...]:
    """Every way B's setups differ from A's (`baseline.compare.comparability_flags` over each pair of distinct setups)."""
    flags: dict[tuple[str, str], ComparabilityFlag] = {}
    for old in _fingerprint_sets(a):
        for new in _fingerprint_sets(b):
            for flag in comparability_flags(old, new):
                flags.setdefault((flag.kind, flag.message), flag)
    return tuple(flags.values())


_INSTANCE_ID = re.compile(r"^r(\d+)-(.+)$")


def pairing_keys(instances: Sequence[str | None]) -> list[str | None]:
    """One suite's instance ids (`r3-42-Bob`) -> the keys its runs pair by: the values the id names and which run of them it is (`42-Bob#1`).

    A pair is two runs of the same task, whichever repeat drew it: the k-th run (by repeat) of some
    values on one side pairs with the k-th run of the same values on the other. Two sessions on
    one seed pair run for run, as their ids do; sessions on different seeds pair where their
    instances coincide. An id without values (`r3`, a suite without params) or no id gives None.
    """
    parsed = [_INSTANCE_ID.match(instance) if instance else None for instance in instances]
    order = sorted((index for index, match in enumerate(parsed) if match), key=lambda i: (parsed[i][2], int(parsed[i][1])))
    keys: list[str | None] = [None] * len(instances)
    seen: dict[str, int] = {}
    for index in order:
        values = parsed[index][2]
        seen[values] = seen.get(values, 0) + 1
        keys[index] = f"{values}#{seen[values]}"
    return keys


def _paired_by_values(by_suite: Mapping[str, Sequence[RunOutcome]]) -> dict[str, list[RunOutcome]]:
    return {suite: [replace(outcome, instance=key) for outcome, key in zip(outcomes, pairing_keys([o.instance for o in outcomes]))]
            for suite, outcomes in by_suite.items()}


@dataclass(frozen=True)
class ABReport:
    """The comparison of this session with an earlier one, with the flags per suite and both sessions' seeds."""

    path: Path
    comparison: SessionComparison
    flags: Mapping[str, tuple[ComparabilityFlag, ...]]
    #: The seeds of the baseline and of this session (None: not recorded).
    seeds: tuple[int | None, int | None] = (None, None)

    def seed_line(self) -> str | None:
        """The line saying the sessions ran different seeds (see `seed_line`); None when they did not."""
        return seed_line(*self.seeds)

    @property
    def overall_flags(self) -> dict[str, int]:
        """Flag kind -> how many compared suites carry it."""
        kinds: dict[str, int] = {}
        for flags in self.flags.values():
            for kind in dict.fromkeys(flag.kind for flag in flags):
                kinds[kind] = kinds.get(kind, 0) + 1
        return kinds


def seed_line(baseline: int | None, this: int | None) -> str | None:
    """The line saying two sessions drew different instances, and how to run the baseline's; None for one seed (or an unknown one)."""
    if baseline is None or this is None or baseline == this:
        return None
    return (f"seeds differ (baseline {baseline}, this run {this}): a suite's runs pair only where they drew the same "
            f"values, else it is compared unpaired; --agentbench-seed {baseline} runs the baseline's instances")


def compare_with(
    baseline: SessionResult,
    results: Sequence[RunResult],
    unrecorded: Sequence[Unrecorded] = (),
    *,
    path: Path,
    level: float = DEFAULT_LEVEL,
    seed: int | None = None,
) -> ABReport:
    """Compare this session's runs (B) with an earlier session document (A).

    Args:
        baseline: The earlier session document (`load_session_document`).
        results: This session's runs.
        unrecorded: This session's runs without a result (incomplete).
        path: Where the earlier document came from, for the text.
        level: Confidence level.
        seed: This session's seed, for the line that says the two seeds differ.

    Returns:
        The ABReport; a suite's runs pair up (by `pairing_keys`) only where both sides ran the same seeded instances.
    """
    runs_a = list(baseline.runs)
    unrecorded_a = [Unrecorded.from_json(entry) for entry in baseline.unrecorded]
    # One rule with the session line ("all suites"): a harness demo is compared on its own, never pooled.
    demos = {run.suite for run in (*runs_a, *results) if run.demo}
    comparison = compare_sessions(
        _paired_by_values(outcomes_by_suite(runs_a, unrecorded_a)), _paired_by_values(outcomes_by_suite(results, unrecorded)),
        level=level, names=NAMES, pooled_out=demos,
    )
    flags = {
        suite.suite: fingerprint_flags([r for r in runs_a if r.suite == suite.suite], [r for r in results if r.suite == suite.suite])
        for suite in comparison.suites
        if suite.suite is not None
    }
    return ABReport(Path(path), comparison, flags, (baseline.seed, seed))


def _block(comparison: Comparison, flags: Sequence[ComparabilityFlag], width: int) -> list[str]:
    lines = ["  " + line for line in comparison_lines(comparison, NAMES)]
    lines += [f"  flag: {flag.message}" for flag in flags]
    return [fit(line, width) for line in lines]


def compact_verdict(verdict: str) -> str:
    """The verdict without its parentheses and its "not a detectable difference" echo (what this N could detect is -v's).

    >>> compact_verdict("no detectable difference at this N (could detect a drop of about 62 points with 80% power; no rise)")
    'no detectable difference at this N'
    """
    clauses = re.sub(r" \([^()]*\)", "", verdict).split("; ")
    return "; ".join(clause for clause in clauses if not clause.startswith("not a detectable difference")) or verdict


def _compact(comparison: Comparison, flags: Sequence[ComparabilityFlag], width: int) -> list[str]:
    """One suite's comparison in two lines (the default verbosity): both counts, the difference, the test, the verdict."""
    def side(passed: int, judged: int, incomplete: int) -> str:
        return f"{passed}/{judged}" + (f" ({incomplete} incomplete)" if incomplete else "")

    design = "paired" if comparison.pairs is not None else "unpaired"
    test = "McNemar" if comparison.test == "mcnemar-exact" else "Fisher"
    head = (f"{comparison.suite}: {side(comparison.passed_a, comparison.judged_a, comparison.incomplete_a)} -> "
            f"{side(comparison.passed_b, comparison.judged_b, comparison.incomplete_b)}, {format_difference(comparison)}, "
            f"{test} {format_p(comparison.p_value)} ({design})")
    line = f"  {compact_verdict(comparison.verdict)}"
    if flags:
        line += f"; setups differ: {', '.join(FLAG_ABBREVIATIONS.get(flag.kind, flag.kind) for flag in flags)}"
    return [fit(head, width), fit(line, width)]


def render_comparison(report: ABReport, *, width: int = 80, verbose: bool = True) -> str:
    """The comparison section: each suite both sides ran, then the pooled overall comparison and the mean difference.

    With `verbose` off (the default verbosity) each suite takes two lines (both counts, the
    difference and the test; the verdict and the setups that differ); `-v` gives every suite both rates with intervals, the metric deltas and
    each flag's message.
    """
    comparison = report.comparison
    lines = [fit(f"baseline = {report.path}; this run = this session", width)]
    if report.seed_line():
        lines.append(fit(str(report.seed_line()), width))
    for suite in comparison.suites:
        if verbose:
            lines.append("")
            lines.append(str(suite.suite))
            lines += _block(suite, report.flags.get(str(suite.suite), ()), width)
        else:
            lines += _compact(suite, report.flags.get(str(suite.suite), ()), width)
    lines.append("")
    pooled = len(comparison.suites) - len(comparison.pooled_out)
    left_out = f"; demos left out, as in the session line: {', '.join(comparison.pooled_out)}" if comparison.pooled_out else ""
    lines.append(fit(f"overall (runs of the {pooled} suite(s) both sides ran, pooled{left_out})", width))
    lines += _block(comparison.overall, (), width)
    if comparison.mean_difference is not None:
        if comparison.mean_difference_interval is not None:
            interval = comparison.mean_difference_interval
            widened = ", widened to the suite-mean interval" if interval.method == FLOORED else ""
            shown = (f"{points(comparison.mean_difference)} points ({interval.level * 100:g}% CI {points(interval.low)} "
                     f"to {points(interval.high)}, clustered by suite, {len(comparison.suites)} suites{widened})")
        else:
            shown = f"{points(comparison.mean_difference)} points (one suite: no clustered interval)"
        lines.append(fit(f"  mean of the per-suite differences: {shown}", width))
    overall = report.overall_flags
    if overall:
        shown = ", ".join(f"{FLAG_ABBREVIATIONS.get(kind, kind)} ({count} suite{'s' if count > 1 else ''})" for kind, count in overall.items())
        lines.append(fit(f"  setups differ: {shown}; a difference may come from the setup, not the agent", width))
    if comparison.only_a:
        lines.append(fit(f"only in the baseline (not compared): {', '.join(comparison.only_a)}", width))
    if comparison.only_b:
        lines.append(fit(f"only in this run (not compared): {', '.join(comparison.only_b)}", width))
    return "\n".join(lines)


def _comparison_json(comparison: Comparison) -> dict[str, Any]:
    interval = comparison.interval
    pairs = comparison.pairs
    return {
        "design": comparison.design,
        "baseline": {"passed": comparison.passed_a, "judged": comparison.judged_a, "incomplete": comparison.incomplete_a,
                     "incompleteAgent": comparison.incomplete_agent_a},
        "thisRun": {"passed": comparison.passed_b, "judged": comparison.judged_b, "incomplete": comparison.incomplete_b,
                    "incompleteAgent": comparison.incomplete_agent_b},
        "pairs": None if pairs is None else {
            "both": pairs.both, "baselineOnly": pairs.a_only, "thisRunOnly": pairs.b_only,
            "neither": pairs.neither, "dropped": pairs.dropped, "unmatched": pairs.unmatched,
        },
        "difference": comparison.difference,
        "interval": None if interval is None else {"low": interval.low, "high": interval.high, "level": interval.level, "method": interval.method},
        "test": comparison.test,
        "pValue": comparison.p_value,
        "detectableDifference": comparison.detectable,
        "detectableDrop": comparison.detectable_drop,
        "detectableRise": comparison.detectable_rise,
        "power": comparison.power,
        "metricDeltas": dict(comparison.metric_deltas),
        "metricDeltasOver": "passed runs",
        "verdict": comparison.verdict,
    }


def comparison_block(report: ABReport) -> dict[str, Any]:
    """The session document's `comparison`: per suite, overall, the mean difference, the flags."""
    comparison = report.comparison
    interval = comparison.mean_difference_interval
    return {
        "baseline": str(report.path),
        "seeds": {"baseline": report.seeds[0], "thisRun": report.seeds[1]},
        "suites": {
            str(suite.suite): {
                **_comparison_json(suite),
                "flags": [{"kind": flag.kind, "message": flag.message} for flag in report.flags.get(str(suite.suite), ())],
            }
            for suite in comparison.suites
        },
        "overall": _comparison_json(comparison.overall),
        # Compared above, left out of `overall` and the mean (harness demos, as in the session line).
        "notPooled": list(comparison.pooled_out),
        "meanDifference": comparison.mean_difference,
        "meanDifferenceInterval": None if interval is None else {"low": interval.low, "high": interval.high, "level": interval.level, "method": interval.method},
        "onlyInBaseline": list(comparison.only_a),
        "onlyInThisRun": list(comparison.only_b),
    }
