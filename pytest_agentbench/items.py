"""Suite files, saved runs and prove scenarios -> pytest items: the four item classes of the plugin (suite file, suite run, prove scenario, saved run).

Each item adapts: it requests fixtures and hands its work to `outcome.run_suite_item` (a live
run), `prove.run_prove_item` (a proof) or `pipeline.rerender` (a saved run re-audited), and maps
the result to pytest's outcome through `outcome.publish_outcome`.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest._code.code import ReprFileLocation, TerminalRepr
from _pytest._io import TerminalWriter
from _pytest.fixtures import TopRequest

from pytest_agentbench.errors import AgentbenchError, SavedRunError, SuiteError, VerdictFailed
from pytest_agentbench.options import attempts_for
from pytest_agentbench.outcome import publish_outcome, run_suite_item
from pytest_agentbench.pipeline import ConcludeContext, Scenario, rerender, resolve_result_paths, scenarios_of
from pytest_agentbench.prove import run_prove_item
from pytest_agentbench.run.execute import DRY_RUN_SECTION
from pytest_agentbench.session import INSTANCE_PROPERTY, INVALID_SUITE_PROPERTY, SUITE_PROPERTY, AgentbenchSession, session_key
from pytest_agentbench.suite import Suite, load_suite
from pytest_agentbench.suite.instance import instantiate, item_name, prove_item_name
from pytest_agentbench.suite.params import instance_space

ITEM_TIMEOUT_MARGIN_S = 300


class RepeatsWarning(pytest.PytestWarning):
    """`--agentbench-repeat` asks for more runs of a suite than it has distinct instances."""


def node_id(parent: pytest.Collector, name: str) -> str:
    """An item's node id: `<file>::<name>`, given whole, so a bracketed name (`ux-flow[r1-Pro]`) is read as pytest reads one.

    pytest 9 parses a node id's `[...]` as its parameters when it reads one back (the last-failed
    cache, --sw); built from the name alone, the item's own id would keep the brackets in its
    name, and `--lf` and `--sw` would never find it.
    """
    return f"{parent.nodeid}::{name}"


class SuiteFile(pytest.File):
    """A suite YAML file; collecting it validates the suite and yields one item per run (`--agentbench-repeat`).

    A suite that does not load (a typo'd key, no prompt, a YAML syntax error) becomes one
    InvalidSuiteItem that fails with the problems, so it stops no other suite.
    """

    def collect(self) -> Iterator[pytest.Item]:
        try:
            suite = load_suite(self.path, self.config.rootpath)
        except SuiteError as exc:
            yield InvalidSuiteItem.from_parent(self, name=self.path.stem, error=exc)
            return
        options = self.config.stash[session_key].options
        space = instance_space(suite.raw.get("params"))
        if suite.raw.get("params") and options.repeat > space:
            self.warn(RepeatsWarning(
                f"{suite.name} has {space} distinct instance{'s' if space != 1 else ''}: --agentbench-repeat {options.repeat} "
                f"runs each of them {options.repeat // space}{'' if options.repeat % space == 0 else f' or {options.repeat // space + 1}'} "
                f"times (r{space + 1} starts over)"
            ))
        for repeat in range(1, options.repeat + 1):
            try:
                instance = instantiate(suite, seed=options.seed, repeat=repeat)
            except SuiteError as exc:
                name = f"{suite.name}[r{repeat}]"
                yield InvalidSuiteItem.from_parent(self, name=name, nodeid=node_id(self, name), error=exc)
                continue
            if options.prove:
                # --agentbench-prove: the suite's proof items replace its run items, for every seeded
                # instance (--agentbench-repeat N proves N), so a check is proven on the values it judges.
                yield from prove_items(self, instance, repeats=options.repeat)
                continue
            # Each repeat is its own seeded instance and its own full run (its own run directory),
            # so pytest-xdist can hand the repeats of one suite to different workers and phones.
            name = item_name(instance, repeats=options.repeat)
            yield SuiteItem.from_parent(self, name=name, nodeid=node_id(self, name), suite=instance)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        # A bad suite is the user's file, not our code: show the problems, not a traceback.
        if isinstance(excinfo.value, SuiteError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class InvalidSuiteItem(pytest.Item):
    """A suite file that does not load, as the one item that fails with its problems (the other suites still run).

    It is not a run: it carries no suite property (so the statistics do not count it as an
    incomplete run) but `INVALID_SUITE_PROPERTY`, from which the session lists it (the summary,
    `invalidSuites` in the session document); JUnit records its failure like any other.
    """

    def __init__(self, *, error: SuiteError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error
        self.add_marker(pytest.mark.agentbench)
        self.user_properties.append((INVALID_SUITE_PROPERTY, str(error)))

    def runtest(self) -> None:
        # Failed in the call, not at setup, so even a dry run reports it (and repr_failure renders it).
        raise self.error

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, SuiteError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"invalid suite: {self.name}"


def failure_text(error: AgentbenchError, tbstyle: str) -> str:
    """A failed run as pytest prints it, once, shortened the way `--tb` asks.

    A failed verdict's message is its reasons on one line, a blank line, then the run's report,
    which lists the reasons again: the failures section shows the report alone (the line is the
    short summary's and JUnit's message), `--tb=short` the reasons' line, and `--tb=line` and
    `--tb=no` nothing, as pytest writes the one line itself.
    """
    text = str(error)
    if tbstyle in ("no", "line"):
        return ""
    head, _, report = text.partition("\n\n")
    if tbstyle == "short":
        return head
    return report if isinstance(error, VerdictFailed) and report else text


@dataclasses.dataclass(eq=False)
class RunFailure(TerminalRepr):
    """A run's failure for pytest: the whole text in the failure report, its first line everywhere a line is shown.

    pytest prints a string failure in full again in the short summary on CI (and with -vv), and
    JUnit takes it whole as the message; a `reprcrash` keeps those to the reasons' line, so the
    report is printed once.
    """

    text: str
    reprcrash: ReprFileLocation

    def toterminal(self, tw: TerminalWriter) -> None:
        for line in self.text.splitlines():
            tw.line(line)


#: Where a serialized report's longrepr holds a RunFailure (pytest-xdist sends reports as JSON).
RUN_FAILURE_KEY = "agentbench_run_failure"


def run_failure_to_serializable(report: pytest.TestReport) -> dict[str, Any] | None:
    """A report whose failure is a RunFailure -> pytest's JSON form with the failure's text and line; None for any other.

    pytest would send it as its text alone, so under xdist the short summary would lose the
    reasons' line and JUnit's message would be the whole report.
    """
    failure = report.longrepr
    if not isinstance(failure, RunFailure):
        return None
    data = report._to_json()
    data["$report_type"] = type(report).__name__
    crash = failure.reprcrash
    data["longrepr"] = {RUN_FAILURE_KEY: {"text": failure.text, "path": crash.path, "lineno": crash.lineno, "message": crash.message}}
    return data


def run_failure_from_serializable(data: dict[str, Any]) -> pytest.TestReport | None:
    """`run_failure_to_serializable`'s JSON -> the report with its RunFailure; None for any other report's."""
    longrepr = data.get("longrepr")
    if data.get("$report_type") != "TestReport" or not isinstance(longrepr, dict) or RUN_FAILURE_KEY not in longrepr:
        return None
    failure = longrepr[RUN_FAILURE_KEY]
    report = pytest.TestReport._from_json({**data, "longrepr": None})
    report.longrepr = RunFailure(failure["text"], ReprFileLocation(failure["path"], failure["lineno"], failure["message"]))
    return report


def run_failure(error: AgentbenchError, config: pytest.Config, path: Path, line: int) -> RunFailure:
    text = failure_text(error, config.option.tbstyle)
    first = str(error).splitlines()[0] if str(error) else ""
    # A location's line is 0-based (reportinfo); the crash line, as pytest prints it, 1-based.
    return RunFailure(text, ReprFileLocation(str(path), line + 1, first))


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
        run_suite_item(self)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, AgentbenchError):
            return run_failure(excinfo.value, self.config, self.path, self.suite.line)
        return super().repr_failure(excinfo, style)

    def _repr_failure_py(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        # pytest renders setup and teardown errors (our fixtures: no device, device busy) through
        # this private method rather than repr_failure; a refusal is a sentence, not a traceback.
        if isinstance(excinfo.value, AgentbenchError):
            return str(excinfo.value)
        return super()._repr_failure_py(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        # The failures section's heading: the item's name, so repeats of one suite are told apart.
        return self.path, self.suite.line, f"suite: {self.name}"


def prove_items(parent: pytest.Collector, suite: Suite, *, repeats: int = 1) -> Iterator[pytest.Item]:
    """The prove items of one suite instance: `<suite>[prove-pass]`, `[prove-fail-<name>]`, `[prove-fresh]`,
    with the instance id first when it has params or there are repeats (`<suite>[r2-London-20-prove-pass]`)."""
    if not suite.prove:
        name = prove_item_name(suite, "prove-pass", repeats=repeats)
        yield ProveItem.from_parent(parent, name=name, nodeid=node_id(parent, name), suite=suite, scenario=None)
    for scenario in scenarios_of(suite):
        name = prove_item_name(suite, scenario.item_name, repeats=repeats)
        yield ProveItem.from_parent(parent, name=name, nodeid=node_id(parent, name), suite=suite, scenario=scenario)


class ProveItem(SuiteItem):
    """One prove scenario of a suite; `scenario` None marks a suite without a `prove:` block (skipped)."""

    RUN_FIXTURES = ("agentbench_device", "agentbench_run_dir", "agentbench_preflight")

    def __init__(self, *, scenario: Scenario | None, **kwargs: Any) -> None:
        self.scenario = scenario
        super().__init__(**kwargs)

    def fixture_names(self) -> tuple[str, ...]:
        return () if self.scenario is None else self.RUN_FIXTURES

    def runtest(self) -> None:
        if self.scenario is None:
            pytest.skip(f"{self.suite.name} has no prove: block, so its checks have a fresh-state proof only")
        run_prove_item(self)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.suite.line, f"prove: {self.suite.name} {self.scenario.item_name if self.scenario else ''}"


class SavedRunItem(pytest.Item):
    """An earlier run, re-audited and re-reported as a test item (`--agentbench-from-result`).

    The saved run directory is only read; the re-rendered result document is written under
    `--agentbench-output/rerendered/`, and reaches the summary through the report like a live
    run's (so it works under pytest-xdist too).
    """

    def __init__(self, *, result_path: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.result_path = result_path
        self.add_marker(pytest.mark.agentbench)

    def runtest(self) -> None:
        output = self.config.stash[session_key].options.output / "rerendered"
        result, result_path = rerender(self.result_path, self.config.rootpath, output, ConcludeContext(environ=dict(os.environ)))
        self.user_properties.append(("agentbench_run_dir", str(self.result_path.parent)))
        publish_outcome(self, result, result_path=result_path)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, AgentbenchError):
            return run_failure(excinfo.value, self.config, self.result_path, 0)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.result_path, 0, f"saved run: {self.result_path.parent.name}"


def collect_saved_runs(session: pytest.Session, paths: tuple[Path, ...]) -> list[pytest.Item]:
    """One SavedRunItem per saved run the `--agentbench-from-result` paths name, `<suite>[<run id>]`.

    Raises:
        pytest.UsageError: A path holds no result.json, itself or below.
    """
    items = []
    seen: set[Path] = set()
    for path in paths:
        try:
            result_paths = resolve_result_paths(path)
        except SavedRunError as exc:
            raise pytest.UsageError(f"--agentbench-from-result {exc}") from None
        for result_path in result_paths:
            # A run named twice (its directory and the output above it) is one item.
            if result_path.resolve() in seen:
                continue
            seen.add(result_path.resolve())
            name = saved_run_name(result_path, taken={item.name for item in items})
            where = _saved_suite_file(result_path)
            items.append(SavedRunItem.from_parent(session, name=name, path=result_path, result_path=result_path,
                                                  nodeid=f"{where}::{name}" if where else name))
    return items


def _saved_suite_file(result_path: Path) -> str | None:
    """The suite file part of the node id the run's own session gave it (`benchmark/.../bug-repro.yml`), if it says."""
    try:
        nodeid = json.loads(result_path.read_text(encoding="utf-8")).get("nodeid")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(nodeid, str) or "::" not in nodeid:
        return None
    return nodeid.split("::", 1)[0] or None


def saved_run_name(result_path: Path, *, taken: set[str]) -> str:
    """A saved run's item name, as its own session named it (`bug-repro[r1-4-5]`, the summary table's name too).

    The run id is added (`bug-repro[r1-4-5 20261203T...]`) only when another saved run of this
    session already has that name (the same instance from two sessions); a result.json that does
    not say its name is `<suite>[<run id>]`.
    """
    fallback = f"{result_path.parent.parent.name}[{result_path.parent.name}]"
    try:
        document = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return fallback
    nodeid = document.get("nodeid") if isinstance(document, dict) else None
    if not isinstance(nodeid, str) or "::" not in nodeid:
        return fallback
    name = nodeid.rsplit("::", 1)[-1]
    if name in taken:
        name = f"{name[:-1]} {result_path.parent.name}]" if name.endswith("]") else f"{name}[{result_path.parent.name}]"
    return name
