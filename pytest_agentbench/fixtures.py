"""Pytest fixtures -> a resolved, claimed device, a run directory, private daemon state and preflight, for suites and Python tests."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.device.adb import Adb, AdbEndpoint, DeviceInfo
from pytest_agentbench.device.claims import (
    Claim,
    Reclaim,
    acquire_benchmark_lock,
    acquire_claim,
    check_device_ownership,
    reclaim_after_agent,
)
from pytest_agentbench.device.shellscript import Script, sh
from pytest_agentbench.errors import DeviceBusy, DeviceUnavailable
from pytest_agentbench.fingerprint import device_fingerprint_script, parse_device_fingerprint
from pytest_agentbench.preflight import PreflightResult, run_preflight
from pytest_agentbench.session import session_key
from pytest_agentbench.suite import AppSpec, PreflightSpec, Suite

_USER_MARK = "@@agentbench-current-user@@"


# ----------------------------------------------------------------------------- device resolution


def parse_device_option(value: str | None) -> tuple[int, tuple[str, ...]]:
    """`--device` -> (simulated phones to start, named serials).

    `sim` starts one simulated phone, `sim:N` starts N; anything else is a serial, or several
    separated by commas (for pytest-xdist workers to share out).

    Raises:
        pytest.UsageError: `sim:N` with N not a positive whole number.
    """
    if not value:
        return 0, ()
    if value == "sim" or value.startswith("sim:"):
        count_text = value.partition(":")[2] or "1"
        if not count_text.isdigit() or int(count_text) < 1:
            raise pytest.UsageError(f"--device {value}: expected sim or sim:N with N >= 1")
        return int(count_text), ()
    return 0, tuple(serial.strip() for serial in value.split(",") if serial.strip())


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


@dataclass
class DevicePool:
    """The session's devices: the adb client, candidate serials, simulated phones and fingerprints."""

    adb: Adb
    candidates: list[str]
    pinnable: bool
    fleet: Any = None
    fingerprints: dict[str, dict[str, str]] = field(default_factory=dict)

    def fingerprint(self, serial: str) -> dict[str, str]:
        """Read a device's fingerprint and foreground user in one round trip (once per session).

        Raises:
            DeviceUnavailable: The foreground user is not the primary user (0).
        """
        if serial not in self.fingerprints:
            script = Script.join([device_fingerprint_script(), sh("echo", _USER_MARK), sh("am", "get-current-user")], ";")
            output = self.adb.shell(serial, script, check=False).stdout
            fingerprint_part, _, user_part = output.partition(_USER_MARK)
            user = user_part.strip().splitlines()[-1].strip() if user_part.strip() else "unknown"
            if user != "0":
                raise DeviceUnavailable(
                    f"{serial}: the foreground user is {user}, not the primary user 0; preference seeding with "
                    "run-as targets user 0 while the launch targets the current user. Switch with `adb shell am switch-user 0`"
                )
            self.fingerprints[serial] = parse_device_fingerprint(fingerprint_part)
        return self.fingerprints[serial]


@dataclass
class ClaimedDevice:
    """A device held for one test: the benchmark lock for the whole run, the claim around preflight.

    The allocation claim is handed to the agent's own MCP server just before the agent starts
    (`hand_over()`) and taken back when it exits (`take_back()`); if someone else claimed the
    device meanwhile, `take_back()` says so and the screen must not be read.
    """

    serial: str
    adb: Adb
    scope: str
    fingerprint: dict[str, str]
    lock: Claim
    claim: Claim | None

    def hand_over(self) -> None:
        if self.claim is not None:
            self.claim.release()
            self.claim = None

    def take_back(self) -> Reclaim:
        outcome = reclaim_after_agent(self.serial, scope=self.scope)
        self.claim = outcome.claim
        return outcome

    def release(self) -> None:
        if self.claim is not None:
            self.claim.release()
            self.claim = None
        self.lock.release()


def _xdist_share(count: int, config: pytest.Config) -> int:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not hasattr(config, "workerinput") or workers <= 1:
        return count
    # Each worker starts its share of the simulated phones; every worker gets at least one.
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)
    return max(1, count // workers + (1 if index < count % workers else 0))


@pytest.fixture(scope="session")
def agentbench_devices(request: pytest.FixtureRequest) -> Iterator[DevicePool]:
    """The session's device pool; with `--device sim[:N]` it starts (and later stops) simulated phones."""
    session = request.config.stash[session_key]
    sim_count, named = parse_device_option(session.options.device)
    adb = Adb(AdbEndpoint.from_environ())
    started_server = _ensure_server(adb)
    fleet = None
    try:
        if sim_count:
            from pytest_agentbench.sim.fleet import SimFleet

            fleet = SimFleet(count=_xdist_share(sim_count, request.config), adb=adb)
            named = tuple(fleet.serials)
        check_no_ios_devices()
        candidates = choose_devices(adb.devices(), named=named, pinnable=session.profile.pinnable)
        yield DevicePool(adb=adb, candidates=candidates, pinnable=session.profile.pinnable, fleet=fleet)
    finally:
        if fleet is not None:
            fleet.stop()
        if started_server:
            adb.kill_server()


def _ensure_server(adb: Adb) -> bool:
    """Start the adb server if none listens; True when this process started it (and so stops it)."""
    if adb.server_running():
        return False
    try:
        adb.ensure_server()
    except DeviceUnavailable:
        # Another process (an xdist sibling) may have won the race to start it.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if adb.server_running():
                return False
            time.sleep(0.1)
        raise
    return True


_controller_adb_key = pytest.StashKey["Adb"]()


def _distributes(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))


def pytest_sessionstart(session: pytest.Session) -> None:
    # Under xdist every worker would race to start (and later kill) a shared adb server; the
    # controller owns it instead, so no worker stops it under a sibling's feet.
    config = session.config
    options = config.stash[session_key].options
    if not _distributes(config) or options.dry_run or not parse_device_option(options.device)[0]:
        return
    adb = Adb(AdbEndpoint.from_environ())
    if _ensure_server(adb):
        config.stash[_controller_adb_key] = adb


def pytest_unconfigure(config: pytest.Config) -> None:
    adb = config.stash.get(_controller_adb_key, None)
    if adb is not None:
        adb.kill_server()


@pytest.fixture
def agentbench_device(agentbench_devices: DevicePool) -> Iterator[ClaimedDevice]:
    """A device for this test: ownership checked, benchmark lock held, allocation claim held."""
    pool = agentbench_devices
    scope = pool.adb.endpoint.scope
    refusals: list[str] = []
    for serial in pool.candidates:
        try:
            check_device_ownership(serial, scope=scope)
            lock = acquire_benchmark_lock(serial, scope=scope)
        except DeviceBusy as busy:
            refusals.append(str(busy))
            continue
        try:
            claim = acquire_claim(serial, scope=scope, socket_path="")
        except BaseException:
            lock.release()
            raise
        device = ClaimedDevice(serial=serial, adb=pool.adb, scope=scope, fingerprint={}, lock=lock, claim=claim)
        try:
            device.fingerprint = pool.fingerprint(serial)
            yield device
        finally:
            device.release()
        return
    raise DeviceBusy("; ".join(refusals) or "no candidate device")


# ----------------------------------------------------------------------------- run directory and daemon


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "run"


def new_run_dir(output: Path, suite_name: str) -> Path:
    """`<output>/<suite>/<UTC timestamp>-<short random id>/`, created empty."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run_dir = output / _safe_name(suite_name) / f"{stamp}-{secrets.token_hex(4)}"
    run_dir.mkdir(parents=True, exist_ok=False)
    return run_dir


@pytest.fixture
def agentbench_run_dir(request: pytest.FixtureRequest) -> Path:
    """This test's run directory under `--agentbench-output` (a suite's name, or the test's name)."""
    session = request.config.stash[session_key]
    suite = getattr(request.node, "suite", None)
    output = session.options.output
    if not output.is_absolute():
        output = request.config.rootpath / output
    return new_run_dir(output, suite.name if suite is not None else request.node.name)


@dataclass(frozen=True)
class PrivateDaemon:
    """The run's private MCP server state: variable -> directory, all under the run directory."""

    run_dir: Path
    dirs: dict[str, Path]

    @property
    def environ(self) -> dict[str, str]:
        return {name: str(path) for name, path in self.dirs.items()}


@pytest.fixture
def agentbench_private_daemon(request: pytest.FixtureRequest, agentbench_run_dir: Path) -> Iterator[PrivateDaemon]:
    """Directories for the MCP server's data, database, logs and sockets; sockets are removed after."""
    profile = request.config.stash[session_key].profile
    dirs = profile.private_dirs(agentbench_run_dir)
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    yield PrivateDaemon(agentbench_run_dir, dirs)
    for name, path in dirs.items():
        # A socket outlives its daemon as a file; data, db and logs are artifacts and stay.
        if "SOCKET" in name and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def agentbench_preflight(agentbench_device: ClaimedDevice, agentbench_run_dir: Path) -> Callable[..., PreflightResult]:
    """A factory: `agentbench_preflight(suite)` or `agentbench_preflight(app=..., preflight=...)`.

    Preflight puts the claimed device and app into the start state and writes `preflight.log`
    and `preflight/` into the run directory (`run_dir=` puts a later attempt elsewhere). The
    dict forms take the suite's YAML keys (`packageName`, `sharedPreferences`, ...).
    """

    def prepare(
        suite: Suite | None = None,
        *,
        app: AppSpec | dict | None = None,
        preflight: PreflightSpec | dict | None = None,
        run_dir: Path | None = None,
    ) -> PreflightResult:
        if suite is not None:
            app, preflight = suite.app, suite.preflight
        if app is None:
            raise TypeError("agentbench_preflight needs a suite or app=...")
        app_spec = app if isinstance(app, AppSpec) else _app_from_dict(app)
        pre_spec = preflight if isinstance(preflight, PreflightSpec) else _preflight_from_dict(preflight or {})
        if agentbench_device.claim is None:
            # Preflight again after an agent ran: the claim was handed over; hold it again first.
            agentbench_device.take_back()
        return run_preflight(
            agentbench_device.adb, agentbench_device.serial, app=app_spec, preflight=pre_spec,
            run_dir=run_dir or agentbench_run_dir,
        )

    return prepare


def _app_from_dict(data: dict) -> AppSpec:
    apk = data.get("apkPath")
    return AppSpec(package_name=data["packageName"], apk_path=Path(apk).absolute() if apk else None)


def _preflight_from_dict(data: dict) -> PreflightSpec:
    prefs = {name: {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()} for name, values in (data.get("sharedPreferences") or {}).items()}
    return PreflightSpec(
        clear_app_data=data.get("clearAppData", True),
        shared_preferences=prefs,
        launch_uri=data.get("launchUri"),
        settle_seconds=float(data.get("settleSeconds", 2)),
        start_screen_includes=tuple(data.get("startScreenIncludes", ())),
    )
