"""`--agentbench-html PATH` -> the HtmlReport plugin: renders the session's page at sessionfinish and names it in the summary.

As pytest-html does: `plugin.pytest_configure` registers one HtmlReport (never on an xdist
worker, whose reports reach the controller anyway), the page is rendered once at
`pytest_sessionfinish` from the session document, and the terminal summary gets one
`write_sep` line naming the file.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pytest_agentbench.session import session_key

PLUGIN_NAME = "agentbench-html"


class HtmlReport:
    """Owns the page for one session: built at configure, written at sessionfinish, named in the summary."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config = config
        self.path = path
        self.seconds: float | None = None
        self.problem: str | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # Imported here: jinja2 is loaded only by sessions that ask for the page.
        from pytest_agentbench.report.html import write_html_report

        started = time.perf_counter()
        try:
            write_html_report(self.config.stash[session_key].session_document(), self.path)
        except OSError as exc:
            self.problem = f"could not write {self.path}: {exc.strerror or exc}"
            return
        self.seconds = time.perf_counter() - started

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.config.get_verbosity() < 0:
            return
        if self.problem:
            terminalreporter.write_sep("-", f"agentbench html report: {self.problem}", red=True)
        elif self.seconds is not None:
            terminalreporter.write_sep("-", f"agentbench html report: {self.path.as_uri()} ({self.seconds:.1f} s)")


def register(config: pytest.Config) -> None:
    """Register the HtmlReport when `--agentbench-html` is given, except on xdist workers."""
    path = config.stash[session_key].options.html_path
    if path is None or hasattr(config, "workerinput"):
        return
    config.pluginmanager.register(HtmlReport(config, path), PLUGIN_NAME)


def unregister(config: pytest.Config) -> None:
    """Drop the HtmlReport at unconfigure."""
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if plugin is not None:
        config.pluginmanager.unregister(plugin)
