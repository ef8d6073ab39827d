"""pytest's collection, reports and exit status -> the session's interruption record: that it ended early, why, and which runs never ran; its one line on the terminal.

A session stopped by Ctrl+C (or SIGTERM, SIGHUP, `-x`, `--maxfail`) holds fewer runs than it
collected; its document says so (`interrupted` in the session document), so it is never read
as a whole session, and never accepted as a comparison baseline (`report/baseline_check.py`).
The terminal says it in one line (`agentbench: interrupted by SIGINT: 3 of 27 runs finished (2
passed, 1 failed); 24 did not run`), and pytest's KeyboardInterrupt line names no frame of this
package: the signal handler raised it, which is no fault of the code it interrupted.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.run.execute import shutdown

#: This package's directory: frames under it are left out of pytest's KeyboardInterrupt line.
PACKAGE_DIR = Path(__file__).resolve().parent
#: The order the finished runs' outcomes are listed in.
OUTCOMES = ("passed", "failed", "incomplete", "error", "skipped")

PLUGIN_NAME = "agentbench-interruption"
#: Every suite run's node id names its YAML file (`suites/a.yml::a[r2]`); under xdist the
#: controller sees only ids, so this is how a run is told from a Python test.
SUITE_NODE_MARK = ".yml::"


def is_run(nodeid: str) -> bool:
    """Whether a node id is a suite run (not a Python test using the fixtures)."""
    return SUITE_NODE_MARK in nodeid


class RunLedger:
    """The runs collected and the runs that got as far as a verdict, error or skip (a pytest plugin)."""

    def __init__(self) -> None:
        self.collected: list[str] = []
        self.reported: set[str] = set()
        #: Each finished run's outcome: passed, failed, incomplete (an xfail), error (its setup failed) or skipped.
        self.outcomes: dict[str, str] = {}
        self.session: pytest.Session | None = None

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = [item.nodeid for item in session.items if is_run(item.nodeid)]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # The controller collects nothing itself; every worker collects the same ids.
        if not self.collected:
            self.collected = [nodeid for nodeid in ids if is_run(nodeid)]

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # A run ran when it got a call report, or its setup failed or skipped (it will get no call).
        if report.when == "call" or report.outcome != "passed":
            self.reported.add(report.nodeid)
            self.outcomes.setdefault(report.nodeid, _outcome(report))

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        # Before the terminal reporter renders it: its location line is the last frame left.
        if self.session is None or self.session.config.option.fulltrace:
            return
        kept = excinfo.traceback.filter(lambda entry: not _in_package(entry.path))
        if len(kept):
            excinfo.traceback = kept

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        line = self.line()
        if line is not None and terminalreporter.config.get_verbosity() >= 0:
            terminalreporter.write_line(line, yellow=True, bold=True)

    def line(self) -> str | None:
        """The terminal's line for a session that ended early: what stopped it, the runs that finished and those that did not."""
        record = self.record()
        if record is None:
            return None
        by, total, not_run = record["by"], record["runsCollected"], len(record["notRun"])
        how = f"interrupted by {by}" if by in ("SIGINT", "SIGTERM", "SIGHUP", "KeyboardInterrupt") else f"stopped ({by})"
        counts = Counter(outcome for nodeid, outcome in self.outcomes.items() if nodeid in set(self.collected))
        finished = total - not_run
        detail = ", ".join(f"{counts[outcome]} {outcome}" for outcome in OUTCOMES if counts[outcome])
        return (f"agentbench: {how}: {finished} of {total} run{'' if total == 1 else 's'} finished"
                f"{f' ({detail})' if detail else ''}; {not_run} did not run")

    def record(self) -> dict[str, Any] | None:
        """The `interrupted` block of the session document, or None for a session that ran to its end."""
        session = self.session
        if session is None:
            return None
        signum = shutdown.signal_received()
        stopped = session.shouldstop or session.shouldfail
        if signum is not None:
            by = signal.Signals(signum).name
        elif session.exitstatus == pytest.ExitCode.INTERRUPTED:
            by = "KeyboardInterrupt"
        elif stopped:
            by = str(stopped)
        else:
            return None
        not_run = [nodeid for nodeid in self.collected if nodeid not in self.reported]
        return {"by": by, "runsCollected": len(self.collected), "notRun": not_run}


def _outcome(report: pytest.TestReport) -> str:
    if report.when != "call" and report.failed:
        return "error"
    if report.skipped:
        return "incomplete" if hasattr(report, "wasxfail") else "skipped"
    return report.outcome


def _in_package(path: Path | str) -> bool:
    try:
        return Path(path).resolve().is_relative_to(PACKAGE_DIR)
    except (OSError, ValueError):
        return False
