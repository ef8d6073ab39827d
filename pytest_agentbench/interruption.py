"""pytest's collection, reports and exit status -> the session's interruption record: that it ended early, why, and which runs never ran.

A session stopped by Ctrl+C (or SIGTERM, SIGHUP, `-x`, `--maxfail`) holds fewer runs than it
collected; its document says so (`interrupted` in the session document), so it is never read
as a whole session, and never accepted as a comparison baseline (`report/baseline_check.py`).
"""

from __future__ import annotations

import signal
from typing import Any

import pytest

from pytest_agentbench.run.execute import shutdown

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
