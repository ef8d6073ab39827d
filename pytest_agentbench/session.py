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
from pytest_agentbench.records.result import RunResult, SessionResult
from pytest_agentbench.report.ab import ABReport, comparison_block, compare_with, load_session_document
from pytest_agentbench.report.aggregate import SessionStatistics, Unrecorded, junit_properties, session_statistics, statistics_block
from pytest_agentbench.report.baseline_check import baseline_refusal
from pytest_agentbench.report.summary import render_proofs
from pytest_agentbench.report.terminal import render_section
from pytest_agentbench.run.execute import DRY_RUN_SECTION, agent_workdir_parent, current_environ, dry_run_text
from pytest_agentbench.servers import ServerProfile, get_profile
from pytest_agentbench.sessionseed import WORKER_KEY, remember, resolve
from pytest_agentbench.suite import Suite
from pytest_agentbench.usage import informational, named_paths, names_suites

session_key = pytest.StashKey["AgentbenchSession"]()

#: The user property naming a run's result.json; reports carry it across xdist workers.
RESULT_PROPERTY = "agentbench_result_json"
#: User properties every suite item carries from its creation (setup reports too).
SUITE_PROPERTY = "agentbench_suite"
INSTANCE_PROPERTY = "agentbench_instance"
#: The user property of a suite file that does not load (items.InvalidSuiteItem): its problems.
INVALID_SUITE_PROPERTY = "agentbench_invalid_suite"


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
        #: Where `--agentbench-json PATH` wrote the session document (said in the summary).
        self.json_written: Path | None = None
        try:
            self.profile: ServerProfile = get_profile(self.options.server, automobile_dir=self.options.automobile_dir)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from exc
        # A dry run, a re-render, a prove, the doctor and an informational command (--co, --fixtures,
        # --help) run no agent, so only a measured run refuses a stale build.
        measures = (not self.options.dry_run and not self.options.from_results and not self.options.prove
                    and not self.options.doctor and not informational(config))
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
        self.results: list[RunResult] = []
        # Each run's result by its report's node id (a re-rendered run's differs from the one it records).
        self.result_of: dict[str, RunResult] = {}
        # Suite items whose run failed before it wrote a result (setup error, crash), by node id.
        self.unrecorded: dict[str, Unrecorded] = {}
        # Suite files that do not load, by node id: their problems (from the reports, or the items under --co).
        self.invalid: dict[str, str] = {}
        # `--agentbench-prove`: each proof's (suite, item name, why it is not proven: "" when it is, None
        # when skipped) by node id. A proof is not a run: never counted as one; its summary says what was not proven.
        self.proofs: dict[str, tuple[str, str, str | None]] = {}
        self.started_at = _now()
        # Whether a suite's item ran (its reports carry the suite): only then is the seed kept for a rerun.
        self.ran_suites = False
        self.baseline_session: SessionResult | None = None
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
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        # Saved runs carry their own seeds; a session naming no suite draws no instance.
        norecurse = tuple(config.getini("norecursedirs") or ())
        if self.options.from_results or not names_suites(named_paths(config), self.options.suite_dirs, norecurse):
            return []
        return [resolve(config).header_line()]

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        # pytest-xdist: every worker draws the controller's instances, so their items agree.
        node.workerinput[WORKER_KEY] = self.options.seed

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:
            # --co runs nothing, so no report names them: list them from the items.
            for item in session.items:
                problems = dict(getattr(item, "user_properties", ())).get(INVALID_SUITE_PROPERTY)
                if problems is not None:
                    self.invalid[item.nodeid] = problems

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        self.ran_suites = self.ran_suites or SUITE_PROPERTY in properties
        if report.failed and INVALID_SUITE_PROPERTY in properties:
            self.invalid[report.nodeid] = properties[INVALID_SUITE_PROPERTY]
        if self.options.prove and SUITE_PROPERTY in properties:
            name = report.nodeid.rpartition("::")[2]
            if report.failed and report.when in ("setup", "call"):
                self.proofs[report.nodeid] = (properties[SUITE_PROPERTY], name, _failure_reason(report, item_name=name))
            elif report.passed and report.when == "call":
                self.proofs.setdefault(report.nodeid, (properties[SUITE_PROPERTY], name, ""))
            elif report.skipped:
                self.proofs.setdefault(report.nodeid, (properties[SUITE_PROPERTY], name, None))
            return
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
            self.result_of[report.nodeid] = result
            self.unrecorded.pop(report.nodeid, None)

    def statistics(self) -> SessionStatistics:
        """This session's per-suite statistics (runs without a result count as incomplete)."""
        return session_statistics(self.results, list(self.unrecorded.values()))

    def comparison(self) -> ABReport | None:
        """This session against the `--agentbench-compare` document, or None."""
        if self.baseline_session is None or self.options.compare_path is None:
            return None
        return compare_with(self.baseline_session, self.results, list(self.unrecorded.values()), path=self.options.compare_path,
                            seed=self.options.seed)

    def session_result(self) -> SessionResult:
        """This session as `--agentbench-json` writes it: every run, the runs without a result, statistics, the comparison."""
        comparison = self.comparison()
        return SessionResult.of(
            self.results, started_at=self.started_at, finished_at=_now(), seed=self.options.seed,
            seed_source=resolve(self.config).source,
            repeat=self.options.repeat, statistics=statistics_block(self.statistics()),
            unrecorded=tuple(run.to_json() for run in self.unrecorded.values()),
            comparison=comparison_block(comparison) if comparison is not None else None,
            interrupted=_interruption(self.config),
            invalid_suites=tuple({"nodeid": nodeid, "problems": problems} for nodeid, problems in self.invalid.items()),
        )

    def session_document(self) -> dict[str, Any]:
        """The session document (`--agentbench-json` writes it; the HTML report renders it)."""
        return self.session_result().to_json()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # tryfirst: the suite-level JUnit properties must be in place before junitxml writes its file.
        if hasattr(self.config, "workerinput"):
            return
        if self.ran_suites:
            remember(self.config, self.options.seed)
        # An incomplete run is reported as xfail, yet the seed's harness exits 1 for it; a suite
        # that does not load fails `--co` too (it ran nothing, but a suite is broken).
        if exitstatus == 0 and (any(result.status != "passed" for result in self.results) or self.invalid):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if not self.results and not self.unrecorded and not self.invalid and _interruption(self.config) is None:
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
                self.json_written = self.options.json_path

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        self._write_summary(terminalreporter)
        if self.json_written is not None and self.config.get_verbosity() >= 0:
            # Said as the HTML report says where it wrote (htmlreport.py).
            terminalreporter.write_line(f"agentbench json: {_shown_path(self.json_written, self.config.invocation_params.dir)}")

    def _write_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.invalid and self.config.get_verbosity() == -1 and self.config.option.collectonly:
            # `--co -q` lists node ids only: a broken suite is an error, said even there.
            self._write_invalid(terminalreporter)
        if self.config.get_verbosity() < 0:
            return
        if self.dry_runs:
            terminalreporter.write_sep("=", DRY_RUN_SECTION)
            for nodeid, text in self.dry_runs:
                terminalreporter.write_sep("-", nodeid)
                terminalreporter.write_line(text)
        if not self.results and not self.unrecorded and not self.invalid and not self.proofs:
            return
        # The default `-r fE` hides xfails, so incomplete runs would vanish without this section.
        terminalreporter.write_sep("=", "agentbench")
        self._write_invalid(terminalreporter)
        if self.proofs:
            terminalreporter.write_line(render_proofs(list(self.proofs.values()), width=min(terminalreporter._tw.fullwidth, 120)))
        if not self.results and not self.unrecorded:
            return
        width = min(terminalreporter._tw.fullwidth, 120)
        reportchars = str(getattr(self.config.option, "reportchars", "") or "")
        parts = render_section(
            self.results, self.statistics(), self.comparison(), width=width,
            verbose=self.config.get_verbosity() > 0, show_passes=any(char in reportchars for char in "ApP"),
        )
        for part in parts:
            if part.kind == "rule":
                terminalreporter.write_sep("-", part.text)
            else:
                terminalreporter.write_line(part.text, **({"yellow": True, "bold": True} if part.kind == "warning" else {}))

    def _write_invalid(self, terminalreporter: pytest.TerminalReporter) -> None:
        for nodeid, problems in self.invalid.items():
            first, *rest = problems.splitlines() or [""]
            terminalreporter.write_line(f"INVALID {nodeid} - {first}", red=True)
            for line in rest:
                terminalreporter.write_line(line)


def _add_junit_properties(config: pytest.Config, properties: list[tuple[str, str]]) -> None:
    """Suite-level JUnit properties (what `record_testsuite_property` writes), when --junitxml is on."""
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    for name, value in properties:
        xml.add_global_property(name, value)


def _failure_reason(report: pytest.TestReport, *, item_name: str = "") -> str:
    """The first line of a failure that says something, without the item's own name in front of it."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr or "")
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if item_name and first.startswith(f"{item_name}:"):
        first = first[len(item_name) + 1:].strip()
    return first or "no reason recorded"


def _shown_path(path: Path, invocation_dir: Path) -> str:
    """A path as the user would type it: relative to where pytest was started when it is below, else absolute."""
    try:
        return str(Path(path).absolute().relative_to(Path(invocation_dir).absolute()))
    except ValueError:
        return str(Path(path).absolute())


def _load_result(path: str) -> RunResult | None:
    try:
        return RunResult.read(Path(path))
    except SavedRunError:
        return None


def _interruption(config: pytest.Config) -> dict[str, Any] | None:
    """The session document's `interrupted` block (see interruption.py), None for a session that ran to its end."""
    ledger = config.pluginmanager.get_plugin("agentbench-interruption")
    return ledger.record() if ledger is not None else None


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
