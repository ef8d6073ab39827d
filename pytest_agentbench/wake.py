"""The command line -> whether the plugin wakes (an agentbench option given, suites named), and waking it once: the session, its plugins, the signal handlers.

Installing the package must not change a pytest run that does not use it: as pytest's junitxml
builds its `LogXML` only for `--junitxml` and xdist its `DSession` only for `-n`, the plugin
builds its session only when the command line gives one of its options or names a suite, when a
suite file is collected anyway, or when a test asks for one of its fixtures. Until then the entry
point has imported `plugin.py`, `options.py`, `usage.py`, this module and `fixtures.py`, nothing
heavy, and has started no process (tests/plugin/test_idle.py; `python tests/perf/idle_cost.py`
measures the cost).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_agentbench.options import DEFAULT_SUITE_DIRS, given_options
from pytest_agentbench.usage import named_paths, names_suites

if TYPE_CHECKING:
    from pytest_agentbench.session import AgentbenchSession

SESSION_PLUGIN_NAME = "agentbench-session"
_session_key = pytest.StashKey["AgentbenchSession"]()


def wakes(config: pytest.Config) -> bool:
    """Whether this pytest session uses the plugin from its start: one of its options is given, or a named path holds a suite."""
    if given_options(config):
        return True
    suite_dirs = tuple(config.getini("agentbench_suite_dirs") or DEFAULT_SUITE_DIRS)
    return names_suites(named_paths(config), suite_dirs, tuple(config.getini("norecursedirs") or ()))


def is_awake(config: pytest.Config) -> bool:
    """Whether the session has been built (its hooks are registered)."""
    return _session_key in config.stash


def awake_session(config: pytest.Config) -> AgentbenchSession:
    """The plugin's session, built (with its plugins and signal handlers) the first time something needs it."""
    session = config.stash.get(_session_key, None)
    return session if session is not None else wake(config)


def wake(config: pytest.Config) -> AgentbenchSession:
    """Build the session and register what a session that runs or checks suites needs; once per config."""
    if is_awake(config):
        return config.stash[_session_key]
    # Imported here: these pull in the run, the audit, the reports and their libraries. (Always
    # `from module import name`: a submodule read as a package attribute may be a stale copy
    # after pytester's inline runs restore sys.modules.)
    from pytest_agentbench.doctor.plugin import register as register_doctor
    from pytest_agentbench.htmlreport import register as register_html
    from pytest_agentbench.failures import PLUGIN_NAME as FAILURE_FOLD_PLUGIN_NAME
    from pytest_agentbench.failures import FailureFold
    from pytest_agentbench.interruption import PLUGIN_NAME as INTERRUPTION_PLUGIN_NAME
    from pytest_agentbench.interruption import RunLedger
    from pytest_agentbench.progress import PLUGIN_NAME as PROGRESS_PLUGIN_NAME
    from pytest_agentbench.progress import ProgressReporter
    from pytest_agentbench.run.execute import shutdown
    from pytest_agentbench.session import AgentbenchSession, session_key

    session = AgentbenchSession(config)
    config.stash[session_key] = session
    config.stash[_session_key] = session
    config.pluginmanager.register(session, SESSION_PLUGIN_NAME)
    config.pluginmanager.register(ProgressReporter(config), PROGRESS_PLUGIN_NAME)
    config.pluginmanager.register(RunLedger(), INTERRUPTION_PLUGIN_NAME)
    config.pluginmanager.register(FailureFold(config), FAILURE_FOLD_PLUGIN_NAME)
    # SIGTERM and SIGHUP stop the agent and the session's processes as Ctrl+C does.
    shutdown.install()
    register_html(config)
    register_doctor(config)
    return session


def sleep(config: pytest.Config) -> None:
    """Undo `wake` at unconfigure: unregister the session's plugins and give the signals back."""
    session = config.stash.get(_session_key, None)
    if session is None:
        return
    from pytest_agentbench.failures import PLUGIN_NAME as FAILURE_FOLD_PLUGIN_NAME
    from pytest_agentbench.htmlreport import unregister as unregister_html
    from pytest_agentbench.interruption import PLUGIN_NAME as INTERRUPTION_PLUGIN_NAME
    from pytest_agentbench.progress import PLUGIN_NAME as PROGRESS_PLUGIN_NAME
    from pytest_agentbench.run.execute import shutdown

    unregister_html(config)
    if config.pluginmanager.is_registered(session):
        config.pluginmanager.unregister(session)
        shutdown.uninstall()
    for name in (PROGRESS_PLUGIN_NAME, INTERRUPTION_PLUGIN_NAME, FAILURE_FOLD_PLUGIN_NAME):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)
    del config.stash[_session_key]
