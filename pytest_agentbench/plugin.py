"""pytest hooks and collection nodes: suite files -> SuiteFile -> one SuiteItem each (the pytest11 entry point)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.fixtures import TopRequest

from pytest_agentbench import htmlreport
from pytest_agentbench.errors import AgentbenchError, SuiteError
from pytest_agentbench.options import add_options, attempts_for
from pytest_agentbench.progress import PLUGIN_NAME as PROGRESS_PLUGIN_NAME
from pytest_agentbench.progress import ProgressReporter
from pytest_agentbench.run import shutdown
from pytest_agentbench.run.dryrun import SECTION as DRY_RUN_SECTION
from pytest_agentbench.session import INSTANCE_PROPERTY, SUITE_PROPERTY, AgentbenchSession, session_key
from pytest_agentbench.suite import Suite, load_suite
from pytest_agentbench.suite.instance import instantiate, item_name

SESSION_PLUGIN_NAME = "agentbench-session"
FIXTURES_PLUGIN = "pytest_agentbench.fixtures"
ITEM_TIMEOUT_MARGIN_S = 300
MARKER = "agentbench: an agent benchmark suite (one YAML suite file)"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    session = config.stash[session_key] = AgentbenchSession(config)
    config.pluginmanager.register(session, SESSION_PLUGIN_NAME)
    config.pluginmanager.register(ProgressReporter(config), PROGRESS_PLUGIN_NAME)
    # SIGTERM and SIGHUP stop the agent and the session's processes as Ctrl+C does.
    shutdown.install()
    htmlreport.register(config)
    if not config.pluginmanager.has_plugin(FIXTURES_PLUGIN):
        config.pluginmanager.import_plugin(FIXTURES_PLUGIN)


def pytest_collection(session: pytest.Session) -> bool | None:
    # --agentbench-from-result re-renders saved runs: they replace collection entirely.
    paths = session.config.stash[session_key].options.from_results
    if not paths:
        return None
    from pytest_agentbench.rerender import collect_saved_runs

    session.items = collect_saved_runs(session, paths)
    session.config.hook.pytest_collection_modifyitems(session=session, config=session.config, items=session.items)
    session.config.hook.pytest_collection_finish(session=session)
    session.testscollected = len(session.items)
    return True


def pytest_unconfigure(config: pytest.Config) -> None:
    htmlreport.unregister(config)
    session = config.stash.get(session_key, None)
    if session is not None and config.pluginmanager.is_registered(session):
        config.pluginmanager.unregister(session)
        shutdown.uninstall()
    progress = config.pluginmanager.get_plugin(PROGRESS_PLUGIN_NAME)
    if progress is not None:
        config.pluginmanager.unregister(progress)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SuiteFile | None:
    if file_path.suffix == ".yml" and parent.config.stash[session_key].is_suite_dir(file_path.parent.name):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


class SuiteFile(pytest.File):
    """A suite YAML file; collecting it validates the suite and yields one item per run (`--agentbench-repeat`)."""

    def collect(self) -> Iterator[pytest.Item]:
        suite = load_suite(self.path, self.config.rootpath)
        options = self.config.stash[session_key].options
        if options.prove:
            # --agentbench-prove: the suite's proof items replace its run items (one instance).
            from pytest_agentbench.prove import prove_items

            yield from prove_items(self, instantiate(suite, seed=options.seed, repeat=1))
            return
        for repeat in range(1, options.repeat + 1):
            # Each repeat is its own seeded instance and its own full run (its own run directory),
            # so pytest-xdist can hand the repeats of one suite to different workers and phones.
            instance = instantiate(suite, seed=options.seed, repeat=repeat)
            yield SuiteItem.from_parent(self, name=item_name(instance, repeats=options.repeat), suite=instance)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        # A bad suite is the user's file, not our code: show the problems, not a traceback.
        if isinstance(excinfo.value, SuiteError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)


def instance_properties(suite: Suite) -> list[tuple[str, str]]:
    """The user properties naming a run's suite and seeded instance (JUnit properties, survive xdist)."""
    properties = [(SUITE_PROPERTY, suite.name)]
    if suite.instance is not None:
        properties += [(INSTANCE_PROPERTY, suite.instance.id), ("agentbench_seed", str(suite.instance.seed))]
    return properties


class SuiteItem(pytest.Item):
    """One agent benchmark run of a suite; requests pytest fixtures like a test function.

    The fixtures it requests come from ``fixture_names()``; their values are in
    ``item.funcargs`` during ``runtest``.
    """

    RUN_FIXTURES = ("agentbench_device", "agentbench_run_dir", "agentbench_private_daemon", "agentbench_preflight")

    def __init__(self, *, suite: Suite, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.add_marker(pytest.mark.agentbench)
        # On every report of the item (setup errors too), so the statistics count a run that
        # never produced a result instead of losing it.
        self.user_properties += instance_properties(suite)
        # -k matches keywords; "bug_repro" is how people type a name that has a dash in it.
        self.extra_keyword_matches.add(suite.name.replace("-", "_"))
        if not self.agentbench.options.dry_run and self.config.pluginmanager.has_plugin("timeout"):
            # pytest-timeout is the backstop for the whole item: the agent's own timeout, every
            # attempt when recording a baseline, plus room for preflight and the post-run dump.
            # (With plugin autoloading off it is there only with `-p timeout`.)
            attempts = attempts_for(self.agentbench.options)
            self.add_marker(pytest.mark.timeout(attempts * (suite.claude.timeout_seconds + ITEM_TIMEOUT_MARGIN_S)))
        self._init_fixtures()

    @property
    def agentbench(self) -> AgentbenchSession:
        """The plugin session (options, server profile)."""
        return self.config.stash[session_key]

    def fixture_names(self) -> tuple[str, ...]:
        """Fixtures this item requests: none in a dry run (it touches nothing), the run's otherwise."""
        return () if self.agentbench.options.dry_run else self.RUN_FIXTURES

    def _init_fixtures(self) -> None:
        # The fixture manager reads requested names from a function signature (as tavern's
        # YamlItem does), so give it one with exactly our names.
        def _requested_fixtures() -> None: ...

        names = self.fixture_names()
        params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
        _requested_fixtures.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        # pytest's fixture error report shows the requesting function's source as `item.obj`.
        self.obj = _requested_fixtures
        self.funcargs: dict[str, Any] = {}
        self._fixtureinfo = self.session._fixturemanager.getfixtureinfo(node=self, func=_requested_fixtures, cls=None)
        self.fixturenames = self._fixtureinfo.names_closure
        self._request = TopRequest(self, _ispytest=True)  # type: ignore[arg-type]

    def setup(self) -> None:
        self._request._fillfixtures()

    def runtest(self) -> None:
        if self.agentbench.options.dry_run:
            self.add_report_section("call", DRY_RUN_SECTION, self.agentbench.dry_run_text(self.suite))
            return
        from pytest_agentbench.outcome import run_suite_item

        run_suite_item(self)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, AgentbenchError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def _repr_failure_py(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        # pytest renders setup and teardown errors (our fixtures: no device, device busy) through
        # this private method rather than repr_failure; a refusal is a sentence, not a traceback.
        if isinstance(excinfo.value, AgentbenchError):
            return str(excinfo.value)
        return super()._repr_failure_py(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.suite.line, f"suite: {self.suite.name}"
