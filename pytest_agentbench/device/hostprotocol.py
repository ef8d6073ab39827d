"""adb server addresses and host-protocol bytes -> typed values, and the socket that carries them (ppadb's Connection)."""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass

from ppadb.connection import Connection

from pytest_agentbench.errors import DeviceLost

DEFAULT_HOST = "localhost"
DEFAULT_PORT = 5037
# The states `adb devices` prints; "no permissions" is the only one with a space in it.
KNOWN_STATES = (
    "device", "offline", "unauthorized", "authorizing", "connecting", "bootloader",
    "recovery", "sideload", "rescue", "host", "unknown", "detached", "no permissions",
)


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


def _remaining(deadline: float) -> float:
    # A socket timeout of 0 would make it non-blocking; a tiny positive one times out at once.
    return max(deadline - time.monotonic(), 0.001)


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
