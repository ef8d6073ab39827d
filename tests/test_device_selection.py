"""Tests for device/selection.py: device choice rules (pure), the --device grammar, the iOS check."""

from __future__ import annotations

import subprocess

import pytest

from pytest_agentbench.device.adb import DeviceInfo
from pytest_agentbench.errors import DeviceUnavailable
from pytest_agentbench.device.selection import check_no_ios_devices, choose_devices, parse_device_option

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


def _fake_run(outputs):
    def run(argv, **kwargs):
        code, out = outputs[argv[1]]
        if isinstance(out, Exception):
            raise out
        return subprocess.CompletedProcess(argv, code, out, "boom" if code else "")
    return run


@pytest.mark.parametrize(
    "outputs, message",
    [
        ({"simctl": (0, "== Devices ==\n-- iOS 18 --\n    iPhone 16 (ABC) (Booted)\n"), "devicectl": (0, "")}, "simulator is booted"),
        ({"simctl": (0, ""), "devicectl": (0, "Name  Hostname  Identifier  State  Model\n----\nPhone  p.local  X  connected  iPhone\n")}, "device is connected"),
        ({"simctl": (1, ""), "devicectl": (0, "")}, "failed .*the run stops"),
        ({"simctl": (0, FileNotFoundError("xcrun")), "devicectl": (0, "")}, "could not check for iOS devices"),
    ],
    ids=["simulator-booted", "device-connected", "check-failed", "xcrun-missing"],
)
def test_ios_targets_refuse_the_run_on_macos(outputs, message):
    with pytest.raises(DeviceUnavailable, match=message):
        check_no_ios_devices(run=_fake_run(outputs), platform="darwin")


def test_no_ios_targets_pass_on_macos_and_the_check_is_skipped_elsewhere():
    check_no_ios_devices(run=_fake_run({"simctl": (0, "== Devices ==\n"), "devicectl": (0, "No devices found.\n")}), platform="darwin")
    check_no_ios_devices(run=_fake_run({}), platform="linux")
