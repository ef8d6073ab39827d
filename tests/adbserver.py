"""A free port -> a private, real adb server (a child process) for tests, stopped by its process group afterwards.

Import the fixtures into a test module (`from adbserver import private_adb_server`, or
`from tests.adbserver import ...`; both work from the rootdir conftest). The server never uses
the default port 5037, so tests never touch an adb server a person is using.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from typing import Any
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_agentbench.device.adb import Adb, AdbEndpoint

# Ports the adb server scans for emulators at start (5555-5585) and its default (5037) are never used.
_RESERVED_PORTS = frozenset(range(5550, 5590)) | {5037}


def free_port() -> int:
    """A loopback TCP port that is free right now and outside adb's reserved ranges."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port not in _RESERVED_PORTS:
            return port


def free_port_run(count: int) -> int:
    """The first of `count` consecutive loopback ports that are all free right now (for `--port P --count N`)."""
    while True:
        first = free_port()
        probes = []
        try:
            for port in range(first, first + count):
                if port in _RESERVED_PORTS or port > 65535:
                    break
                probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                probes.append(probe)
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    break
            else:
                return first
        finally:
            for probe in probes:
                probe.close()


def adb_binary() -> str | None:
    """The adb executable tests use (PATH first, then Debian's location)."""
    return shutil.which("adb") or ("/usr/bin/adb" if Path("/usr/bin/adb").exists() else None)


@dataclass
class PrivateAdbServer:
    """A running adb server on a private port.

    Attributes:
        port: Its port.
        endpoint: The endpoint for `Adb(...)`.
        process: The `adb nodaemon server` child.
        log_path: Where the server writes its log.
    """

    port: int
    endpoint: AdbEndpoint
    process: subprocess.Popen
    log_path: Path
    adb_path: str
    _stopped: bool = field(default=False, repr=False)

    def client(self) -> Adb:
        """A fresh device-layer client bound to this server."""
        return Adb(self.endpoint, adb_path=self.adb_path)

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """An environment whose adb (CLI, mobile-mcp, ...) talks to this server only."""
        env = dict(os.environ if base is None else base)
        env.pop("ADB_SERVER_SOCKET", None)
        env["ANDROID_ADB_SERVER_PORT"] = str(self.port)
        env["ANDROID_ADB_SERVER_ADDRESS"] = "127.0.0.1"
        adb_dir = str(Path(self.adb_path).parent)
        if adb_dir not in env.get("PATH", "").split(os.pathsep):
            env["PATH"] = adb_dir + os.pathsep + env.get("PATH", "")
        return env

    def run_adb(self, *args: str, timeout: float = 60, input_bytes: bytes | None = None) -> subprocess.CompletedProcess:
        """Run the adb CLI against this server, capturing bytes."""
        return subprocess.run(
            [self.adb_path, "-P", str(self.port), *args], env=self.env(), capture_output=True,
            timeout=timeout, input=input_bytes, stdin=None if input_bytes is not None else subprocess.DEVNULL,
        )

    def alive(self) -> bool:
        """Whether the server process still runs."""
        return self.process.poll() is None

    def stop(self) -> None:
        """Stop the server and everything in its process group; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)


@contextlib.contextmanager
def start_private_adb_server(log_dir: Path) -> Iterator[PrivateAdbServer]:
    """Start `adb nodaemon server` on a free port in its own process group; stop it on exit.

    Args:
        log_dir: Directory for the server log (`adb-server-PORT.log`).

    Yields:
        The running server, answering on its port.
    """
    adb = adb_binary()
    if adb is None:
        pytest.skip("no adb executable (install Debian's `adb` package)")
    server = _started_server(adb, Path(log_dir))
    try:
        yield server
    finally:
        server.stop()


#: A free port can be taken between probing it and the server binding it; so many tries, then fail.
_START_TRIES = 3


def _started_server(adb: str, log_dir: Path, *, home: Path | None = None) -> PrivateAdbServer:
    """`adb nodaemon server` answering on a free port; a port lost to a race is retried on another."""
    problems = []
    for _ in range(_START_TRIES):
        port = free_port()
        log_path = log_dir / f"adb-server-{port}.log"
        env = dict(os.environ)
        env.pop("ADB_SERVER_SOCKET", None)
        env["ANDROID_ADB_SERVER_PORT"] = str(port)
        if home is not None:
            env["HOME"] = str(home)
        with open(log_path, "wb") as log:
            # nodaemon keeps the server our child, so we own its pid and can stop it by process group.
            process = subprocess.Popen(
                [adb, "-P", str(port), "nodaemon", "server"], env=env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        server = PrivateAdbServer(port, AdbEndpoint("127.0.0.1", port), process, log_path, adb)
        deadline = time.monotonic() + 15
        while not server.client().server_running():
            if process.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        else:
            return server
        server.stop()
        problems.append(f"port {port}: {log_path.read_text(errors='replace')[-500:]}")
    raise RuntimeError("private adb server did not start:\n" + "\n".join(problems))


@pytest.fixture
def private_adb_server(tmp_path: Path) -> Iterator[PrivateAdbServer]:
    """A private real adb server for one test."""
    with start_private_adb_server(tmp_path) as server:
        yield server


@pytest.fixture(scope="module")
def module_adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    """A private real adb server shared by the tests of one module."""
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


@contextlib.contextmanager
def one_simulated_phone(log_dir: Path, phone_factory: Any = None) -> Iterator[tuple[PrivateAdbServer, Any]]:
    """A private adb server with one simulated phone in this process (its sources readable directly); both stopped on exit.

    Args:
        log_dir: Directory for the adb server log.
        phone_factory: Builds the phone (default: the stock simulated phone).

    Yields:
        (the server, the SimFleet: `.phones[0]`, `.serials[0]`).
    """
    from pytest_agentbench.sim.fleet import SimFleet

    with start_private_adb_server(log_dir) as server:
        fleet = SimFleet(count=1, adb=server.client(), **({"phone_factory": phone_factory} if phone_factory else {}))
        try:
            yield server, fleet
        finally:
            fleet.stop()
