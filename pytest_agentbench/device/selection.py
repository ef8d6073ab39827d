"""`--device` text + what the adb server lists -> the serials a session may use (the seed's one-online rule, the iOS check)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.device.hostprotocol import AdbEndpoint, DeviceInfo
from pytest_agentbench.errors import DeviceUnavailable

# HOST:PORT/SERIAL: a host name or address (IPv6 in brackets), a port, then the serial as adb lists it.
_REMOTE_ENTRY = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^/:\[\]\s]+)):(?P<port>\d{1,5})/(?P<serial>\S+)$")


@dataclass(frozen=True)
class DeviceEntry:
    """One `--device` entry: a serial on the session's adb server, or on the adb server at `endpoint`."""

    serial: str
    endpoint: AdbEndpoint | None = None

    def __str__(self) -> str:
        if self.endpoint is None:
            return self.serial
        host = f"[{self.endpoint.host}]" if ":" in self.endpoint.host else self.endpoint.host
        return f"{host}:{self.endpoint.port}/{self.serial}"


def parse_device_entry(text: str) -> DeviceEntry:
    """`SERIAL` or `HOST:PORT/SERIAL` -> a DeviceEntry (pure).

    A `/` marks the entry as living on another adb server (xdist workers on other machines
    reach their phones that way); serials themselves never contain one.

    Raises:
        ValueError: An entry with a `/` that is not HOST:PORT/SERIAL, or a port outside 1-65535.
    """
    entry = text.strip()
    if "/" not in entry:
        return DeviceEntry(entry)
    match = _REMOTE_ENTRY.match(entry)
    if not match or not 1 <= int(match.group("port")) <= 65535:
        raise ValueError(
            f"--device {entry}: expected HOST:PORT/SERIAL (the adb server's host and port, a slash, then the "
            "serial as that server lists it), such as 10.0.0.5:5037/emulator-5554"
        )
    host = match.group("v6") or match.group("host")
    return DeviceEntry(match.group("serial"), AdbEndpoint(host, int(match.group("port"))))


def parse_device_entries(value: str | None) -> tuple[int, tuple[DeviceEntry, ...]]:
    """`--device` -> (simulated phones to start, the named devices).

    `sim` starts one simulated phone, `sim:N` starts N; anything else is an entry, or several
    separated by commas (for pytest-xdist workers to share out): `SERIAL` on the session's adb
    server, `HOST:PORT/SERIAL` on another one.

    Raises:
        ValueError: `sim:N` with N not a positive whole number, a bad HOST:PORT/SERIAL, or an
            entry named twice.
    """
    if not value:
        return 0, ()
    if value == "sim" or value.startswith("sim:"):
        count_text = value.partition(":")[2] or "1"
        if not count_text.isdigit() or int(count_text) < 1:
            raise ValueError(f"--device {value}: expected sim or sim:N with N >= 1")
        return int(count_text), ()
    entries = tuple(parse_device_entry(part) for part in value.split(",") if part.strip())
    seen: set[DeviceEntry] = set()
    for entry in entries:
        if entry in seen:
            raise ValueError(f"--device {value}: {entry} is named twice")
        seen.add(entry)
    return 0, entries


def parse_device_option(value: str | None) -> tuple[int, tuple[str, ...]]:
    """`--device` -> (simulated phones to start, the entries as written: `SERIAL` or `HOST:PORT/SERIAL`).

    Raises:
        ValueError: As `parse_device_entries`.
    """
    count, entries = parse_device_entries(value)
    return count, tuple(str(entry) for entry in entries)


def choose_devices(devices: list[DeviceInfo], *, named: tuple[str, ...], pinnable: bool) -> list[str]:
    """Which serials a run may use, by the seed's rules (pure).

    Exactly one online device is required, unless `--device` names devices that are online and
    the MCP server can be pinned to one serial (then others may be online too). A server that
    cannot be pinned always needs exactly one online device, since the agent could act on any.

    Args:
        devices: What the adb server lists.
        named: Serials from `--device` (empty: none named).
        pinnable: Whether the server profile can be pinned to a serial.

    Returns:
        The candidate serials, in order.

    Raises:
        DeviceUnavailable: No usable device, or an ambiguous choice; the message says which.
    """
    online = [d.serial for d in devices if d.state == "device"]
    states = {d.serial: d.state for d in devices}
    for serial in named:
        if serial not in states:
            raise DeviceUnavailable(f"--device {serial}: the adb server does not list it; it lists {_describe(devices)}")
        if states[serial] != "device":
            raise DeviceUnavailable(f"--device {serial}: the device is {states[serial]}{_remedy(states[serial])}")
    if not online:
        raise DeviceUnavailable(f"no online Android device: the adb server lists {_describe(devices)}")
    if named and pinnable:
        return list(named)
    if len(online) > 1:
        why = (
            "the MCP server cannot be pinned to one serial, so the agent could act on a device other than the one prepared"
            if named or not pinnable
            else "name one with --device SERIAL"
        )
        raise DeviceUnavailable(f"exactly one online device is required, found {len(online)} ({', '.join(online)}): {why}")
    if named and named != (online[0],):
        raise DeviceUnavailable(f"--device {','.join(named)} is not the one online device ({online[0]})")
    return online


def _describe(devices: list[DeviceInfo]) -> str:
    return ", ".join(f"{d.serial} ({d.state})" for d in devices) or "nothing"


def _remedy(state: str) -> str:
    if state == "unauthorized":
        return "; accept the USB debugging prompt on the phone"
    if state == "offline":
        return "; reconnect it (adb reconnect) or restart the emulator"
    return ""


#: A paired device devicectl can reach counts as present: the CLI's State column shows it as
#: `connected` or `available (paired)`; `unavailable` (offline, or an iOS 16 stub) does not.
_ABSENT_TUNNEL_STATES = frozenset({"unavailable"})


def ios_devices_present(devicectl: Any) -> list[str]:
    """Names of the iOS devices a `devicectl list devices --json-output` document lists as reachable (pure).

    Args:
        devicectl: The parsed JSON (`{"result": {"devices": [...]}}`).

    Returns:
        One `name (udid)` per iOS or iPadOS device whose tunnel is connected, or that is paired
        and not unavailable.

    Raises:
        ValueError: The document does not have devicectl's shape.
    """
    devices = devicectl.get("result", {}).get("devices") if isinstance(devicectl, dict) else None
    if not isinstance(devices, list):
        raise ValueError("expected devicectl's {\"result\": {\"devices\": [...]}} JSON")
    present = []
    for device in devices:
        hardware = device.get("hardwareProperties") or {}
        connection = device.get("connectionProperties") or {}
        if hardware.get("platform") not in ("iOS", "iPadOS"):
            continue
        tunnel = connection.get("tunnelState")
        if tunnel in _ABSENT_TUNNEL_STATES:
            continue
        if tunnel == "connected" or connection.get("pairingState") == "paired":
            name = (device.get("deviceProperties") or {}).get("name") or "iOS device"
            present.append(f"{name} ({hardware.get('udid') or device.get('identifier') or '?'})")
    return present


def booted_simulators(simctl: Any) -> list[str]:
    """Names of the booted simulators in `simctl list devices booted --json` output (pure).

    Raises:
        ValueError: The document does not have simctl's shape.
    """
    runtimes = simctl.get("devices") if isinstance(simctl, dict) else None
    if not isinstance(runtimes, dict):
        raise ValueError("expected simctl's {\"devices\": {runtime: [...]}} JSON")
    return [f"{device.get('name', '?')} ({device.get('udid', '?')})" for devices in runtimes.values()
            for device in devices or () if device.get("state") == "Booted"]


def check_no_ios_devices(run: Callable[..., subprocess.CompletedProcess] = subprocess.run, platform: str = sys.platform) -> None:
    """On macOS, refuse when an iOS simulator is booted or an iOS device is connected.

    AutoMobile-style servers discover iOS too, which would make device selection ambiguous. Both
    listings are read as JSON rather than by matching words in a table. If either check itself
    fails, the run stops rather than assume there is none. Elsewhere: no-op.

    Raises:
        DeviceUnavailable: An iOS target is present, or the check could not be made.
    """
    if platform != "darwin":
        return
    with tempfile.TemporaryDirectory(prefix="agentbench-ios-") as scratch:
        devicectl_json = Path(scratch) / "devicectl.json"
        checks = (
            (["xcrun", "simctl", "list", "devices", "booted", "--json"], None, booted_simulators, "an iOS simulator is booted"),
            (["xcrun", "devicectl", "list", "devices", "--json-output", str(devicectl_json)], devicectl_json,
             ios_devices_present, "an iOS device is connected"),
        )
        for argv, output_file, present, what in checks:
            command = " ".join(argv)
            try:
                done = run(argv, capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise DeviceUnavailable(f"could not check for iOS devices with `{command}`: {exc}; the run stops") from None
            if done.returncode != 0:
                raise DeviceUnavailable(f"`{command}` failed ({done.returncode}): {(done.stderr or done.stdout).strip()[:300]}; the run stops")
            try:
                text = output_file.read_text(encoding="utf-8") if output_file is not None else done.stdout
                found = present(json.loads(text))
            except (OSError, ValueError) as exc:
                raise DeviceUnavailable(f"`{command}` printed no listing this harness can read ({exc}); the run stops") from None
            if found:
                raise DeviceUnavailable(
                    f"{what} ({', '.join(found)}): shut it down or disconnect it, so the agent's device choice is unambiguous"
                )
