"""pytest hooks only (the pytest11 entry point): options, the session, collection of the suite files the command line names and of saved runs; the items live in items.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _pytest.config import create_terminal_writer

from pytest_agentbench import htmlreport
from pytest_agentbench.doctor import plugin as doctor
from pytest_agentbench.failures import PLUGIN_NAME as FAILURE_FOLD_PLUGIN_NAME
from pytest_agentbench.failures import FailureFold
from pytest_agentbench.interruption import PLUGIN_NAME as INTERRUPTION_PLUGIN_NAME
from pytest_agentbench.interruption import RunLedger
from pytest_agentbench.items import SuiteFile, collect_saved_runs, run_failure_from_serializable, run_failure_to_serializable
from pytest_agentbench.options import add_options
from pytest_agentbench.progress import PLUGIN_NAME as PROGRESS_PLUGIN_NAME
from pytest_agentbench.progress import ProgressReporter
from pytest_agentbench.run.execute import shutdown
from pytest_agentbench.session import AgentbenchSession, session_key
from pytest_agentbench.usage import is_named, named_paths

SESSION_PLUGIN_NAME = "agentbench-session"
FIXTURES_PLUGIN = "pytest_agentbench.fixtures"
MARKER = "agentbench: an agent benchmark suite (one YAML suite file)"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    session = config.stash[session_key] = AgentbenchSession(config)
    config.pluginmanager.register(session, SESSION_PLUGIN_NAME)
    config.pluginmanager.register(ProgressReporter(config), PROGRESS_PLUGIN_NAME)
    config.pluginmanager.register(RunLedger(), INTERRUPTION_PLUGIN_NAME)
    config.pluginmanager.register(FailureFold(config), FAILURE_FOLD_PLUGIN_NAME)
    # SIGTERM and SIGHUP stop the agent and the session's processes as Ctrl+C does.
    shutdown.install()
    htmlreport.register(config)
    doctor.register(config)
    if not config.pluginmanager.has_plugin(FIXTURES_PLUGIN):
        config.pluginmanager.import_plugin(FIXTURES_PLUGIN)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # `--agentbench-json -` puts the session document alone on stdout: pytest's report moves to
    # stderr before its header is written, so `... --agentbench-json - | jq` reads only JSON.
    if session.config.stash[session_key].options.json_stdout:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter._tw = create_terminal_writer(session.config, sys.stderr)


def pytest_collection(session: pytest.Session) -> bool | None:
    # --agentbench-from-result re-renders saved runs: they replace collection entirely.
    paths = session.config.stash[session_key].options.from_results
    if not paths:
        return None
    session.items = collect_saved_runs(session, paths)
    session.config.hook.pytest_collection_modifyitems(session=session, config=session.config, items=session.items)
    session.config.hook.pytest_collection_finish(session=session)
    session.testscollected = len(session.items)
    return True


def pytest_report_to_serializable(report: pytest.TestReport) -> dict | None:
    # A run's failure crosses from an xdist worker whole: its text and its one line apart.
    return run_failure_to_serializable(report) if isinstance(report, pytest.TestReport) else None


def pytest_report_from_serializable(data: dict) -> pytest.TestReport | None:
    return run_failure_from_serializable(data)


def pytest_unconfigure(config: pytest.Config) -> None:
    htmlreport.unregister(config)
    session = config.stash.get(session_key, None)
    if session is not None and config.pluginmanager.is_registered(session):
        config.pluginmanager.unregister(session)
        shutdown.uninstall()
    for name in (PROGRESS_PLUGIN_NAME, INTERRUPTION_PLUGIN_NAME, FAILURE_FOLD_PLUGIN_NAME):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SuiteFile | None:
    # A suite runs an agent (and may spend money): only when the command line names it or a
    # directory holding it, never from a bare `pytest`, testpaths or the current directory.
    config = parent.config
    if file_path.suffix == ".yml" and config.stash[session_key].is_suite_dir(file_path.parent.name) and is_named(file_path, named_paths(config)):
        return SuiteFile.from_parent(parent, path=file_path)
    return None
