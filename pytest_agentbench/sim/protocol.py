"""adb wire bytes <-> messages, shell v2 frames and sync records (pure functions, no I/O)."""

from __future__ import annotations

import shlex
import stat as stat_module
import struct
from dataclasses import dataclass, field
from typing import NamedTuple

# Message commands: four ASCII letters read as a little-endian u32.
A_SYNC = 0x434E5953
A_CNXN = 0x4E584E43
A_AUTH = 0x48545541
A_OPEN = 0x4E45504F
A_OKAY = 0x59414B4F
A_CLSE = 0x45534C43
A_WRTE = 0x45545257
A_STLS = 0x534C5453

COMMAND_NAMES = {
    A_SYNC: "SYNC",
    A_CNXN: "CNXN",
    A_AUTH: "AUTH",
    A_OPEN: "OPEN",
    A_OKAY: "OKAY",
    A_CLSE: "CLSE",
    A_WRTE: "WRTE",
    A_STLS: "STLS",
}

# Version 0x01000001 is the one where the host stops filling data_check, so it is never verified.
A_VERSION = 0x01000001
MAX_PAYLOAD = 1024 * 1024
HEADER_SIZE = 24
_HEADER = struct.Struct("<6I")

DEVICE_FEATURES = ("shell_v2", "cmd", "stat_v2")

# Shell protocol v2 packet ids (adb's shell_protocol.h).
SHELL_STDIN = 0
SHELL_STDOUT = 1
SHELL_STDERR = 2
SHELL_EXIT = 3
SHELL_CLOSE_STDIN = 4
SHELL_WINDOW_SIZE = 5
_SHELL_HEADER = struct.Struct("<BI")

# The sync protocol caps one DATA record at 64 KiB, independent of the transport's payload size.
SYNC_DATA_MAX = 64 * 1024
_SYNC_REQUEST = struct.Struct("<4sI")
_STAT_V1 = struct.Struct("<4sIII")
_STAT_V2 = struct.Struct("<4sIQQIIIIQqqq")
_DENT_V1 = struct.Struct("<4sIIII")
ENOENT = 2
ENOTDIR = 20


class Header(NamedTuple):
    """The 24-byte message header, decoded but not yet checked against its payload."""

    command: int
    arg0: int
    arg1: int
    data_length: int
    data_check: int
    magic: int


@dataclass(frozen=True)
class Message:
    """One adb transport message: a command, two arguments and a payload."""

    command: int
    arg0: int
    arg1: int
    payload: bytes = b""

    @property
    def name(self) -> str:
        return command_name(self.command)


def command_name(command: int) -> str:
    """Return the four-letter name of a command, or its hex value when it is not one adb knows."""
    return COMMAND_NAMES.get(command, f"0x{command:08x}")


def checksum(payload: bytes) -> int:
    """Return adb's payload check: the byte sum, modulo 2**32."""
    return sum(payload) & 0xFFFFFFFF


def encode_message(command: int, arg0: int, arg1: int, payload: bytes = b"") -> bytes:
    """Encode one message as header plus payload.

    Args:
        command: One of the ``A_*`` constants.
        arg0: First argument (for streams: the sender's local id).
        arg1: Second argument (for streams: the receiver's id).
        payload: Message data; callers split it to the negotiated maximum first.

    Returns:
        The bytes to put on the wire.
    """
    header = _HEADER.pack(command, arg0, arg1, len(payload), checksum(payload), command ^ 0xFFFFFFFF)
    return header + payload


def decode_header(data: bytes, max_payload: int = MAX_PAYLOAD) -> Header:
    """Decode a 24-byte header and check its magic and length.

    Args:
        data: Exactly ``HEADER_SIZE`` bytes.
        max_payload: Largest payload this side accepts.

    Returns:
        The decoded header.

    Raises:
        ValueError: Wrong size, a magic that does not match the command, an unknown command or an
            oversized payload: the peer is not speaking adb.
    """
    if len(data) != HEADER_SIZE:
        raise ValueError(f"adb header must be {HEADER_SIZE} bytes, got {len(data)}")
    header = Header(*_HEADER.unpack(data))
    if header.magic != header.command ^ 0xFFFFFFFF:
        raise ValueError(f"bad magic 0x{header.magic:08x} for command 0x{header.command:08x}")
    if header.command not in COMMAND_NAMES:
        raise ValueError(f"unknown command 0x{header.command:08x}")
    if header.data_length > max_payload:
        raise ValueError(f"payload of {header.data_length} bytes exceeds the maximum {max_payload}")
    return header


def decode_message(data: bytes, max_payload: int = MAX_PAYLOAD) -> Message:
    """Decode one complete message (header plus exactly its payload); raises ValueError."""
    header = decode_header(data[:HEADER_SIZE], max_payload)
    payload = data[HEADER_SIZE:]
    if len(payload) != header.data_length:
        raise ValueError(f"header announces {header.data_length} payload bytes, got {len(payload)}")
    return Message(header.command, header.arg0, header.arg1, payload)


def split_payload(data: bytes, max_payload: int) -> list[bytes]:
    """Split data into chunks of at most max_payload bytes (no chunks for empty data)."""
    if max_payload <= 0:
        raise ValueError(f"max_payload must be positive, got {max_payload}")
    return [data[start : start + max_payload] for start in range(0, len(data), max_payload)]


def device_banner(props: dict[str, str], features: tuple[str, ...] = DEVICE_FEATURES) -> bytes:
    """Build the CNXN banner a device sends: ``device::key=value;...;features=a,b``.

    Args:
        props: Banner properties such as ``ro.product.model``; ``;`` and ``=`` are dropped from
            values because they would break the host's parser.
        features: Feature names the host may use.

    Returns:
        The banner bytes, without a trailing NUL (the host accepts both).
    """
    parts = [f"{key}={_banner_safe(value)}" for key, value in props.items()]
    parts.append("features=" + ",".join(features))
    return ("device::" + ";".join(parts)).encode()


def _banner_safe(value: str) -> str:
    return str(value).replace(";", "").replace("=", "")


def parse_banner(payload: bytes) -> tuple[str, dict[str, str]]:
    """Split a CNXN banner into its system type and properties (``features`` included)."""
    text = payload.rstrip(b"\0").decode("utf-8", "replace")
    system_type, _, rest = text.partition(":")
    _serial, _, props_text = rest.partition(":")
    props: dict[str, str] = {}
    for item in props_text.split(";"):
        key, sep, value = item.partition("=")
        if sep:
            props[key] = value
    return system_type, props


@dataclass(frozen=True)
class Service:
    """A service request from OPEN: its kind, its comma options and the command after the colon."""

    kind: str
    options: tuple[str, ...] = ()
    command: str = ""

    @property
    def shell_v2(self) -> bool:
        return self.kind == "shell" and "v2" in self.options

    @property
    def pty(self) -> bool:
        # adb asks for a pty when stdin is a terminal; "raw" asks for none.
        return "pty" in self.options or (not self.command and "raw" not in self.options)


def parse_service(payload: bytes) -> Service:
    """Parse an OPEN payload such as ``shell,v2,TERM=xterm,raw:getprop\\0``.

    The part before the first colon is ``kind[,option...]``; the rest is the command verbatim.
    A request without a colon (``sync``) is just a kind.
    """
    text = payload.split(b"\0", 1)[0].decode("utf-8", "replace")
    head, _sep, command = text.partition(":")
    kind, *options = head.split(",")
    return Service(kind=kind, options=tuple(options), command=command)


def encode_shell_packet(packet_id: int, data: bytes = b"") -> bytes:
    """Frame data as one shell v2 packet: id u8, length u32 LE, data."""
    return _SHELL_HEADER.pack(packet_id, len(data)) + data


def encode_shell_exit(exit_code: int) -> bytes:
    """Frame an exit status the way adbd does: one byte, so codes wrap modulo 256."""
    return encode_shell_packet(SHELL_EXIT, bytes([exit_code & 0xFF]))


@dataclass
class ShellPacketReader:
    """Reassembles shell v2 packets from WRTE payloads that may split or join them."""

    _buffer: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """Add received bytes; return every packet now complete as (id, data)."""
        self._buffer += data
        packets = []
        while len(self._buffer) >= _SHELL_HEADER.size:
            packet_id, length = _SHELL_HEADER.unpack_from(self._buffer)
            end = _SHELL_HEADER.size + length
            if len(self._buffer) < end:
                break
            packets.append((packet_id, bytes(self._buffer[_SHELL_HEADER.size : end])))
            del self._buffer[:end]
        return packets

    @property
    def pending(self) -> int:
        return len(self._buffer)


def decode_shell_packets(data: bytes) -> list[tuple[int, bytes]]:
    """Decode a byte string of whole shell v2 packets; raises ValueError on a truncated one."""
    reader = ShellPacketReader()
    packets = reader.feed(data)
    if reader.pending:
        raise ValueError(f"{reader.pending} trailing bytes do not form a whole shell v2 packet")
    return packets


# --- sync: protocol records ---------------------------------------------------------------


def encode_sync_request(request_id: str, value: int | bytes) -> bytes:
    """Encode a sync record: 4-char id, then a u32 (an int) or a u32 length and the bytes."""
    if isinstance(value, int):
        return _SYNC_REQUEST.pack(request_id.encode(), value)
    return _SYNC_REQUEST.pack(request_id.encode(), len(value)) + value


def decode_sync_request(header: bytes) -> tuple[str, int]:
    """Decode an 8-byte sync record header into (id, u32 argument); raises ValueError."""
    if len(header) != _SYNC_REQUEST.size:
        raise ValueError(f"sync record header must be 8 bytes, got {len(header)}")
    raw_id, argument = _SYNC_REQUEST.unpack(header)
    try:
        request_id = raw_id.decode("ascii")
    except UnicodeDecodeError as exc:
        raise ValueError(f"sync record id {raw_id!r} is not ASCII") from exc
    return request_id, argument


def sync_data_records(data: bytes) -> bytes:
    """Encode file contents as DATA records of at most 64 KiB each, followed by DONE."""
    records = [encode_sync_request("DATA", data[start : start + SYNC_DATA_MAX]) for start in range(0, len(data), SYNC_DATA_MAX)]
    records.append(encode_sync_request("DONE", 0))
    return b"".join(records)


def sync_fail(message: str) -> bytes:
    """Encode a FAIL record carrying a message the adb client prints."""
    return encode_sync_request("FAIL", message.encode("utf-8", "replace"))


def sync_okay() -> bytes:
    """Encode the OKAY record that ends a successful SEND."""
    return encode_sync_request("OKAY", 0)


def file_type_mode(mode: int, is_dir: bool = False) -> int:
    """Return mode with file-type bits: kept when present, else S_IFDIR or S_IFREG added."""
    if stat_module.S_IFMT(mode):
        return mode
    return mode | (stat_module.S_IFDIR if is_dir else stat_module.S_IFREG)


def encode_stat_v1(mode: int, size: int, mtime: int) -> bytes:
    """Encode a STAT reply; a missing file is all zeros (v1 has no error field)."""
    return _STAT_V1.pack(b"STAT", mode & 0xFFFFFFFF, size & 0xFFFFFFFF, mtime & 0xFFFFFFFF)


def encode_stat_v2(request_id: str, *, error: int = 0, mode: int = 0, size: int = 0, mtime: int = 0) -> bytes:
    """Encode a 72-byte STA2/LST2 reply; ``error`` is an errno (ENOENT for a missing path).

    Args:
        request_id: ``STA2`` or ``LST2``, echoed as the reply id.
        error: 0 on success, else an errno value.
        mode: st_mode with file-type bits.
        size: File size in bytes.
        mtime: Modification time, seconds since the epoch (also used for atime and ctime).

    Returns:
        The reply record.
    """
    nlink = 1 if not error else 0
    return _STAT_V2.pack(request_id.encode(), error, 0, 0, mode, nlink, 0, 0, size, mtime, mtime, mtime)


def decode_stat_v2(record: bytes) -> dict[str, int | str]:
    """Decode a STA2/LST2 reply into its fields (used by tests and diagnostics)."""
    fields = _STAT_V2.unpack(record)
    names = ("id", "error", "dev", "ino", "mode", "nlink", "uid", "gid", "size", "atime", "mtime", "ctime")
    decoded: dict[str, int | str] = dict(zip(names, fields))
    decoded["id"] = fields[0].decode()
    return decoded


def encode_dent(mode: int, size: int, mtime: int, name: str) -> bytes:
    """Encode one LIST entry (DENT)."""
    raw_name = name.encode("utf-8", "surrogateescape")
    return _DENT_V1.pack(b"DENT", mode & 0xFFFFFFFF, size & 0xFFFFFFFF, mtime & 0xFFFFFFFF, len(raw_name)) + raw_name


def encode_dent_done() -> bytes:
    """Encode the DONE record that ends a LIST (a DENT-sized record of zeros)."""
    return _DENT_V1.pack(b"DONE", 0, 0, 0, 0)


def parse_send_target(argument: bytes) -> tuple[str, int]:
    """Split a SEND argument ``path,mode`` (mode in decimal) into (path, permission bits).

    Raises:
        ValueError: No comma or a mode that is not a number.
    """
    text = argument.decode("utf-8", "surrogateescape")
    path, sep, mode_text = text.rpartition(",")
    if not sep or not path:
        raise ValueError(f"SEND target {text!r} is not 'path,mode'")
    try:
        mode = int(mode_text)
    except ValueError as exc:
        raise ValueError(f"SEND mode {mode_text!r} in {text!r} is not a decimal number") from exc
    return path, mode


def parse_streamed_install(command: str) -> tuple[list[str], int] | None:
    """Recognise a streamed install (``cmd package 'install' '-r' -S 1234``, also via ``pm``).

    Returns:
        The command's words without ``-S N`` and the announced APK size, or None for any other
        command (including one that does not parse as shell words).
    """
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if words[:3] != ["cmd", "package", "install"] and words[:2] != ["pm", "install"]:
        return None
    if "-S" not in words:
        return None
    flag = words.index("-S")
    if flag + 1 >= len(words) or not words[flag + 1].isdigit():
        return None
    return words[:flag] + words[flag + 2 :], int(words[flag + 1])
