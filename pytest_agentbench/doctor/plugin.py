"""`--agentbench-doctor` for pytest: each suite's run items -> one DoctorItem, its line in the summary, a failure when not ready.

The items claim the device as a run does (the `agentbench_device` fixture: `--device SERIAL`,
`sim`, xdist), so the doctor reads the phone the runs would get. Each report carries its line
as a user property; the summary prints them in collection order.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.doctor.examine import examine_suite
from pytest_agentbench.doctor.testbed import TestbedCheck
from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.items import SuiteItem
from pytest_agentbench.session import INSTANCE_PROPERTY, SUITE_PROPERTY, session_key

PLUGIN_NAME = "agentbench-doctor"
LINE_PROPERTY = "agentbench_doctor"
_testbed_key = pytest.StashKey[dict[str, TestbedCheck]]()


class NotReady(AgentbenchError):
    """A suite the device cannot run: the doctor's line."""


class DoctorItem(SuiteItem):
    """The doctor's reading of one suite on the claimed device."""

    RUN_FIXTURES = ("agentbench_device",)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Not a run: the session's statistics must not count it as an unrecorded one.
        self.user_properties[:] = [(k, v) for k, v in self.user_properties if k not in (SUITE_PROPERTY, INSTANCE_PROPERTY, "agentbench_seed")]

    def fixture_names(self) -> tuple[str, ...]:
        return self.RUN_FIXTURES

    def runtest(self) -> None:
        device = self.funcargs["agentbench_device"]
        cache = self.config.stash.setdefault(_testbed_key, {})
        report = examine_suite(device.adb, device.serial, self.suite, testbed_checks=cache)
        self.user_properties.append((LINE_PROPERTY, report.line))
        if not report.ready:
            raise NotReady(report.line)

    def reportinfo(self) -> tuple[Any, int, str]:
        return self.path, self.suite.line, f"doctor: {self.suite.name}"


class DoctorPlugin:
    """Swaps the collected suite items for doctor items and prints their lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
        doctored, seen = [], set()
        for item in items:
            if not isinstance(item, SuiteItem) or isinstance(item, DoctorItem):
                doctored.append(item)
                continue
            if item.suite.name in seen:
                continue
            seen.add(item.suite.name)
            doctored.append(DoctorItem.from_parent(item.parent, name=f"{item.suite.name}[doctor]", suite=item.suite))
        items[:] = doctored

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.lines += [value for key, value in report.user_properties if key == LINE_PROPERTY]

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.lines:
            terminalreporter.section("agentbench doctor")
            for line in self.lines:
                terminalreporter.line(line)


def register(config: pytest.Config) -> None:
    """Register the doctor's hooks when `--agentbench-doctor` is given."""
    session = config.stash.get(session_key, None)
    if session is not None and session.options.doctor and not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(DoctorPlugin(), PLUGIN_NAME)
