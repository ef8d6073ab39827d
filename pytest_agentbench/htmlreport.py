"""`--agentbench-html PATH` -> the HtmlReport plugin: renders the session's page at sessionfinish and names it last in the terminal.

As pytest-html does: `plugin.pytest_configure` registers one HtmlReport (never on an xdist
worker, whose reports reach the controller anyway) and the page is rendered once at
`pytest_sessionfinish` from the session document. Unlike pytest-html, the line naming the file
is written at `pytest_unconfigure`, after pytest's closing summary line, so it is the last
line of the session's output.
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

    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        # The page's line is the terminal's last: after the agentbench summary, pytest's short
        # summary and its closing "N passed" line, where a user looks once the session ends.
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or config.get_verbosity() < 0:
            return
        if self.problem:
            reporter.write_line(f"agentbench html report: {self.problem}", red=True)
        elif self.seconds is not None:
            reporter.write_line(f"agentbench html report: {self.path.as_uri()} ({self.seconds:.1f} s)")


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
