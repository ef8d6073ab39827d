"""pytest config -> AgentbenchSession: the options read once, the server profile, the dry-run summary."""

from __future__ import annotations

import pytest

from pytest_agentbench.dryrun import SECTION as DRY_RUN_SECTION
from pytest_agentbench.dryrun import current_environ, dry_run_text
from pytest_agentbench.errors import ConfigError
from pytest_agentbench.options import AgentbenchOptions
from pytest_agentbench.servers import ServerProfile, get_profile
from pytest_agentbench.suite import Suite

session_key = pytest.StashKey["AgentbenchSession"]()


class AgentbenchSession:
    """The plugin's state for one pytest session.

    Built in ``pytest_configure`` (also on xdist workers, whose items need the options), kept
    under ``session_key`` and registered as a plugin so its hook methods run. It works from
    reports, not items, so the summary is the same with and without xdist.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = AgentbenchOptions.from_config(config)
        try:
            self.profile: ServerProfile = get_profile(self.options.server, automobile_dir=self.options.automobile_dir)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from exc
        if self.options.server_instructions and not self.profile.instructions_env:
            raise pytest.UsageError(
                f"--server-instructions: the {self.profile.name} MCP server (agentbench_server) has no "
                "instructions switch; drop the option or choose agentbench_server = agentbench"
            )
        self.dry_runs: list[tuple[str, str]] = []

    def is_suite_dir(self, name: str) -> bool:
        """Tell whether a directory name marks its ``*.yml`` files as suites."""
        return name in self.options.suite_dirs

    def dry_run_text(self, suite: Suite) -> str:
        """Describe the run a suite would start (see ``dryrun.dry_run_text``)."""
        return dry_run_text(suite, options=self.options, profile=self.profile, environ=current_environ())

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        # add_report_section(when, key, text) stores ("Captured {key} {when}", text).
        for key, text in report.sections:
            if key == f"Captured {DRY_RUN_SECTION} call":
                self.dry_runs.append((report.nodeid, text))

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.dry_runs or self.config.get_verbosity() < 0:
            return
        terminalreporter.write_sep("=", DRY_RUN_SECTION)
        for nodeid, text in self.dry_runs:
            terminalreporter.write_sep("-", nodeid)
            terminalreporter.write_line(text)
