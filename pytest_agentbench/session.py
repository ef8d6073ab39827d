"""pytest config -> AgentbenchSession: options read once, the server profile, results gathered from reports, the summary."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.errors import ConfigError, SavedRunError
from pytest_agentbench.options import AgentbenchOptions
from pytest_agentbench.records.result import RunResult
from pytest_agentbench.report.ab import ABReport, comparison_block, compare_with, load_session_document, render_comparison
from pytest_agentbench.report.aggregate import (
    SessionStatistics,
    Unrecorded,
    junit_properties,
    render_statistics,
    session_statistics,
    statistics_block,
)
from pytest_agentbench.report.baseline_check import baseline_refusal
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
#: User properties every suite item carries from its creation (setup reports too).
SUITE_PROPERTY = "agentbench_suite"
INSTANCE_PROPERTY = "agentbench_instance"


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
        # A dry run, a re-render, a prove and the doctor run no agent, so only a measured run refuses a stale build.
        measures = not self.options.dry_run and not self.options.from_results and not self.options.prove and not self.options.doctor
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
        # Suite items whose run failed before it wrote a result (setup error, crash), by node id.
        self.unrecorded: dict[str, Unrecorded] = {}
        self.started_at = _now()
        self.baseline_session: dict[str, Any] | None = None
        if self.options.compare_path is not None:
            try:
                self.baseline_session = load_session_document(self.options.compare_path)
            except ValueError as exc:
                raise pytest.UsageError(str(exc)) from None
            refusal = baseline_refusal(self.baseline_session, self.options.compare_path)
            if refusal:
                raise pytest.UsageError(refusal)

    def is_suite_dir(self, name: str) -> bool:
        """Tell whether a directory name marks its ``*.yml`` files as suites."""
        return name in self.options.suite_dirs

    def dry_run_text(self, suite: Suite) -> str:
        """Describe the run a suite would start (see ``dryrun.dry_run_text``)."""
        return dry_run_text(suite, options=self.options, profile=self.profile, environ=current_environ())

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        if report.failed and report.when in ("setup", "call") and SUITE_PROPERTY in properties and RESULT_PROPERTY not in properties:
            # No result document: the statistics count it as incomplete rather than lose it.
            self.unrecorded[report.nodeid] = Unrecorded(
                report.nodeid, properties[SUITE_PROPERTY], properties.get(INSTANCE_PROPERTY), f"{report.when}: {_failure_reason(report)}"
            )
        if report.when != "call":
            return
        # add_report_section(when, key, text) stores ("Captured {key} {when}", text).
        for key, text in report.sections:
            if key == f"Captured {DRY_RUN_SECTION} call":
                self.dry_runs.append((report.nodeid, text))
        path = properties.get(RESULT_PROPERTY)
        result = _load_result(path) if path else None
        if result is not None:
            self.results.append(result)
            self.unrecorded.pop(report.nodeid, None)

    def statistics(self) -> SessionStatistics:
        """This session's per-suite statistics (runs without a result count as incomplete)."""
        return session_statistics(self.results, list(self.unrecorded.values()))

    def comparison(self) -> ABReport | None:
        """This session against the `--agentbench-compare` document, or None."""
        if self.baseline_session is None or self.options.compare_path is None:
            return None
        return compare_with(self.baseline_session, self.results, list(self.unrecorded.values()), path=self.options.compare_path)

    def session_document(self) -> dict[str, Any]:
        """The session document (`--agentbench-json` writes it; the HTML report renders it)."""
        comparison = self.comparison()
        return build_session_document(
            self.results, started_at=self.started_at, finished_at=_now(), seed=self.options.seed,
            repeat=self.options.repeat, statistics=statistics_block(self.statistics()),
            unrecorded=[run.to_json() for run in self.unrecorded.values()],
            comparison=comparison_block(comparison) if comparison is not None else None,
            interrupted=_interruption(self.config),
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # tryfirst: the suite-level JUnit properties must be in place before junitxml writes its file.
        if hasattr(self.config, "workerinput"):
            return
        # An incomplete run is reported as xfail, yet the seed's harness exits 1 for it.
        if exitstatus == 0 and any(verdict_status(result) != "passed" for result in self.results):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if not self.results and not self.unrecorded and _interruption(self.config) is None:
            return
        statistics = self.statistics()
        _add_junit_properties(self.config, [("agentbench.seed", str(self.options.seed)), *junit_properties(statistics)])
        if self.options.json_path is not None or self.options.json_stdout:
            text = json.dumps(self.session_document(), indent=2, ensure_ascii=False) + "\n"
            if self.options.json_stdout:
                # pytest's report was sent to stderr (plugin.py), so stdout holds the document alone.
                sys.stdout.write(text)
                sys.stdout.flush()
            else:
                self.options.json_path.parent.mkdir(parents=True, exist_ok=True)
                self.options.json_path.write_text(text, encoding="utf-8")

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.config.get_verbosity() < 0:
            return
        if self.dry_runs:
            terminalreporter.write_sep("=", DRY_RUN_SECTION)
            for nodeid, text in self.dry_runs:
                terminalreporter.write_sep("-", nodeid)
                terminalreporter.write_line(text)
        if not self.results and not self.unrecorded:
            return
        # The default `-r fE` hides xfails, so incomplete runs would vanish without this section.
        terminalreporter.write_sep("=", "agentbench")
        width = min(terminalreporter._tw.fullwidth, 120)
        for result in self.results:
            # Wrapped, not cut as pytest's short summary cuts: the reason is the point of this line.
            terminalreporter.write_line(fit(verdict_line(result), width))
        if self.results:
            terminalreporter.write_line("")
            terminalreporter.write_line(render_summary_table(self.results, width=width))
        unconfined = unconfined_line(self.results)
        if unconfined:
            terminalreporter.write_line("")
            terminalreporter.write_line(fit(unconfined, width), yellow=True, bold=True)
        if self.config.get_verbosity() > 0 and self.results:
            terminalreporter.write_line("")
            terminalreporter.write_line(render_verbose_details(self.results, width=width))
        terminalreporter.write_sep("-", "agentbench statistics")
        terminalreporter.write_line(render_statistics(self.statistics(), width=width))
        comparison = self.comparison()
        if comparison is not None:
            terminalreporter.write_sep("-", "agentbench comparison")
            terminalreporter.write_line(render_comparison(comparison, width=width))


def unconfined_line(results: list[dict]) -> str | None:
    """The summary's warning when runs were not confined (`sandbox.mode` off), with why; None when every run was."""
    off = [result for result in results if (result.get("sandbox") or {}).get("mode") == "off"]
    if not off:
        return None
    reasons = sorted({(result.get("sandbox") or {}).get("reason") or "unknown" for result in off})
    return (f"UNCONFINED: {len(off)} of {len(results)} runs ran without the sandbox ({'; '.join(reasons)}): "
            "their agents could reach the device, the host and the suites directly (docs/isolation.md)")


def _add_junit_properties(config: pytest.Config, properties: list[tuple[str, str]]) -> None:
    """Suite-level JUnit properties (what `record_testsuite_property` writes), when --junitxml is on."""
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    for name, value in properties:
        xml.add_global_property(name, value)


def _failure_reason(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = (crash.message if crash is not None else str(report.longrepr or "")).strip()
    return text.splitlines()[0] if text else "no reason recorded"


def _load_result(path: str) -> dict[str, Any] | None:
    # Read through the one reader of result.json; the summary's sections still take its JSON form.
    try:
        return RunResult.read(Path(path)).to_json()
    except SavedRunError:
        return None


def _interruption(config: pytest.Config) -> dict[str, Any] | None:
    """The session document's `interrupted` block (see interruption.py), None for a session that ran to its end."""
    ledger = config.pluginmanager.get_plugin("agentbench-interruption")
    return ledger.record() if ledger is not None else None


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
