"""`--device` text + what the adb server lists -> the serials a session may use (the seed's one-online rule, the iOS check)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

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


def check_no_ios_devices(run: Callable[..., subprocess.CompletedProcess] = subprocess.run, platform: str = sys.platform) -> None:
    """On macOS, refuse when an iOS simulator is booted or an iOS device is connected.

    AutoMobile-style servers discover iOS too, which would make device selection ambiguous. If
    either check itself fails, the run stops rather than assume there is none. Elsewhere: no-op.

    Raises:
        DeviceUnavailable: An iOS target is present, or the check could not be made.
    """
    if platform != "darwin":
        return
    checks = (
        (["xcrun", "simctl", "list", "devices", "booted"], lambda out: "(Booted)" in out, "an iOS simulator is booted"),
        (["xcrun", "devicectl", "list", "devices"], _devicectl_lists_connected, "an iOS device is connected"),
    )
    for argv, present, what in checks:
        try:
            done = run(argv, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DeviceUnavailable(f"could not check for iOS devices with `{' '.join(argv)}`: {exc}; the run stops") from None
        if done.returncode != 0:
            raise DeviceUnavailable(
                f"`{' '.join(argv)}` failed ({done.returncode}): {(done.stderr or done.stdout).strip()[:300]}; the run stops"
            )
        if present(done.stdout):
            raise DeviceUnavailable(f"{what}: shut it down or disconnect it, so the agent's device choice is unambiguous")


def _devicectl_lists_connected(output: str) -> bool:
    return any(re.search(r"\bconnected\b", line) and "unavailable" not in line for line in output.splitlines()[2:])
