"""One suite + a device -> a DoctorReport: `ready`, or each thing missing with its remedy, from batched reads.

Trip 1 (nothing changes): every `su` form's `id -u` when the suite needs root, `pm path` and
`dumpsys package` of every package it needs, the start-time log, and the probes' plain reads.
Trip 2, with the `su` form that worked: the probes' root reads (Chrome's Preferences, bugle_db).
Then, for suites that need the testbed, its contract check (doctor/testbed.py), once per device.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field

from pytest_agentbench.checks import unique_reads
from pytest_agentbench.checks.base import RawRead, Read
from pytest_agentbench.checks.eventlog import DEFAULT_FILE as EVENT_LOG_FILE
from pytest_agentbench.checks.read import read_device
from pytest_agentbench.device.adb import Adb
from pytest_agentbench.device.shellscript import sh
from pytest_agentbench.doctor.apps import PROBES, Installed, last_start_ms, parse_installed, settle_problem, start_log_read
from pytest_agentbench.doctor.needs import Needs, suite_needs
from pytest_agentbench.doctor.root import RootResult, root_line, root_reads
from pytest_agentbench.doctor.testbed import TestbedCheck, check_installed_build, load_contract
from pytest_agentbench.suite import Suite


@dataclass(frozen=True)
class DoctorReport:
    """What the doctor found for one suite: its problems (each with its remedy), the packages' versions, the su form."""

    suite: str
    problems: tuple[str, ...]
    versions: dict[str, str] = field(default_factory=dict)
    su_form: str | None = None

    @property
    def ready(self) -> bool:
        return not self.problems

    @property
    def line(self) -> str:
        """`NAME: ready (...)` or `NAME: not ready: PROBLEM; PROBLEM`."""
        if self.problems:
            return f"{self.suite}: not ready: " + "; ".join(self.problems)
        facts = [f"{package} {version}" for package, version in self.versions.items()]
        if self.su_form:
            facts.append(f"root: {self.su_form}")
        return f"{self.suite}: ready" + (f" ({', '.join(facts)})" if facts else "")


def _package_reads(needs: Needs) -> tuple[Read, ...]:
    reads: list[Read] = []
    for package in needs.packages:
        reads += [Read(f"doctor:path:{package}", sh("pm", "path", package)),
                  Read(f"doctor:dumpsys:{package}", sh("dumpsys", "package", package))]
    return tuple(reads)


def event_log_problems(needs: Needs) -> list[str]:
    """The event-log checks on the testbed read the contract's event-log path."""
    contract = load_contract()
    path = contract["eventLog"]["path"]
    problems = []
    for entry in needs.checks_of("eventLog", contract["package"]):
        if entry.get("file", EVENT_LOG_FILE) != path:
            problems.append(f"check {entry['name']} reads {entry.get('file')}, the testbed writes its event log to {path}: "
                            "fix the check's file")
    return problems


def examine_suite(adb: Adb, serial: str, suite: Suite, *,
                  testbed_checks: MutableMapping[str, TestbedCheck] | None = None,
                  sleep: Callable[[float], None] = time.sleep) -> DoctorReport:
    """Read the device for everything the suite needs and say what is missing.

    Args:
        adb: The device layer.
        serial: The device.
        suite: The suite (an instance of it: its values filled).
        testbed_checks: Serial -> the testbed contract check already made this session (one per device).
        sleep: The wait before a screen dump (tests pass a no-op).
    """
    needs = suite_needs(suite)
    probes = [probe for probe in PROBES if probe.applies(suite, needs)]
    first = list(_package_reads(needs)) + [start_log_read()]
    if needs.root:
        first += root_reads()
    for probe in probes:
        first += probe.reads(suite, needs)
    reads: dict[str, RawRead] = dict(read_device(adb, serial, unique_reads(first)).reads.reads)
    problems: list[str] = []
    root = root_line(reads) if needs.root else RootResult(None, None)
    if root.problem:
        problems.append(f"{root.problem} (needed because {needs.root[0]})")
    installed: dict[str, Installed] = {}
    for package, reasons in needs.packages.items():
        installed[package] = parse_installed(reads.get(f"doctor:path:{package}"), reads.get(f"doctor:dumpsys:{package}"))
        if installed[package].version is None:
            problems.append(f"{package} is not installed (needed for {', '.join(reasons)}): install it on the image")
    if root.form is not None:
        second = [read for probe in probes for read in probe.root_reads(suite, needs, root.form)]
        if second:
            reads.update(read_device(adb, serial, unique_reads(second)).reads.reads)
    for probe in probes:
        if all(installed[package].version is not None for package in needs.packages):
            problems += probe.judge(suite, needs, reads, installed)
    problems += event_log_problems(needs)
    start_ms = last_start_ms(reads.get("doctor:start-log", RawRead(1, "")).text, suite.app.package_name)
    testbed = load_contract()["package"]
    if testbed in needs.packages and installed[testbed].version is not None:
        cache = testbed_checks if testbed_checks is not None else {}
        if serial not in cache:
            cache[serial] = check_installed_build(adb, serial, settle_s=suite.preflight.settle_seconds, sleep=sleep)
        problems += [f"the testbed build breaks its contract (docs/testbed-app.md): {problem}" for problem in cache[serial].problems]
        if suite.app.package_name == testbed and cache[serial].start_ms is not None:
            start_ms = cache[serial].start_ms
    settle = settle_problem(suite, start_ms)
    if settle:
        problems.append(settle)
    versions = {package: found.version for package, found in installed.items() if found.version is not None}
    return DoctorReport(suite.name, tuple(problems), versions, root.form)
