"""An adb endpoint -> the session's adb server: started (marked as this harness's), checked to answer, stopped for sure; a stuck one named with what to do.

A server can be left accepting connections and answering nothing (a session ended by force while
the server was mid-way, a server stopped with SIGSTOP). `adb kill-server` cannot stop it (it asks
the server to exit), and every later session would wait on it and fail with `stopped answering`.
So a session asks the server for its version before using it, and:

* a server this harness started is restarted: `Adb.ensure_server` starts every server with
  `SERVER_MARK` in its environment, and the daemon adb forks keeps it, so the process listening
  on the port says whether it is ours (same user, Linux /proc);
* any other server is named (its pid and command line) with how to stop it; it is never killed.

The session stops the server it started with `stop_server`: `adb kill-server`, then, when the
server did not go (it was stuck), its process.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.device.adb import SERVER_MARK, Adb, AdbEndpoint
from pytest_agentbench.errors import DeviceError, DeviceUnavailable

#: How long a running adb server may take to answer `host:version` (it answers in milliseconds).
ANSWER_TIMEOUT_S = 5.0
#: How long a stuck server's process, once killed, may take to free its port.
GONE_WAIT_S = 5.0
_TCP_LISTEN = "0A"


@dataclass(frozen=True)
class Listener:
    """The process listening on an adb server's port: its pid, its command line, whether this harness started it."""

    pid: int
    command: str
    ours: bool


def answers(adb: Adb, *, timeout_s: float = ANSWER_TIMEOUT_S) -> bool:
    """Whether the server at the endpoint answers `host:version` within the timeout."""
    try:
        adb.version(timeout_s=timeout_s)
    except (DeviceError, OSError, ValueError):
        return False
    return True


def listener(port: int, *, proc: Path = Path("/proc")) -> Listener | None:
    """The process (of this user) listening on a loopback or wildcard TCP port, or None (not found, not Linux)."""
    inodes = _listening_inodes(port, proc)
    if not inodes:
        return None
    targets = {f"socket:[{inode}]" for inode in inodes}
    for entry in _pids(proc):
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in targets:
                    return Listener(int(entry.name), _command(entry), _carries_mark(entry))
            except OSError:
                continue
    return None


def stuck_message(endpoint: AdbEndpoint, found: Listener | None, timeout_s: float) -> str:
    """What a stuck server is and how to stop it (`adb kill-server` asks the server itself, so it cannot)."""
    head = f"the adb server at {endpoint} accepts connections but did not answer `host:version` within {timeout_s:g} s"
    if found is None:
        return (f"{head}: it is stuck; stop the process listening on port {endpoint.port} "
                f"(`adb -P {endpoint.port} kill-server` cannot reach a server that does not answer), then run again")
    return (f"{head} (process {found.pid}: `{found.command}`): it is stuck, and pytest-agentbench did not start it, so it is "
            f"left alone; stop it with `kill {found.pid}` (`adb -P {endpoint.port} kill-server` cannot reach a server that "
            "does not answer), then run again")


def ensure_answering(adb: Adb, *, answer_timeout_s: float = ANSWER_TIMEOUT_S) -> bool:
    """Leave the endpoint with no server or an answering one; True when this process restarted a stuck one (and so stops it).

    Raises:
        DeviceUnavailable: A server that this harness did not start is stuck (the message names it
            and how to stop it), or a restart failed.
    """
    if not adb.server_running() or answers(adb, timeout_s=answer_timeout_s):
        return False
    found = listener(adb.endpoint.port) if adb.endpoint.is_local else None
    if found is None or not found.ours:
        raise DeviceUnavailable(stuck_message(adb.endpoint, found, answer_timeout_s))
    # Ours, from an earlier session: restart it rather than fail every session after it.
    _kill(found.pid)
    _wait_gone(adb)
    return _start(adb)


def ensure_server(adb: Adb, *, answer_timeout_s: float = ANSWER_TIMEOUT_S) -> bool:
    """Make sure an answering adb server is at the endpoint; True when this process started it (and so stops it).

    Raises:
        DeviceUnavailable: No server could be started, or a server that this harness did not
            start is stuck (the message names it and how to stop it).
    """
    if adb.server_running():
        return ensure_answering(adb, answer_timeout_s=answer_timeout_s)
    return _start(adb)


def _start(adb: Adb) -> bool:
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


def stop_server(adb: Adb, *, timeout_s: float = 30.0) -> None:
    """Stop an adb server this process started: `adb kill-server`, then its process if it is still there (stuck)."""
    if not adb.endpoint.is_local:
        return
    adb.kill_server(timeout_s=timeout_s)
    if not adb.server_running():
        return
    found = listener(adb.endpoint.port)
    if found is not None and found.ours:
        _kill(found.pid)
        _wait_gone(adb)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait_gone(adb: Adb) -> None:
    deadline = time.monotonic() + GONE_WAIT_S
    while adb.server_running() and time.monotonic() < deadline:
        time.sleep(0.05)


def _listening_inodes(port: int, proc: Path) -> set[str]:
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _TCP_LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def _pids(proc: Path) -> list[Path]:
    try:
        return [entry for entry in proc.iterdir() if entry.name.isdigit()]
    except OSError:
        return []


def _command(entry: Path) -> str:
    try:
        return " ".join((entry / "cmdline").read_bytes().decode(errors="replace").split("\0")).strip()[:200]
    except OSError:
        return "?"


def _carries_mark(entry: Path) -> bool:
    try:
        variables = (entry / "environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(variable.startswith(SERVER_MARK.encode() + b"=") for variable in variables)
