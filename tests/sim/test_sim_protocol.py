"""Tests for sim/protocol.py: adb message, shell v2 and sync record encoding against known wire bytes."""

from __future__ import annotations

import stat
import struct

import pytest

from pytest_agentbench.sim import protocol


def test_encode_message_matches_adb_wire_layout() -> None:
    wire = protocol.encode_message(protocol.A_OKAY, 7, 9, b"ab")
    assert wire[:4] == b"OKAY"
    assert struct.unpack("<6I", wire[:24]) == (protocol.A_OKAY, 7, 9, 2, ord("a") + ord("b"), protocol.A_OKAY ^ 0xFFFFFFFF)
    assert wire[24:] == b"ab"


@pytest.mark.parametrize(
    ("command", "letters"),
    [
        (protocol.A_CNXN, b"CNXN"),
        (protocol.A_OPEN, b"OPEN"),
        (protocol.A_OKAY, b"OKAY"),
        (protocol.A_WRTE, b"WRTE"),
        (protocol.A_CLSE, b"CLSE"),
        (protocol.A_AUTH, b"AUTH"),
    ],
)
def test_command_constants_are_their_letters(command: int, letters: bytes) -> None:
    assert struct.pack("<I", command) == letters
    assert protocol.command_name(command) == letters.decode()


@pytest.mark.parametrize(
    "payload",
    [b"", b"x", bytes(range(256)) * 4, b"host::features=shell_v2\0"],
)
def test_message_round_trip(payload: bytes) -> None:
    wire = protocol.encode_message(protocol.A_WRTE, 1, 2, payload)
    assert protocol.decode_message(wire) == protocol.Message(protocol.A_WRTE, 1, 2, payload)


def test_decode_header_does_not_verify_data_check() -> None:
    # adb 1.0.41 with version 0x01000001 sends data_check = 0 for non-empty payloads.
    header = struct.pack("<6I", protocol.A_WRTE, 1, 2, 5, 0, protocol.A_WRTE ^ 0xFFFFFFFF)
    assert protocol.decode_header(header).data_length == 5


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        (b"GET / HTTP/1.1\r\nHost: x\r\n", "bad magic"),
        (struct.pack("<6I", protocol.A_OPEN, 1, 0, 4, 0, 0), "bad magic"),
        (struct.pack("<6I", 0x41414141, 0, 0, 0, 0, 0x41414141 ^ 0xFFFFFFFF), "unknown command"),
        (struct.pack("<6I", protocol.A_WRTE, 1, 2, protocol.MAX_PAYLOAD + 1, 0, protocol.A_WRTE ^ 0xFFFFFFFF), "exceeds"),
        (b"short", "24 bytes"),
    ],
)
def test_decode_header_rejects_what_is_not_adb(header: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        protocol.decode_header(header[:24] if len(header) > 24 else header)


def test_decode_message_rejects_a_payload_shorter_than_announced() -> None:
    wire = protocol.encode_message(protocol.A_WRTE, 1, 2, b"abcdef")
    with pytest.raises(ValueError, match="announces 6"):
        protocol.decode_message(wire[:-1])


@pytest.mark.parametrize(
    ("size", "limit", "chunk_sizes"),
    [(0, 4, []), (3, 4, [3]), (4, 4, [4]), (9, 4, [4, 4, 1]), (3_000_000, 1 << 20, [1 << 20, 1 << 20, 3_000_000 - (2 << 20)])],
)
def test_split_payload(size: int, limit: int, chunk_sizes: list[int]) -> None:
    data = bytes(i % 251 for i in range(size))
    chunks = protocol.split_payload(data, limit)
    assert [len(chunk) for chunk in chunks] == chunk_sizes
    assert b"".join(chunks) == data


def test_device_banner_carries_props_and_features() -> None:
    banner = protocol.device_banner({"ro.product.name": "sim", "ro.product.model": "Pixel;9=x", "ro.product.device": "emu"})
    assert banner == b"device::ro.product.name=sim;ro.product.model=Pixel9x;ro.product.device=emu;features=shell_v2,cmd,stat_v2"
    system_type, props = protocol.parse_banner(banner + b"\0")
    assert system_type == "device"
    assert props["features"] == "shell_v2,cmd,stat_v2"
    assert props["ro.product.model"] == "Pixel9x"


@pytest.mark.parametrize(
    ("payload", "kind", "options", "command", "shell_v2", "pty"),
    [
        (b"shell:getprop ro.build.version.sdk\0", "shell", (), "getprop ro.build.version.sdk", False, False),
        (b"shell,v2,TERM=xterm,raw:false\0", "shell", ("v2", "TERM=xterm", "raw"), "false", True, False),
        (b"shell,v2,TERM=xterm-256color,pty:\0", "shell", ("v2", "TERM=xterm-256color", "pty"), "", True, True),
        (b"shell,raw:echo a:b\0", "shell", ("raw",), "echo a:b", False, False),
        (b"shell:\0", "shell", (), "", False, True),
        (b"exec:cat '/sdcard/window_dump.xml'\0", "exec", (), "cat '/sdcard/window_dump.xml'", False, False),
        (b"sync:\0", "sync", (), "", False, False),
        (b"reverse:forward:tcp:1;tcp:2\0", "reverse", (), "forward:tcp:1;tcp:2", False, False),
        (b"framebuffer:", "framebuffer", (), "", False, False),
    ],
)
def test_parse_service(payload: bytes, kind: str, options: tuple[str, ...], command: str, shell_v2: bool, pty: bool) -> None:
    service = protocol.parse_service(payload)
    assert (service.kind, service.options, service.command) == (kind, options, command)
    assert service.shell_v2 is shell_v2
    if kind == "shell":
        assert service.pty is pty


@pytest.mark.parametrize(
    ("packet_id", "data", "wire"),
    [
        (protocol.SHELL_STDOUT, b"34\n", b"\x01\x03\x00\x00\x0034\n"),
        (protocol.SHELL_STDERR, b"", b"\x02\x00\x00\x00\x00"),
        (protocol.SHELL_CLOSE_STDIN, b"", b"\x04\x00\x00\x00\x00"),
    ],
)
def test_shell_packet_encoding(packet_id: int, data: bytes, wire: bytes) -> None:
    assert protocol.encode_shell_packet(packet_id, data) == wire
    assert protocol.decode_shell_packets(wire) == [(packet_id, data)]


@pytest.mark.parametrize(("exit_code", "byte"), [(0, 0), (1, 1), (127, 127), (255, 255), (256, 0), (-1, 255)])
def test_shell_exit_is_one_byte(exit_code: int, byte: int) -> None:
    assert protocol.encode_shell_exit(exit_code) == bytes([protocol.SHELL_EXIT, 1, 0, 0, 0, byte])


def test_shell_packet_reader_reassembles_split_and_joined_packets() -> None:
    wire = protocol.encode_shell_packet(0, b"ls\n") + protocol.encode_shell_packet(4) + protocol.encode_shell_packet(1, b"x" * 70)
    reader = protocol.ShellPacketReader()
    packets = []
    for start in range(0, len(wire), 3):
        packets += reader.feed(wire[start : start + 3])
    assert packets == [(0, b"ls\n"), (4, b""), (1, b"x" * 70)]
    assert reader.pending == 0


def test_decode_shell_packets_rejects_a_truncated_packet() -> None:
    with pytest.raises(ValueError, match="trailing"):
        protocol.decode_shell_packets(protocol.encode_shell_packet(1, b"abc")[:-1])


@pytest.mark.parametrize(
    ("request_id", "value", "wire"),
    [
        ("STA2", b"/sdcard", b"STA2\x07\x00\x00\x00/sdcard"),
        ("DONE", 1700000000, b"DONE" + struct.pack("<I", 1700000000)),
        ("QUIT", 0, b"QUIT\x00\x00\x00\x00"),
    ],
)
def test_sync_request_encoding(request_id: str, value: int | bytes, wire: bytes) -> None:
    assert protocol.encode_sync_request(request_id, value) == wire
    assert protocol.decode_sync_request(wire[:8]) == (request_id, len(value) if isinstance(value, bytes) else value)


def test_decode_sync_request_rejects_binary_ids() -> None:
    with pytest.raises(ValueError, match="not ASCII"):
        protocol.decode_sync_request(b"\xff\xfe\x00\x01\x00\x00\x00\x00")


@pytest.mark.parametrize("size", [0, 1, protocol.SYNC_DATA_MAX, protocol.SYNC_DATA_MAX + 1, 3 * protocol.SYNC_DATA_MAX + 17])
def test_sync_data_records_are_capped_at_64_kib(size: int) -> None:
    data = bytes(i % 253 for i in range(size))
    wire = protocol.sync_data_records(data)
    received = bytearray()
    offset = 0
    while True:
        record_id, length = protocol.decode_sync_request(wire[offset : offset + 8])
        offset += 8
        if record_id == "DONE":
            break
        assert record_id == "DATA"
        assert 0 < length <= protocol.SYNC_DATA_MAX
        received += wire[offset : offset + length]
        offset += length
    assert offset == len(wire)
    assert bytes(received) == data


def test_stat_v2_reply_is_72_bytes_with_error_field() -> None:
    missing = protocol.encode_stat_v2("STA2", error=protocol.ENOENT)
    assert len(missing) == 72
    assert protocol.decode_stat_v2(missing)["error"] == protocol.ENOENT
    found = protocol.decode_stat_v2(protocol.encode_stat_v2("LST2", mode=stat.S_IFREG | 0o644, size=3_000_000, mtime=1700000000))
    assert (found["id"], found["error"], found["mode"], found["size"], found["mtime"]) == ("LST2", 0, stat.S_IFREG | 0o644, 3_000_000, 1700000000)


def test_stat_v1_reply_for_a_missing_file_is_zeros() -> None:
    assert protocol.encode_stat_v1(0, 0, 0) == b"STAT" + bytes(12)


def test_dent_records() -> None:
    assert protocol.encode_dent(stat.S_IFDIR | 0o755, 4096, 5, "tmp") == b"DENT" + struct.pack("<4I", stat.S_IFDIR | 0o755, 4096, 5, 3) + b"tmp"
    assert protocol.encode_dent_done() == b"DONE" + bytes(16)


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        (b"/sdcard/big.bin,33188", ("/sdcard/big.bin", 0o100644)),
        (b"/data/local/tmp/a,b.txt,420", ("/data/local/tmp/a,b.txt", 0o644)),
    ],
)
def test_parse_send_target(argument: bytes, expected: tuple[str, int]) -> None:
    assert protocol.parse_send_target(argument) == expected


@pytest.mark.parametrize(("argument", "problem"), [(b"/sdcard/no-mode", "path,mode"), (b"/sdcard/x,rw", "decimal"), (b",420", "path,mode")])
def test_parse_send_target_rejects_malformed(argument: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        protocol.parse_send_target(argument)


@pytest.mark.parametrize(
    ("mode", "is_dir", "expected"),
    [(0o644, False, stat.S_IFREG | 0o644), (0o755, True, stat.S_IFDIR | 0o755), (stat.S_IFDIR | 0o700, False, stat.S_IFDIR | 0o700)],
)
def test_file_type_mode(mode: int, is_dir: bool, expected: int) -> None:
    assert protocol.file_type_mode(mode, is_dir) == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cmd package 'install' '-r' -S 12345", (["cmd", "package", "install", "-r"], 12345)),
        ("pm 'install' -S 7 '-t'", (["pm", "install", "-t"], 7)),
        ("cmd package install /data/local/tmp/app.apk", None),
        ("cmd package install-create -S 100", None),
        ("cat '/sdcard/window_dump.xml'", None),
        ("cmd package install -S many", None),
        ("echo 'unterminated", None),
    ],
)
def test_parse_streamed_install(command: str, expected: tuple[list[str], int] | None) -> None:
    assert protocol.parse_streamed_install(command) == expected
