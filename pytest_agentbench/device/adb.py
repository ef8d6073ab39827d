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

from ppadb.connection import Connection

from pytest_agentbench.device.shellscript import ShellArgs, as_script
from pytest_agentbench.errors import DeviceError, DeviceLost, DeviceUnavailable

DEFAULT_HOST = "localhost"
DEFAULT_PORT = 5037
# Host-side commands (devices, connect) answer at once; only device work gets the caller's timeout.
HOST_COMMAND_TIMEOUT_S = 10.0
# adb's own sync chunk size; every server and device accepts it.
SYNC_CHUNK = 64 * 1024
# The states `adb devices` prints; "no permissions" is the only one with a space in it.
KNOWN_STATES = (
    "device", "offline", "unauthorized", "authorizing", "connecting", "bootloader",
    "recovery", "sideload", "rescue", "host", "unknown", "detached", "no permissions",
)
_S_IFREG = 0o100000
_EXIT_MARKER_PREFIX = "__agentbench_rc_"


@dataclass(frozen=True)
class AdbEndpoint:
    """Where the adb server listens.

    Attributes:
        host: Host name or address of the adb server.
        port: Its TCP port.
    """

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT

    @classmethod
    def from_environ(cls, env: Mapping[str, str] | None = None) -> AdbEndpoint:
        """Read the endpoint the adb CLI would use from the environment.

        `ADB_SERVER_SOCKET` (`tcp:HOST:PORT` or `tcp:PORT`) wins; otherwise
        `ANDROID_ADB_SERVER_ADDRESS` and `ANDROID_ADB_SERVER_PORT`, defaulting to localhost:5037.

        Args:
            env: The environment to read; `os.environ` when None.

        Returns:
            The endpoint.

        Raises:
            ValueError: A variable is set to something adb would not accept either.
        """
        env = os.environ if env is None else env
        socket_spec = env.get("ADB_SERVER_SOCKET", "").strip()
        if socket_spec:
            return _parse_socket_spec(socket_spec)
        host = env.get("ANDROID_ADB_SERVER_ADDRESS", "").strip() or DEFAULT_HOST
        port_text = env.get("ANDROID_ADB_SERVER_PORT", "").strip()
        port = _parse_port(port_text, "ANDROID_ADB_SERVER_PORT") if port_text else DEFAULT_PORT
        return cls(host, port)

    @property
    def scope(self) -> str:
        """The device-claim scope for this server, e.g. `tcp-localhost-5037`."""
        safe_host = "".join(ch if ch.isalnum() or ch in ".-" else "_" for ch in self.host)
        return f"tcp-{safe_host}-{self.port}"

    @property
    def is_local(self) -> bool:
        """Whether a server for this endpoint could be started on this machine."""
        return self.host in ("localhost", "127.0.0.1", "::1")

    def environ(self) -> dict[str, str]:
        """The variables that point a child process (adb CLI, an MCP server) at this server."""
        return {
            "ADB_SERVER_SOCKET": f"tcp:{self.host}:{self.port}",
            "ANDROID_ADB_SERVER_ADDRESS": self.host,
            "ANDROID_ADB_SERVER_PORT": str(self.port),
        }

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class DeviceInfo:
    """One line of `adb devices -l`.

    Attributes:
        serial: The device serial (`emulator-5554`, `127.0.0.1:15555`).
        state: `device`, `offline`, `unauthorized`, ...
        product: `product:` field, "" when absent.
        model: `model:` field, "" when absent.
        device: `device:` field, "" when absent.
        transport_id: `transport_id:` field, None when absent.
    """

    serial: str
    state: str
    product: str = ""
    model: str = ""
    device: str = ""
    transport_id: int | None = None


@dataclass(frozen=True)
class ShellResult:
    """What a device shell command printed (stdout and stderr merged) and how it exited."""

    stdout: str
    exit_code: int


@dataclass(frozen=True)
class RemoteStat:
    """A device file's `stat` as the sync protocol reports it."""

    mode: int
    size: int
    mtime: int


class _HostConnection(Connection):
    """A ppadb connection that reads exact lengths and never waits past its deadline."""

    def __init__(self, endpoint: AdbEndpoint, deadline: float) -> None:
        super().__init__(endpoint.host, endpoint.port, timeout=_remaining(deadline))
        self.deadline = deadline
        self.endpoint = endpoint

    def open(self) -> _HostConnection:
        try:
            self.connect()
        except RuntimeError as exc:  # ppadb turns every socket error into RuntimeError
            raise DeviceLost(
                f"the adb server at {self.endpoint} is not reachable ({exc.__context__ or exc}); "
                "start it with `adb start-server` or check ANDROID_ADB_SERVER_PORT"
            ) from exc
        return self

    def _arm(self) -> None:
        self.socket.settimeout(_remaining(self.deadline))

    def _recv(self, length: int) -> bytes:
        self._arm()
        return self.socket.recv(length)

    def _send(self, data: bytes) -> None:
        self._arm()
        self.socket.sendall(data)

    def read_exact(self, length: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < length:
            chunk = self._recv(length - len(chunks))
            if not chunk:
                raise ConnectionResetError(f"connection closed after {len(chunks)} of {length} bytes")
            chunks += chunk
        return bytes(chunks)

    def _check_status(self) -> bool:
        status = self.read_exact(4)
        if status == b"OKAY":
            return True
        if status == b"FAIL":
            raise _AdbFail(self.read_text())
        raise ConnectionResetError(f"unexpected adb status {status!r}")

    def read_text(self) -> str:
        length = int(self.read_exact(4).decode("ascii"), 16)
        return self.read_exact(length).decode("utf-8", "replace")

    def receive(self) -> str:
        return self.read_text()


class _AdbFail(Exception):
    """The adb server answered FAIL with this message."""


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
        env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(self.endpoint.port)}
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

    def version(self) -> int:
        """The adb server's protocol version (41 for platform-tools 29+)."""
        return int(self._host_query("host:version"), 16)

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

    def _host_query(self, service: str) -> str:
        deadline = time.monotonic() + HOST_COMMAND_TIMEOUT_S
        self._count()
        with _HostConnection(self.endpoint, deadline).open() as conn:
            try:
                conn.send(service)
                return conn.read_text()
            except _AdbFail as exc:
                raise DeviceError(f"adb server refused {service}: {exc}", command=service, output=str(exc)) from exc
            except (OSError, ValueError) as exc:
                raise DeviceLost(
                    f"the adb server at {self.endpoint} stopped answering `{service}` ({exc})", command=service
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


# -------------------------------------------------------------------- pure helpers


def _remaining(deadline: float) -> float:
    # A socket timeout of 0 would make it non-blocking; a tiny positive one times out at once.
    return max(deadline - time.monotonic(), 0.001)


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


def _parse_port(text: str, name: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{name} must be a port number between 1 and 65535, not {text!r}")
    return int(text)


def _parse_socket_spec(spec: str) -> AdbEndpoint:
    """`tcp:HOST:PORT` or `tcp:PORT` -> endpoint; ValueError for anything else."""
    if not spec.startswith("tcp:"):
        raise ValueError(f"ADB_SERVER_SOCKET must look like tcp:HOST:PORT or tcp:PORT, not {spec!r}")
    rest = spec[len("tcp:"):]
    host, sep, port_text = rest.rpartition(":")
    if not sep:
        return AdbEndpoint(DEFAULT_HOST, _parse_port(rest, "ADB_SERVER_SOCKET"))
    host = host.strip("[]") or DEFAULT_HOST
    return AdbEndpoint(host, _parse_port(port_text, "ADB_SERVER_SOCKET"))


def _parse_devices_l(text: str) -> list[DeviceInfo]:
    """The body of `host:devices-l` -> DeviceInfo per line; ValueError on a line without a state."""
    devices = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split(None, 1)
        if len(parts) < 2:
            raise ValueError(f"adb devices line without a state: {line!r}")
        serial, rest = parts
        rest = rest.strip()
        state = next((s for s in KNOWN_STATES if rest == s or rest.startswith(s + " ")), None)
        if state is None:
            # A state this code does not know yet (newer adb): the first word, as adb prints it.
            state = rest.split()[0]
        fields: dict[str, str] = {}
        for word in rest[len(state):].split():
            key, colon, value = word.partition(":")
            if colon:
                fields[key] = value
        transport = fields.get("transport_id")
        devices.append(DeviceInfo(
            serial=serial, state=state, product=fields.get("product", ""), model=fields.get("model", ""),
            device=fields.get("device", ""), transport_id=int(transport) if transport and transport.isdigit() else None,
        ))
    return devices


def _parse_exit_marker(output: bytes, marker: bytes) -> tuple[bytes, int]:
    """Output holding `MARKER:STATUS` -> (output without the marker line, status); ValueError without it.

    Bytes after the status line are kept: a merged stderr can arrive after the marker when the
    device flushes its streams separately.
    """
    position = output.rfind(marker + b":")
    if position < 0:
        raise ValueError("no exit marker in the output")
    status_line, newline, late = output[position + len(marker) + 1:].partition(b"\n")
    status_text = status_line.strip()
    if not status_text.isdigit():
        raise ValueError(f"exit marker without a number: {status_text!r}")
    return output[:position] + late, int(status_text)


def _parse_connect_reply(message: str) -> bool:
    """Whether a `host:connect` reply means the device is attached."""
    message = message.strip()
    return message.startswith("connected to ") or message.startswith("already connected to ")


def _parse_sync_header(header: bytes) -> tuple[bytes, int]:
    """8 sync bytes -> (4-byte id, little-endian length); ValueError on a short header."""
    if len(header) != 8:
        raise ValueError(f"a sync header has 8 bytes, got {len(header)}")
    return header[:4], struct.unpack("<I", header[4:])[0]


def _parse_stat_reply(reply: bytes) -> RemoteStat | None:
    """A 16-byte sync STAT reply -> RemoteStat, or None for a missing file (all zeros)."""
    if len(reply) != 16 or reply[:4] != b"STAT":
        raise ValueError(f"not a sync STAT reply: {reply!r}")
    mode, size, mtime = struct.unpack("<III", reply[4:])
    if mode == 0 and size == 0 and mtime == 0:
        return None
    return RemoteStat(mode, size, mtime)
