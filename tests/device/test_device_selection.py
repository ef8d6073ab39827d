"""Tests for device/selection.py: device choice rules (pure), the --device grammar, the iOS check."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pytest_agentbench.device.adb import AdbEndpoint, DeviceInfo
from pytest_agentbench.device.pool import candidates_for
from pytest_agentbench.device.selection import (
    DeviceEntry,
    check_no_ios_devices,
    choose_devices,
    ios_devices_present,
    parse_device_entries,
    parse_device_option,
)
from pytest_agentbench.errors import DeviceLost, DeviceUnavailable

A, B = DeviceInfo("emulator-5554", "device"), DeviceInfo("emulator-5556", "device")
OFF, UNAUTH = DeviceInfo("emulator-5558", "offline"), DeviceInfo("R58M", "unauthorized")


@pytest.mark.parametrize(
    "devices, named, pinnable, expected",
    [
        ([A], (), True, ["emulator-5554"]),
        ([A], (), False, ["emulator-5554"]),
        ([A, OFF], (), False, ["emulator-5554"]),
        ([A], ("emulator-5554",), False, ["emulator-5554"]),
        ([A, B], ("emulator-5556",), True, ["emulator-5556"]),
        ([A, B], ("emulator-5554", "emulator-5556"), True, ["emulator-5554", "emulator-5556"]),
    ],
    ids=["one-online", "one-online-unpinnable", "offline-ones-ignored", "named-the-one", "pinned-picks-named", "several-named-for-xdist"],
)
def test_usable_devices(devices, named, pinnable, expected):
    assert choose_devices(devices, named=named, pinnable=pinnable) == expected


@pytest.mark.parametrize(
    "devices, named, pinnable, message",
    [
        ([], (), True, "no online Android device: the adb server lists nothing"),
        ([OFF], (), True, r"no online Android device: .*emulator-5558 \(offline\)"),
        ([A, B], (), True, "exactly one online device is required, found 2.*name one with --device"),
        ([A, B], ("emulator-5554",), False, "cannot be pinned"),
        ([A, B], (), False, "cannot be pinned"),
        ([A], ("emulator-9999",), True, "does not list it"),
        ([A, OFF], ("emulator-5558",), True, "is offline; reconnect"),
        ([A, UNAUTH], ("R58M",), True, "unauthorized; accept the USB debugging prompt"),
        ([A], ("emulator-5556",), True, "does not list it"),
    ],
    ids=["none", "only-offline", "several-unnamed", "several-unpinnable-named", "several-unpinnable", "named-unknown",
         "named-offline", "named-unauthorized", "named-missing"],
)
def test_refusals_say_why(devices, named, pinnable, message):
    with pytest.raises(DeviceUnavailable, match=message):
        choose_devices(devices, named=named, pinnable=pinnable)


@pytest.mark.parametrize(
    "value, expected",
    [(None, (0, ())), ("sim", (1, ())), ("sim:4", (4, ())), ("emulator-5554", (0, ("emulator-5554",))),
     ("a, b", (0, ("a", "b")))],
)
def test_device_option(value, expected):
    assert parse_device_option(value) == expected


@pytest.mark.parametrize("value", ["sim:0", "sim:x", "sim:-1"])
def test_bad_sim_count_is_refused(value):
    with pytest.raises(ValueError, match="sim:N"):
        parse_device_option(value)


REMOTE = AdbEndpoint("10.0.0.5", 5037)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("10.0.0.5:5037/emulator-5554", (DeviceEntry("emulator-5554", REMOTE),)),
        ("10.0.0.5:5037/127.0.0.1:40001", (DeviceEntry("127.0.0.1:40001", REMOTE),)),
        ("lab-host:5038/R58M,emulator-5554", (DeviceEntry("R58M", AdbEndpoint("lab-host", 5038)), DeviceEntry("emulator-5554"))),
        ("[::1]:5037/emulator-5554", (DeviceEntry("emulator-5554", AdbEndpoint("::1", 5037)),)),
        ("10.0.0.5:5037/a,10.0.0.6:5037/a", (DeviceEntry("a", REMOTE), DeviceEntry("a", AdbEndpoint("10.0.0.6", 5037)))),
    ],
    ids=["remote", "remote-network-serial", "mixed", "ipv6", "same-serial-two-servers"],
)
def test_entries_on_other_adb_servers(value, expected):
    count, entries = parse_device_entries(value)
    assert (count, entries) == (0, expected)
    # Written back exactly as given, so messages and the option name the entry the user typed.
    assert parse_device_option(value)[1] == tuple(part.strip() for part in value.split(","))


@pytest.mark.parametrize(
    "value, message",
    [
        ("10.0.0.5/emulator-5554", "expected HOST:PORT/SERIAL"),
        ("10.0.0.5:70000/emulator-5554", "expected HOST:PORT/SERIAL"),
        ("10.0.0.5:5037/", "expected HOST:PORT/SERIAL"),
        (":5037/emulator-5554", "expected HOST:PORT/SERIAL"),
        ("a,a", "a is named twice"),
    ],
    ids=["no-port", "port-too-big", "no-serial", "no-host", "duplicate"],
)
def test_bad_entries_are_refused(value, message):
    with pytest.raises(ValueError, match=message):
        parse_device_entries(value)


class FakeAdb:
    """The two things candidates_for uses: the endpoint and `devices()`."""

    def __init__(self, endpoint: AdbEndpoint, devices: list[DeviceInfo] | None) -> None:
        self.endpoint = endpoint
        self._devices = devices

    def devices(self) -> list[DeviceInfo]:
        if self._devices is None:
            raise DeviceLost(f"the adb server at {self.endpoint} stopped answering `host:devices-l`")
        return self._devices


def test_each_entry_gets_the_client_of_its_own_server():
    local = FakeAdb(AdbEndpoint("localhost", 5037), [A, B])
    remote = FakeAdb(REMOTE, [DeviceInfo("emulator-5554", "device")])
    _, entries = parse_device_entries("emulator-5556,10.0.0.5:5037/emulator-5554")
    found = candidates_for(local, entries, pinnable=True, clients={REMOTE: remote})
    assert [(c.serial, c.adb) for c in found] == [("emulator-5556", local), ("emulator-5554", remote)]
    assert [str(c) for c in found] == ["localhost:5037/emulator-5556", "10.0.0.5:5037/emulator-5554"]


def test_a_silent_remote_server_is_a_sentence():
    local = FakeAdb(AdbEndpoint("localhost", 5037), [A])
    _, entries = parse_device_entries("10.0.0.5:5037/emulator-5554")
    with pytest.raises(DeviceUnavailable, match=r"--device 10.0.0.5:5037/emulator-5554: no adb server answers at 10.0.0.5:5037"):
        candidates_for(local, entries, pinnable=True, clients={REMOTE: FakeAdb(REMOTE, None)})


def test_the_one_online_rule_holds_per_adb_server():
    # An unpinnable MCP server sees only the adb server it is pointed at: one device there is fine.
    local = FakeAdb(AdbEndpoint("localhost", 5037), [A, B])
    remote = FakeAdb(REMOTE, [DeviceInfo("R58M", "device")])
    _, entries = parse_device_entries("10.0.0.5:5037/R58M")
    assert [c.serial for c in candidates_for(local, entries, pinnable=False, clients={REMOTE: remote})] == ["R58M"]
    with pytest.raises(DeviceUnavailable, match="cannot be pinned"):
        candidates_for(local, (), pinnable=False)


DEVICECTL = Path(__file__).parents[1] / "data" / "devicectl"
SIMCTL_BOOTED = json.dumps({"devices": {"com.apple.CoreSimulator.SimRuntime.iOS-18-1": [
    {"name": "iPhone 16", "udid": "ABC-123", "state": "Booted", "isAvailable": True}]}})
SIMCTL_NONE = json.dumps({"devices": {"com.apple.CoreSimulator.SimRuntime.iOS-18-1": [
    {"name": "iPhone 16", "udid": "ABC-123", "state": "Shutdown", "isAvailable": True}]}})


def _fake_run(simctl: tuple[int, object], devicectl: tuple[int, object]):
    """xcrun: simctl prints its JSON; devicectl writes it to the --json-output path, as the real tools do."""
    def run(argv, **kwargs):
        code, out = simctl if argv[1] == "simctl" else devicectl
        if isinstance(out, Exception):
            raise out
        if argv[1] == "devicectl":
            if out is not None:
                Path(argv[argv.index("--json-output") + 1]).write_text(out, encoding="utf-8")
            return subprocess.CompletedProcess(argv, code, "Name  Hostname  Identifier  State  Model\n", "boom" if code else "")
        return subprocess.CompletedProcess(argv, code, out, "boom" if code else "")
    return run


def _recorded(name: str) -> str:
    return (DEVICECTL / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "present"),
    [
        ("connected.json", ["Ana's iPhone (00008130-000A1B2C3D4E5F60)"]),
        ("available-paired.json", ["Lab iPhone (00008110-00112233AABBCCDD)"]),
        ("unavailable.json", []),
        ("watch-only.json", []),
        ("none.json", []),
    ],
    ids=["connected", "available (paired) counts too", "unavailable", "a watch is not an iOS target", "no devices"],
)
def test_devicectl_json_listing(name: str, present: list[str]) -> None:
    assert ios_devices_present(json.loads(_recorded(name))) == present


def test_a_devicectl_document_of_another_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="devicectl"):
        ios_devices_present({"devices": []})




@pytest.mark.parametrize(
    ("simctl", "devicectl", "message"),
    [
        ((0, SIMCTL_BOOTED), (0, _recorded("none.json")), r"simulator is booted \(iPhone 16 \(ABC-123\)\)"),
        ((0, SIMCTL_NONE), (0, _recorded("connected.json")), r"device is connected \(Ana's iPhone"),
        ((0, SIMCTL_NONE), (0, _recorded("available-paired.json")), r"device is connected \(Lab iPhone"),
        ((1, ""), (0, _recorded("none.json")), "failed .*the run stops"),
        ((0, FileNotFoundError("xcrun")), (0, _recorded("none.json")), "could not check for iOS devices"),
        ((0, SIMCTL_NONE), (0, None), "printed no listing this harness can read"),
        ((0, "== Devices ==\n"), (0, _recorded("none.json")), "printed no listing this harness can read"),
    ],
    ids=["simulator-booted", "device-connected", "available-paired-device", "check-failed", "xcrun-missing",
         "devicectl-wrote-nothing", "simctl-not-json"],
)
def test_ios_targets_refuse_the_run_on_macos(simctl, devicectl, message):
    with pytest.raises(DeviceUnavailable, match=message):
        check_no_ios_devices(run=_fake_run(simctl, devicectl), platform="darwin")


@pytest.mark.parametrize("recorded", ["none.json", "unavailable.json", "watch-only.json"])
def test_no_ios_targets_pass_on_macos_and_the_check_is_skipped_elsewhere(recorded):
    check_no_ios_devices(run=_fake_run((0, SIMCTL_NONE), (0, _recorded(recorded))), platform="darwin")
    check_no_ios_devices(run=_fake_run((0, FileNotFoundError("xcrun")), (0, None)), platform="linux")
