"""Device-layer calls -> adb host-protocol round trips (pure-python-adb sockets), with exit codes and clear errors."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.device.hostprotocol import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    AdbEndpoint,
    DeviceInfo,
    RemoteStat,
    _AdbFail,
    _HostConnection,
    _parse_connect_reply,
    _parse_devices_l,
    _parse_exit_marker,
    _parse_stat_reply,
    _parse_sync_header,
)
from pytest_agentbench.device.shellscript import ShellArgs, as_script
from pytest_agentbench.errors import DeviceError, DeviceLost, DeviceUnavailable

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "Adb", "AdbEndpoint", "DeviceInfo", "RemoteStat", "ShellResult"]

# Host-side commands (devices, connect) answer at once; only device work gets the caller's timeout.
HOST_COMMAND_TIMEOUT_S = 10.0
#: In the environment of every adb server this harness starts (its value: the starting pid).
SERVER_MARK = "AGENTBENCH_ADB_SERVER"
# adb's own sync chunk size; every server and device accepts it.
SYNC_CHUNK = 64 * 1024
_S_IFREG = 0o100000
_EXIT_MARKER_PREFIX = "__agentbench_rc_"


@dataclass(frozen=True)
class ShellResult:
    """What a device shell command printed (stdout and stderr merged) and how it exited."""

    stdout: str
    exit_code: int


class Adb:
    """The one choke point between the plugin and a device: host-protocol calls to an adb server.

    Thread-safe: every call opens its own socket, so threads may share one instance.

    Attributes:
        endpoint: The adb server this instance talks to.
        round_trips: How many commands were sent to the adb server (device and host).
    """

    def __init__(self, endpoint: AdbEndpoint | None = None, *, adb_path: str | None = None) -> None:
        self.endpoint = endpoint if endpoint is not None else AdbEndpoint.from_environ()
        self._adb_path = adb_path
        self._count_lock = threading.Lock()
        self.round_trips = 0

    # ---------------------------------------------------------------- server

    def server_running(self) -> bool:
        """Whether something accepts connections on the endpoint."""
        try:
            with socket.create_connection((self.endpoint.host, self.endpoint.port), timeout=2):
                return True
        except OSError:
            return False

    def ensure_server(self, *, timeout_s: float = 20.0) -> None:
        """Start the adb server when nothing listens on the endpoint, as the adb CLI does.

        Args:
            timeout_s: How long to wait for the started server to answer.

        Raises:
            DeviceUnavailable: No adb binary, a remote endpoint, or the server did not come up.
        """
        if self.server_running():
            return
        if not self.endpoint.is_local:
            raise DeviceUnavailable(
                f"no adb server answers at {self.endpoint}, and a remote server cannot be started from here"
            )
        adb = self.adb_binary()
        # The mark tells a later session that this harness started the server (device/server.py):
        # the daemon adb forks keeps it in its environment.
        env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(self.endpoint.port), SERVER_MARK: str(os.getpid())}
        env.pop("ADB_SERVER_SOCKET", None)
        try:
            completed = subprocess.run(
                [adb, "-P", str(self.endpoint.port), "start-server"],
                env=env, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            raise DeviceUnavailable(f"`{adb} -P {self.endpoint.port} start-server` did not finish in {timeout_s:g}s") from exc
        except OSError as exc:
            raise DeviceUnavailable(f"could not run {adb} to start the adb server: {exc}") from exc
        if completed.returncode != 0 or not self.server_running():
            raise DeviceUnavailable(
                f"could not start the adb server on port {self.endpoint.port}: "
                f"{(completed.stderr or completed.stdout).strip() or 'no output'}",
                command=f"adb -P {self.endpoint.port} start-server",
                output=completed.stderr, exit_code=completed.returncode,
            )

    def kill_server(self, *, timeout_s: float = 30.0) -> None:
        """Stop the adb server on a local endpoint (`adb -P PORT kill-server`); for servers this process started."""
        if not self.endpoint.is_local:
            return
        try:
            subprocess.run(
                [self.adb_binary(), "-P", str(self.endpoint.port), "kill-server"],
                capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired, DeviceUnavailable):
            pass

    def adb_binary(self) -> str:
        """The adb executable: the one given, else PATH, else $ANDROID_HOME/platform-tools.

        Raises:
            DeviceUnavailable: None was found.
        """
        if self._adb_path:
            return self._adb_path
        found = _find_adb(os.environ)
        if found is None:
            raise DeviceUnavailable(
                "no adb executable on PATH or in $ANDROID_HOME/platform-tools; install Android platform-tools"
            )
        return found

    def version(self, *, timeout_s: float = HOST_COMMAND_TIMEOUT_S) -> int:
        """The adb server's protocol version (41 for platform-tools 29+)."""
        return int(self._host_query("host:version", timeout_s=timeout_s), 16)

    # ---------------------------------------------------------------- host commands

    def devices(self) -> list[DeviceInfo]:
        """Every device the adb server knows, with its state.

        Raises:
            DeviceLost: The adb server is not reachable.
        """
        return _parse_devices_l(self._host_query("host:devices-l"))

    def connect(self, host: str, port: int) -> str:
        """Attach a network device (`adb connect HOST:PORT`).

        Returns:
            The server's message (`connected to ...` or `already connected to ...`).

        Raises:
            DeviceError: The server could not connect.
        """
        message = self._host_query(f"host:connect:{host}:{port}")
        if not _parse_connect_reply(message):
            raise DeviceError(f"adb connect {host}:{port} failed: {message.strip()}", command=f"connect {host}:{port}", output=message)
        return message

    def disconnect(self, host: str, port: int, *, missing_ok: bool = True) -> None:
        """Detach a network device (`adb disconnect HOST:PORT`).

        Args:
            host: The device host.
            port: The device port.
            missing_ok: Whether a device the server does not know is fine.

        Raises:
            DeviceError: The server refused and missing_ok is False.
        """
        try:
            self._host_query(f"host:disconnect:{host}:{port}")
        except DeviceError:
            if not missing_ok:
                raise

    # ---------------------------------------------------------------- device commands

    def shell(self, serial: str, args: ShellArgs, *, timeout_s: float = 30, check: bool = True) -> ShellResult:
        """Run one command line on the device and return its output and exit status.

        Args:
            serial: The device serial.
            args: Words to quote (`["pm", "clear", pkg]`) or a Script for several commands.
            timeout_s: Seconds before the device counts as lost.
            check: Raise DeviceError on a non-zero exit status.

        Returns:
            The merged stdout/stderr and the exit status.

        Raises:
            DeviceError: Non-zero exit with check=True (carries command, output and exit code).
            DeviceLost: The device or server vanished, or no answer within timeout_s.
            DeviceUnavailable: The server does not know the serial or cannot use it.
        """
        script = as_script(args)
        raw, exit_code = self._run_with_status(serial, "shell", script.text, timeout_s)
        output = raw.decode("utf-8", "replace")
        if check and exit_code != 0:
            raise DeviceError(
                f"{serial}: `{script.text}` exited {exit_code}: {_tail(output)}",
                command=script.text, output=output, exit_code=exit_code,
            )
        return ShellResult(output, exit_code)

    def exec_out(self, serial: str, args: ShellArgs, *, timeout_s: float = 30, check: bool = False) -> bytes:
        """Run a command and return its raw stdout bytes (`adb exec-out`), e.g. a PNG or an XML dump.

        Args:
            serial: The device serial.
            args: Words to quote or a Script.
            timeout_s: Seconds before the device counts as lost.
            check: Raise DeviceError on a non-zero exit status (off by default, like `adb exec-out`).

        Returns:
            The bytes the command wrote to stdout, untouched (no line-ending translation).

        Raises:
            DeviceError: Non-zero exit with check=True.
            DeviceLost: The device or server vanished, or no answer within timeout_s.
            DeviceUnavailable: The server does not know the serial.
        """
        script = as_script(args)
        output, exit_code = self._run_with_status(serial, "exec", script.text, timeout_s)
        if check and exit_code != 0:
            text = output.decode("utf-8", "replace")
            raise DeviceError(
                f"{serial}: `{script.text}` exited {exit_code}: {_tail(text)}",
                command=script.text, output=text, exit_code=exit_code,
            )
        return output

    def _run_with_status(self, serial: str, service: str, command: str, timeout_s: float) -> tuple[bytes, int]:
        # ppadb speaks only shell v1 and `exec:` has no status either: have the device shell print
        # the status after a random marker and cut it off again. Every device command passes here,
        # which also turns output that stops early (device gone mid-command) into DeviceLost.
        marker = f"{_EXIT_MARKER_PREFIX}{secrets.token_hex(6)}__".encode()
        raw = self._device_stream(serial, f"{service}:{command}; echo {marker.decode()}:$?", timeout_s, what=command)
        try:
            return _parse_exit_marker(raw, marker)
        except ValueError as exc:
            raise DeviceLost(
                f"{serial}: the output of `{command}` ended before its exit status; "
                "the device or adb server went away mid-command",
                command=command, output=raw[-2000:].decode("utf-8", "replace"),
            ) from exc

    def push(self, serial: str, data: bytes, remote: str, mode: int = 0o644, *, timeout_s: float = 60) -> None:
        """Write bytes to a device file over the sync protocol (`adb push`).

        Raises:
            DeviceError: The device refused the file (carries its message).
            DeviceLost: The device or server vanished, or no answer within timeout_s.
        """
        deadline = time.monotonic() + timeout_s
        with self._device_connection(serial, "sync:", deadline, what=f"push {remote}") as conn:
            try:
                header = f"{remote},{mode | _S_IFREG}".encode()
                conn.write(b"SEND" + struct.pack("<I", len(header)) + header)
                view = memoryview(data)
                for start in range(0, len(data), SYNC_CHUNK):
                    chunk = view[start:start + SYNC_CHUNK]
                    conn.write(b"DATA" + struct.pack("<I", len(chunk)) + bytes(chunk))
                conn.write(b"DONE" + struct.pack("<I", int(time.time())))
                reply_id, reply_len = _parse_sync_header(conn.read_exact(8))
                if reply_id == b"FAIL":
                    message = conn.read_exact(reply_len).decode("utf-8", "replace")
                    raise DeviceError(f"{serial}: push to {remote} failed: {message}", command=f"push {remote}", output=message)
                if reply_id != b"OKAY":
                    raise DeviceLost(f"{serial}: push to {remote} got {reply_id!r} instead of OKAY", command=f"push {remote}")
                conn.write(b"QUIT" + struct.pack("<I", 0))
            except (OSError, ValueError) as exc:
                raise self._lost(serial, f"push {remote}", exc) from exc

    def pull(self, serial: str, remote: str, *, timeout_s: float = 60) -> bytes:
        """Read a device file over the sync protocol (`adb pull`).

        Raises:
            DeviceError: The device could not read the file (carries its message).
            DeviceLost: The device or server vanished, or no answer within timeout_s.
        """
        deadline = time.monotonic() + timeout_s
        with self._device_connection(serial, "sync:", deadline, what=f"pull {remote}") as conn:
            try:
                path = remote.encode()
                conn.write(b"RECV" + struct.pack("<I", len(path)) + path)
                data = bytearray()
                while True:
                    chunk_id, length = _parse_sync_header(conn.read_exact(8))
                    if chunk_id == b"DATA":
                        data += conn.read_exact(length)
                    elif chunk_id == b"DONE":
                        break
                    elif chunk_id == b"FAIL":
                        message = conn.read_exact(length).decode("utf-8", "replace")
                        raise DeviceError(f"{serial}: pull of {remote} failed: {message}", command=f"pull {remote}", output=message)
                    else:
                        raise ValueError(f"unexpected sync reply {chunk_id!r}")
                conn.write(b"QUIT" + struct.pack("<I", 0))
                return bytes(data)
            except (OSError, ValueError) as exc:
                raise self._lost(serial, f"pull {remote}", exc) from exc

    def stat(self, serial: str, remote: str, *, timeout_s: float = 30) -> RemoteStat | None:
        """A device file's mode, size and mtime, or None when it does not exist (sync STAT)."""
        deadline = time.monotonic() + timeout_s
        with self._device_connection(serial, "sync:", deadline, what=f"stat {remote}") as conn:
            try:
                path = remote.encode()
                conn.write(b"STAT" + struct.pack("<I", len(path)) + path)
                reply = conn.read_exact(16)
                conn.write(b"QUIT" + struct.pack("<I", 0))
                return _parse_stat_reply(reply)
            except (OSError, ValueError) as exc:
                raise self._lost(serial, f"stat {remote}", exc) from exc

    # ---------------------------------------------------------------- plumbing

    def _count(self) -> None:
        with self._count_lock:
            self.round_trips += 1

    def _host_query(self, service: str, *, timeout_s: float = HOST_COMMAND_TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout_s
        self._count()
        with _HostConnection(self.endpoint, deadline).open() as conn:
            try:
                conn.send(service)
                return conn.read_text()
            except _AdbFail as exc:
                raise DeviceError(f"adb server refused {service}: {exc}", command=service, output=str(exc)) from exc
            except (OSError, ValueError) as exc:
                # A server that accepts and never answers stays so: say how to get rid of it.
                raise DeviceLost(
                    f"the adb server at {self.endpoint} stopped answering `{service}` ({exc}); if it stays stuck, "
                    f"stop it (`adb -P {self.endpoint.port} kill-server`, or end the process listening on port "
                    f"{self.endpoint.port}) and run again", command=service
                ) from exc

    def _device_connection(self, serial: str, service: str, deadline: float, *, what: str) -> _HostConnection:
        self._count()
        conn = _HostConnection(self.endpoint, deadline).open()
        try:
            try:
                conn.send(f"host:transport:{serial}")
            except _AdbFail as exc:
                raise DeviceUnavailable(
                    f"{serial}: the adb server cannot reach this device ({exc}); check `adb devices`",
                    command=what, output=str(exc),
                ) from exc
            try:
                conn.send(service)
            except _AdbFail as exc:
                raise DeviceError(f"{serial}: the device refused `{what}`: {exc}", command=what, output=str(exc)) from exc
        except (OSError, ValueError) as exc:
            conn.close()
            raise self._lost(serial, what, exc) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _device_stream(self, serial: str, service: str, timeout_s: float, *, what: str) -> bytes:
        deadline = time.monotonic() + timeout_s
        with self._device_connection(serial, service, deadline, what=what) as conn:
            data = bytearray()
            try:
                while True:
                    chunk = conn._recv(65536)
                    if not chunk:
                        return bytes(data)
                    data += chunk
            except (OSError, ValueError) as exc:
                raise self._lost(serial, what, exc) from exc

    def _lost(self, serial: str, what: str, exc: BaseException) -> DeviceLost:
        if isinstance(exc, (TimeoutError, socket.timeout)):
            reason = "no answer before the timeout"
        else:
            reason = f"{type(exc).__name__}: {exc}"
        return DeviceLost(
            f"{serial}: lost the device during `{what}` ({reason}); check that it is still in `adb devices`",
            command=what,
        )

def _tail(text: str, limit: int = 500) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _find_adb(env: Mapping[str, str]) -> str | None:
    found = shutil.which("adb", path=env.get("PATH"))
    if found:
        return found
    for var in ("ANDROID_HOME", "ANDROID_SDK_ROOT"):
        root = env.get(var)
        if root:
            candidate = Path(root) / "platform-tools" / "adb"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None

