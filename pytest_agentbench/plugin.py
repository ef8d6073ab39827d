"""pytest hooks only (the pytest11 entry point): options, waking the session when the command line uses it, collection of the suite files it names and of saved runs; the items live in items.py.

This module is imported by every pytest run in an environment that has the package, so it
imports only what its hooks need before the plugin wakes (wake.py); each hook does nothing
more than a cheap test until then.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_agentbench.options import DEFAULT_SUITE_DIRS, add_options
from pytest_agentbench.usage import is_named, named_paths
from pytest_agentbench.wake import SESSION_PLUGIN_NAME, awake_session, is_awake, sleep, wake, wakes

if TYPE_CHECKING:
    from pytest_agentbench.items import SuiteFile

__all__ = ["SESSION_PLUGIN_NAME"]

FIXTURES_PLUGIN = "pytest_agentbench.fixtures"
MARKER = "agentbench: an agent benchmark suite (one YAML suite file)"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    # The fixtures are there for every test (a Python test may ask for a device); the session only when used.
    if not config.pluginmanager.has_plugin(FIXTURES_PLUGIN):
        config.pluginmanager.import_plugin(FIXTURES_PLUGIN)
    if wakes(config):
        wake(config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # `--agentbench-json -` puts the session document alone on stdout: pytest's report moves to
    # stderr before its header is written, so `... --agentbench-json - | jq` reads only JSON.
    if is_awake(session.config) and awake_session(session.config).options.json_stdout:
        from _pytest.config import create_terminal_writer

        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter._tw = create_terminal_writer(session.config, sys.stderr)


def pytest_collection(session: pytest.Session) -> bool | None:
    # --agentbench-from-result re-renders saved runs: they replace collection entirely.
    if not is_awake(session.config) or not awake_session(session.config).options.from_results:
        return None
    from pytest_agentbench.items import collect_saved_runs

    session.items = collect_saved_runs(session, awake_session(session.config).options.from_results)
    # Reported as collected, so the header says `collected N items` as for any other session.
    session.config.hook.pytest_collectreport(report=pytest.CollectReport(session.nodeid, "passed", None, list(session.items)))
    session.config.hook.pytest_collection_modifyitems(session=session, config=session.config, items=session.items)
    session.config.hook.pytest_collection_finish(session=session)
    session.testscollected = len(session.items)
    return True


def pytest_report_to_serializable(config: pytest.Config, report: pytest.TestReport) -> dict | None:
    # A run's failure crosses from an xdist worker whole: its text and its one line apart.
    if not is_awake(config) or not isinstance(report, pytest.TestReport):
        return None
    from pytest_agentbench.items import run_failure_to_serializable

    return run_failure_to_serializable(report)


def pytest_report_from_serializable(config: pytest.Config, data: dict) -> pytest.TestReport | None:
    if not is_awake(config):
        return None
    from pytest_agentbench.items import run_failure_from_serializable

    return run_failure_from_serializable(data)


def pytest_unconfigure(config: pytest.Config) -> None:
    sleep(config)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SuiteFile | None:
    # A suite runs an agent (and may spend money): only when the command line names it or a
    # directory holding it, never from a bare `pytest`, testpaths or the current directory.
    config = parent.config
    if file_path.suffix != ".yml" or file_path.parent.name not in (config.getini("agentbench_suite_dirs") or DEFAULT_SUITE_DIRS):
        return None
    if not is_named(file_path, named_paths(config)):
        return None
    awake_session(config)
    from pytest_agentbench.items import SuiteFile

    return SuiteFile.from_parent(parent, path=file_path)
