"""Failed runs' pytest reports -> pytest's failures section and short summary with one report per first reason (the default verbosity).

An A/B of 80 runs in which 60 fail the same way would otherwise print 60 reports of a dozen
lines and 60 short-summary lines, and bury the statistics. At the default verbosity the first
failed run of each first reason keeps its report, which ends with a line naming the others; the
others are left out of pytest's failures section and short summary, which gets one
`FAILED [59] same first reason as ...` line per reason instead. The agentbench section groups
every run that did not pass by first reason. `-v`, `--tb=long` and `-rA` print every report and
every line as pytest does. Only the terminal changes: each report keeps its own text, so JUnit,
result.json and the HTML page carry every failure.

pytest has no hook to choose which reports its summary shows, so while it writes its summary the
fold leaves the folded reports out of the terminal reporter's `stats["failed"]`, and puts them
back before pytest's final line (`60 failed, 20 passed`), which counts every one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Sequence
from typing import Any

import pytest
from _pytest._io import TerminalWriter
from _pytest._code.code import TerminalRepr

from pytest_agentbench.report.summary import fit, runs_named
from pytest_agentbench.session import session_key

PLUGIN_NAME = "agentbench-failure-fold"


def fold_plan(reasons: Sequence[str | None]) -> dict[int, list[int]]:
    """The failures in report order, by first reason (None: never folded) -> each shown failure's index and the indexes folded under it.

    >>> fold_plan(["a", "b", "a", None, "a", None])
    {0: [2, 4], 1: [], 3: [], 5: []}
    """
    plan: dict[int, list[int]] = {}
    first: dict[str, int] = {}
    for index, reason in enumerate(reasons):
        if reason is not None and reason in first:
            plan[first[reason]].append(index)
            continue
        plan[index] = []
        if reason is not None:
            first[reason] = index
    return plan


def folds(config: pytest.Config, reportchars: str) -> bool:
    """The default verbosity folds; `-v`, `--tb=long` and `-rA` (or `-rp`, which list passes too) print every failure."""
    return config.get_verbosity() <= 0 and config.option.tbstyle != "long" and not any(char in reportchars for char in "pP")


def run_name(nodeid: str) -> str:
    """`suites/a.yml::bug-repro[r3]` -> `bug-repro[r3]`: the run as the agentbench section names it."""
    return nodeid.rsplit("::", 1)[-1]


def folded_note(labels: Sequence[str], width: int) -> str:
    """The line under a shown report that counts the failed runs with the same first reason (the summary names them)."""
    runs = f"{len(labels)} more failed run{'s' if len(labels) != 1 else ''}"
    return fit(f"and {runs} with this first reason, not printed (-v prints each)", width)


def summary_line(shown: str, labels: Sequence[str], width: int) -> str:
    """`FAILED [59] same first reason as bug-repro[r1]: bug-repro 29, ux-flow 30`, cut to one line as pytest cuts its own."""
    line = f"FAILED [{len(labels)}] same first reason as {shown}: {runs_named(labels)}"
    return line if len(line) <= width else line[: width - 3] + "..."


@dataclasses.dataclass(eq=False)
class FoldedFailure(TerminalRepr):
    """A shown failure's report with the note naming the runs folded under it; its one-line form stays the run's own."""

    shown: Any
    note: str
    reprcrash: Any

    def toterminal(self, tw: TerminalWriter) -> None:
        if hasattr(self.shown, "toterminal"):
            self.shown.toterminal(tw)
        else:
            tw.line(str(self.shown))
        for line in self.note.splitlines():
            tw.line(line)


class FailureFold:
    """The plugin that folds a session's failed runs by first reason while pytest writes its summary."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def first_reason(self, report: pytest.TestReport) -> str | None:
        """A failed run's first reason; None for a failure that is not a run's failed verdict (never folded)."""
        result = self.config.stash[session_key].result_of.get(report.nodeid)
        if report.when != "call" or result is None or result.status != "failed":
            return None
        return result.verdict.reasons[0] if result.verdict.reasons else "no reason recorded"

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> Generator[None, None, None]:
        failed = list(terminalreporter.stats.get("failed", []))
        if not failed or not folds(self.config, terminalreporter.reportchars):
            return (yield)
        plan = fold_plan([self.first_reason(report) for report in failed])
        groups = [(failed[shown], [run_name(failed[index].nodeid) for index in later]) for shown, later in plan.items() if later]
        if not groups:
            return (yield)
        width = min(terminalreporter._tw.fullwidth, 120)
        originals = {id(report): report.longrepr for report, _ in groups}
        if self.config.option.tbstyle not in ("line", "no"):
            # --tb=line prints each shown failure's one line after its text: a note there would come first.
            for report, labels in groups:
                report.longrepr = FoldedFailure(report.longrepr, folded_note(labels, width), getattr(report.longrepr, "reprcrash", None))
        terminalreporter.stats["failed"] = [failed[shown] for shown in plan]
        try:
            return (yield)
        finally:
            terminalreporter.stats["failed"] = failed
            for report, _ in groups:
                report.longrepr = originals[id(report)]
            if "f" in terminalreporter.reportchars and not terminalreporter.no_summary:
                for report, labels in groups:
                    line = summary_line(run_name(report.nodeid), labels, width)
                    terminalreporter.write_line(terminalreporter._tw.markup("FAILED", red=True) + line[len("FAILED"):])
