"""pytest config -> AgentbenchSession: options read once, the server profile, results gathered from reports, the summary."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.errors import ConfigError
from pytest_agentbench.options import AgentbenchOptions
from pytest_agentbench.report.document import build_session_document, verdict_status
from pytest_agentbench.report.summary import fit, render_summary_table, render_verbose_details, verdict_line
from pytest_agentbench.run.artifacts import agent_workdir_parent
from pytest_agentbench.run.dryrun import SECTION as DRY_RUN_SECTION
from pytest_agentbench.run.dryrun import current_environ, dry_run_text
from pytest_agentbench.servers import ServerProfile, get_profile
from pytest_agentbench.suite import Suite

session_key = pytest.StashKey["AgentbenchSession"]()

#: The user property naming a run's result.json; reports carry it across xdist workers.
RESULT_PROPERTY = "agentbench_result_json"


class AgentbenchSession:
    """The plugin's state for one pytest session.

    Built in ``pytest_configure`` (also on xdist workers, whose items need the options), kept
    under ``session_key`` and registered as a plugin so its hook methods run. It works from
    reports, not items, so the summary is the same with and without xdist: each run's report
    names its result.json (a user property), which the summary and ``--agentbench-json`` read.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = AgentbenchOptions.from_config(config)
        try:
            self.profile: ServerProfile = get_profile(self.options.server, automobile_dir=self.options.automobile_dir)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from exc
        # A dry run and a re-render run nothing, so only a measured run refuses a stale build.
        measures = not self.options.dry_run and not self.options.from_results
        stale = self.profile.stale_build() if self.profile.stale_build and measures else None
        if stale:
            raise pytest.UsageError(f"agentbench_server = {self.profile.name}: {stale}")
        if measures:
            try:
                agent_workdir_parent(config.rootpath)
            except ConfigError as exc:
                raise pytest.UsageError(str(exc)) from None
        if self.options.server_instructions and not self.profile.instructions_env:
            raise pytest.UsageError(
                f"--server-instructions: the {self.profile.name} MCP server (agentbench_server) has no "
                "instructions switch; drop the option or choose agentbench_server = agentbench"
            )
        self.dry_runs: list[tuple[str, str]] = []
        self.results: list[dict[str, Any]] = []
        self.started_at = _now()

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
        path = dict(report.user_properties).get(RESULT_PROPERTY)
        result = _load_result(path) if path else None
        if result is not None:
            self.results.append(result)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(self.config, "workerinput"):
            return
        # An incomplete run is reported as xfail, yet the seed's harness exits 1 for it.
        if exitstatus == 0 and any(verdict_status(result) != "passed" for result in self.results):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.options.json_path is not None:
            document = build_session_document(self.results, started_at=self.started_at, finished_at=_now())
            self.options.json_path.parent.mkdir(parents=True, exist_ok=True)
            self.options.json_path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.config.get_verbosity() < 0:
            return
        if self.dry_runs:
            terminalreporter.write_sep("=", DRY_RUN_SECTION)
            for nodeid, text in self.dry_runs:
                terminalreporter.write_sep("-", nodeid)
                terminalreporter.write_line(text)
        if not self.results:
            return
        # The default `-r fE` hides xfails, so incomplete runs would vanish without this section.
        terminalreporter.write_sep("=", "agentbench")
        width = min(terminalreporter._tw.fullwidth, 120)
        for result in self.results:
            # Wrapped, not cut as pytest's short summary cuts: the reason is the point of this line.
            terminalreporter.write_line(fit(verdict_line(result), width))
        terminalreporter.write_line("")
        terminalreporter.write_line(render_summary_table(self.results, width=width))
        if self.config.get_verbosity() > 0:
            terminalreporter.write_line("")
            terminalreporter.write_line(render_verbose_details(self.results, width=width))


def _load_result(path: str) -> dict[str, Any] | None:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
