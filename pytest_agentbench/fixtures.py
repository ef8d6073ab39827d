"""Pytest fixtures -> a resolved, claimed device, a run directory, private daemon state and preflight, for suites and Python tests.

Thin on purpose: device policy lives in `device/selection.py` and `device/pool.py`, run
directories in `run/artifacts.py`, preflight in `run/preflight.py`. A fixture wakes the plugin
(wake.py) when a test asks for it in a session that gave no agentbench option.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_agentbench.wake import awake_session, is_awake

if TYPE_CHECKING:
    from pytest_agentbench.device.adb import Adb
    from pytest_agentbench.device.pool import ClaimedDevice, DevicePool
    from pytest_agentbench.run.execute import PreflightResult, PrivateDaemon
    from pytest_agentbench.suite import AppSpec, PreflightSpec, Suite
    from pytest_agentbench.warm.forkserver import WarmStarts

# Registered in every pytest run (a Python test may ask for a device), so the device layer, the
# run stage and the warm starts are imported inside the fixtures and hooks that use them.

#: The warm-start server's log under the artifact root: each program it ran, its exit and CPU.
WARM_LOG_NAME = "warm-starts.log"


def _worker_share(count: int, config: pytest.Config) -> int:
    # Each xdist worker starts its share of the simulated phones.
    if not hasattr(config, "workerinput"):
        return count
    from pytest_agentbench.device.pool import share_of

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)
    return share_of(count, workers=workers, index=index)


@pytest.fixture(scope="session")
def agentbench_devices(request: pytest.FixtureRequest) -> Iterator[DevicePool]:
    """The session's device pool; with `--device sim[:N]` it starts (and later stops) simulated phones."""
    from pytest_agentbench.device.adb import Adb, AdbEndpoint
    from pytest_agentbench.device.claimlog import CLAIM_LOG_NAME
    from pytest_agentbench.device.pool import DevicePool, candidates_for, ensure_server, stop_server
    from pytest_agentbench.device.selection import DeviceEntry, check_no_ios_devices, parse_device_entries
    from pytest_agentbench.run.execute import shutdown

    session = awake_session(request.config)
    sim_count, entries = parse_device_entries(session.options.device)
    adb = Adb(AdbEndpoint.from_environ())
    # Only a session that uses its own adb server may start one (devices all named on other servers need none).
    uses_own_server = bool(sim_count) or not entries or any(entry.endpoint is None for entry in entries)
    started_server = ensure_server(adb) if uses_own_server else False
    # A forced exit (a second Ctrl+C) skips this teardown; the adb server we started goes anyway.
    forced = shutdown.on_force_exit(lambda: stop_server(adb, timeout_s=2)) if started_server else None
    fleet = None
    try:
        with warm_starts(request.config):
            if sim_count:
                from pytest_agentbench.sim.fleet import SimFleet

                fleet = SimFleet(count=_worker_share(sim_count, request.config), adb=adb)
                entries = tuple(DeviceEntry(serial) for serial in fleet.serials)
            check_no_ios_devices()
            candidates = candidates_for(adb, entries, pinnable=session.profile.pinnable)
            yield DevicePool(
                adb=adb, candidates=candidates, pinnable=session.profile.pinnable, fleet=fleet,
                claim_log=session.options.output / CLAIM_LOG_NAME,
            )
    finally:
        if fleet is not None:
            fleet.stop()
        if started_server:
            stop_server(adb)
        if forced is not None:
            shutdown.forget(forced)


_controller_adb_key = pytest.StashKey["Adb"]()
_controller_forced_key = pytest.StashKey[int]()


def _distributes(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput") or not is_awake(config):
        return
    from pytest_agentbench.device.adb import Adb, AdbEndpoint
    from pytest_agentbench.device.pool import ensure_server, stop_server
    from pytest_agentbench.device.selection import parse_device_option
    from pytest_agentbench.run.execute import shutdown
    from pytest_agentbench.usage import check_before_collection, informational

    state = awake_session(config)
    options = state.options
    # A session that cannot run its suites (no agent program, no phone, a stuck adb server) stops
    # here, once, before collection; the adb server the check had to start serves the session and
    # is stopped after it.
    started = check_before_collection(config, options, pinnable=state.profile.pinnable)
    if informational(config):
        return
    _start_shared_warm_starts(config)
    if started is None and _distributes(config) and not options.dry_run and parse_device_option(options.device)[0]:
        # Under xdist every worker would race to start (and later kill) a shared adb server; the
        # controller owns it instead, so no worker stops it under a sibling's feet.
        adb = Adb(AdbEndpoint.from_environ())
        started = adb if ensure_server(adb) else None
    if started is not None:
        config.stash[_controller_adb_key] = started
        config.stash[_controller_forced_key] = shutdown.on_force_exit(lambda: stop_server(started, timeout_s=2))


def pytest_unconfigure(config: pytest.Config) -> None:
    warm = config.stash.get(_controller_warm_key, None)
    adb = config.stash.get(_controller_adb_key, None)
    if warm is None and adb is None:
        return
    from pytest_agentbench.device.pool import stop_server
    from pytest_agentbench.run.execute import shutdown

    if warm is not None:
        warm.stop()
        shutdown.forget(config.stash[_controller_warm_forced_key])
    if adb is not None:
        stop_server(adb)
        shutdown.forget(config.stash[_controller_forced_key])


_controller_warm_key = pytest.StashKey["WarmStarts"]()
_controller_warm_forced_key = pytest.StashKey[int]()
#: The `workerinput` key that hands xdist workers the controller's warm-start socket.
WARM_SOCKET_INPUT = "agentbench_warm_socket"


def _wants_warm_starts(config: pytest.Config) -> bool:
    # Only when a run starts our Python programs: the built-in MCP server or the replay agent.
    session = awake_session(config)
    options = session.options
    uses_ours = session.profile.name == "agentbench" or Path(options.claude).name == "agentbench-replay"
    return options.warm_start and uses_ours and not options.dry_run


def _start_shared_warm_starts(config: pytest.Config) -> None:
    # Under xdist the controller starts one warm-start server for every worker: each would
    # otherwise import the MCP SDK and the package again (about 0.5 s of CPU per worker).
    if not _distributes(config) or not _wants_warm_starts(config) or _inherited_warm_socket():
        return
    from pytest_agentbench.run.execute import shutdown
    from pytest_agentbench.warm.forkserver import start_fork_server

    warm = config.stash[_controller_warm_key] = start_fork_server(log_path=awake_session(config).options.output / WARM_LOG_NAME)
    # A forced exit (a second signal) skips pytest_unconfigure; the server is told to go anyway.
    config.stash[_controller_warm_forced_key] = shutdown.on_force_exit(warm.ask_to_stop)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # xdist's hook, on the controller, once per worker
    warm = node.config.stash.get(_controller_warm_key, None)
    if warm is not None:
        node.workerinput[WARM_SOCKET_INPUT] = str(warm.socket_path)


@contextlib.contextmanager
def warm_starts(config: pytest.Config) -> Iterator[None]:
    """The warm-start server for this process's runs, while they run (see pytest_agentbench.warm).

    Started with the device pool, so only a session that runs something pays for it, and only
    when a run starts our Python programs. Under xdist the workers use the one server their
    controller started (`pytest_configure_node`), and a session started where one is already
    served (the variable set, its socket there) uses that one. The agent inherits the variable from this
    process's environment, and the agent's MCP server from the agent. Off with the ini option
    `agentbench_warm_start = false`.
    """
    if not _wants_warm_starts(config):
        yield
        return
    from pytest_agentbench.run.execute import shutdown
    from pytest_agentbench.warm.launch import SOCKET_VARIABLE

    shared = getattr(config, "workerinput", {}).get(WARM_SOCKET_INPUT) or _inherited_warm_socket()
    warm = None
    if shared is None:
        from pytest_agentbench.warm.forkserver import start_fork_server

        warm = start_fork_server(log_path=awake_session(config).options.output / WARM_LOG_NAME)
    forced = shutdown.on_force_exit(warm.ask_to_stop) if warm is not None else None
    previous = os.environ.get(SOCKET_VARIABLE)
    os.environ[SOCKET_VARIABLE] = shared if shared is not None else str(warm.socket_path)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(SOCKET_VARIABLE, None)
        else:
            os.environ[SOCKET_VARIABLE] = previous
        if warm is not None:
            warm.stop()
            shutdown.forget(forced)


def _inherited_warm_socket() -> str | None:
    # A session started inside one that serves warm starts (a pytest session a test starts, the
    # variable in its environment) uses that server as an xdist worker uses its controller's: the
    # programs are the same code (the server refuses a launcher from another checkout), and the
    # session that started the server stops it.
    from pytest_agentbench.warm.launch import SOCKET_VARIABLE

    path = os.environ.get(SOCKET_VARIABLE, "").strip()
    try:
        return path if path and stat.S_ISSOCK(os.stat(path).st_mode) else None
    except OSError:
        return None


@pytest.fixture
def agentbench_device(request: pytest.FixtureRequest, agentbench_devices: DevicePool) -> Iterator[ClaimedDevice]:
    """A device for this test: ownership checked, benchmark lock held, allocation claim held."""
    from pytest_agentbench.run.execute import shutdown

    with agentbench_devices.claim(holder=request.node.nodeid) as device:
        # Claim files are released by a forced exit too (a dead owner's claim is stale anyway).
        forced = shutdown.on_force_exit(device.release)
        try:
            yield device
        finally:
            shutdown.forget(forced)


@pytest.fixture
def agentbench_run_dir(request: pytest.FixtureRequest) -> Path:
    """This test's run directory under `--agentbench-output` (a suite's name, or the test's name)."""
    from pytest_agentbench.run.execute import new_run_dir

    session = awake_session(request.config)
    suite = getattr(request.node, "suite", None)
    output = session.options.output
    if not output.is_absolute():
        output = request.config.rootpath / output
    return new_run_dir(output, suite.name if suite is not None else request.node.name)


@pytest.fixture
def agentbench_private_daemon(request: pytest.FixtureRequest, agentbench_run_dir: Path) -> Iterator[PrivateDaemon]:
    """Directories for the MCP server's data, database, logs and sockets; sockets are removed after."""
    from pytest_agentbench.run.execute import PrivateDaemon

    profile = awake_session(request.config).profile
    daemon = PrivateDaemon(agentbench_run_dir, profile.private_dirs(agentbench_run_dir)).create()
    yield daemon
    for name, path in daemon.dirs.items():
        # A socket outlives its daemon as a file; data, db and logs are artifacts and stay.
        if "SOCKET" in name and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def agentbench_preflight(agentbench_device: ClaimedDevice, agentbench_run_dir: Path) -> Callable[..., PreflightResult]:
    """A factory: `agentbench_preflight(suite)` or `agentbench_preflight(app=..., preflight=...)`.

    Preflight puts the claimed device and app into the start state and writes `preflight.log`
    and `preflight/` into the run directory (`run_dir=` puts a later attempt elsewhere). The
    dict forms take the suite's YAML keys (`packageName`, `sharedPreferences`, ...); a dict's
    `apkPath` is relative to the current directory. Given a suite with device checks or cleanup
    steps, preflight ends with their before-snapshot (`PreflightResult.device_before`); the sources
    cleanup watches are read first, before the reset and the suite's seeds (`device_baseline`).
    """

    from pytest_agentbench.run.execute import preflight_suite, run_preflight
    from pytest_agentbench.suite import AppSpec, PreflightSpec, app_spec, preflight_spec

    def prepare(
        suite: Suite | None = None,
        *,
        app: AppSpec | dict | None = None,
        preflight: PreflightSpec | dict | None = None,
        run_dir: Path | None = None,
    ) -> PreflightResult:
        if suite is not None:
            return preflight_suite(agentbench_device, suite, run_dir=run_dir or agentbench_run_dir)
        if app is None:
            raise TypeError("agentbench_preflight needs a suite or app=...")
        app_given = app if isinstance(app, AppSpec) else app_spec(app, Path.cwd())
        preflight_given = preflight if isinstance(preflight, PreflightSpec) else preflight_spec(preflight or {})
        if agentbench_device.claim is None:
            # Preflight again after an agent ran: the claim was handed over; hold it again first.
            agentbench_device.take_back()
        return run_preflight(agentbench_device.adb, agentbench_device.serial, app=app_given, preflight=preflight_given,
                             run_dir=run_dir or agentbench_run_dir)

    return prepare
