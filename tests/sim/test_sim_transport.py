"""Tests for sim/transport.py: PhoneServer spoken to byte by byte, and driven by the real adb server."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from simfixtures import FakePhone, PrivateAdb

from pytest_agentbench.sim import protocol
from pytest_agentbench.sim.phone import Phone
from pytest_agentbench.sim.transport import PhoneServer


def wait_until(condition: Callable[[], bool], timeout_s: float = 10, what: str = "condition") -> None:
    """Poll until condition() holds; fail with what was awaited (a deadline, not a timing claim)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class RawHost:
    """Plays the adb server's side of one connection, so tests can check every message the sim sends."""

    def __init__(self, port: int, max_payload: int = 4096) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.max_payload = max_payload
        self.next_id = 100

    def close(self) -> None:
        self.sock.close()

    def send(self, command: int, arg0: int, arg1: int, payload: bytes = b"") -> None:
        self.sock.sendall(protocol.encode_message(command, arg0, arg1, payload))

    def _recv_exactly(self, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                raise EOFError(f"connection closed after {len(data)} of {count} bytes")
            data += chunk
        return data

    def recv(self) -> protocol.Message:
        header = protocol.decode_header(self._recv_exactly(protocol.HEADER_SIZE))
        return protocol.Message(header.command, header.arg0, header.arg1, self._recv_exactly(header.data_length))

    def nothing_pending(self, wait_s: float = 0.2) -> bool:
        self.sock.settimeout(wait_s)
        try:
            self.sock.recv(1, socket.MSG_PEEK)
            return False
        except TimeoutError:
            return True
        finally:
            self.sock.settimeout(10)

    def handshake(self) -> protocol.Message:
        self.send(protocol.A_CNXN, protocol.A_VERSION, self.max_payload, b"host::features=shell_v2,cmd,stat_v2\0")
        return self.recv()

    def open(self, service: bytes) -> tuple[int, protocol.Message]:
        """Send OPEN and return (our id, the reply: OKAY with the sim's id, or CLSE)."""
        self.next_id += 1
        self.send(protocol.A_OPEN, self.next_id, 0, service + b"\0")
        return self.next_id, self.recv()

    def read_stream(self, local_id: int, remote_id: int) -> bytes:
        """Acknowledge each WRTE and collect the stream's bytes until the sim's CLSE."""
        data = b""
        while True:
            message = self.recv()
            if message.command == protocol.A_CLSE:
                assert (message.arg0, message.arg1) == (remote_id, local_id)
                return data
            assert message.command == protocol.A_WRTE, message.name
            assert len(message.payload) <= self.max_payload
            data += message.payload
            self.send(protocol.A_OKAY, local_id, remote_id)

    def write(self, local_id: int, remote_id: int, data: bytes) -> None:
        """WRTE data and insist on the sim's OKAY for it."""
        self.send(protocol.A_WRTE, local_id, remote_id, data)
        ack = self.recv()
        assert (ack.command, ack.arg0, ack.arg1) == (protocol.A_OKAY, remote_id, local_id)

    def run(self, service: bytes) -> bytes:
        local_id, reply = self.open(service)
        assert reply.command == protocol.A_OKAY, f"{service!r} was refused"
        return self.read_stream(local_id, reply.arg0)


@pytest.fixture
def phone() -> FakePhone:
    return FakePhone()


@pytest.fixture
def server(phone: FakePhone) -> Iterator[PhoneServer]:
    with PhoneServer(phone) as running:
        yield running


@pytest.fixture
def host(server: PhoneServer) -> Iterator[RawHost]:
    raw = RawHost(server.port)
    yield raw
    raw.close()


# --- byte-level behaviour ---------------------------------------------------------------


@pytest.mark.parametrize(("host_payload", "negotiated"), [(4096, 4096), (256 * 1024, 256 * 1024), (4 << 20, 1 << 20)])
def test_cnxn_answers_with_banner_and_negotiated_payload(server: PhoneServer, host_payload: int, negotiated: int) -> None:
    raw = RawHost(server.port, max_payload=host_payload)
    try:
        reply = raw.handshake()
    finally:
        raw.close()
    assert (reply.command, reply.arg0, reply.arg1) == (protocol.A_CNXN, protocol.A_VERSION, negotiated)
    system_type, props = protocol.parse_banner(reply.payload)
    assert system_type == "device"
    assert props["ro.product.model"] == "Sim Phone"
    assert props["features"] == "shell_v2,cmd,stat_v2"


def test_one_unacknowledged_write_per_stream(host: RawHost, phone: FakePhone) -> None:
    host.handshake()
    local_id, reply = host.open(b"exec:bytes 64")
    first = host.recv()
    assert first.command == protocol.A_WRTE and len(first.payload) == 4096
    assert host.nothing_pending(), "a second WRTE came before the first was acknowledged"
    host.send(protocol.A_OKAY, local_id, reply.arg0)
    rest = host.read_stream(local_id, reply.arg0)
    assert first.payload + rest == bytes(range(256)) * 64
    assert phone.counters["exec"] == 1
    assert phone.command_log == ["bytes 64"]


@pytest.mark.parametrize(
    ("service", "expected"),
    [
        (b"shell:both", b"to stdout\nto stderr\n"),
        (b"exec:both", b"to stdout\n"),
        (b"shell:getprop ro.build.version.sdk", b"34\n"),
    ],
)
def test_v1_shell_merges_streams_and_exec_drops_stderr(host: RawHost, service: bytes, expected: bytes) -> None:
    host.handshake()
    assert host.run(service) == expected


@pytest.mark.parametrize(
    ("command", "packets"),
    [
        (b"false", [(protocol.SHELL_EXIT, b"\x01")]),
        (b"nosuchcmd", [(protocol.SHELL_STDERR, b"/system/bin/sh: nosuchcmd: inaccessible or not found\n"), (protocol.SHELL_EXIT, b"\x7f")]),
        (b"both", [(protocol.SHELL_STDOUT, b"to stdout\n"), (protocol.SHELL_STDERR, b"to stderr\n"), (protocol.SHELL_EXIT, b"\x03")]),
    ],
)
def test_shell_v2_frames_stdout_stderr_and_exit(host: RawHost, command: bytes, packets: list[tuple[int, bytes]]) -> None:
    host.handshake()
    assert protocol.decode_shell_packets(host.run(b"shell,v2,TERM=xterm,raw:" + command)) == packets


def test_exception_in_a_command_ends_that_stream_and_the_server_lives(host: RawHost) -> None:
    host.handshake()
    packets = protocol.decode_shell_packets(host.run(b"shell,v2,raw:crash"))
    assert packets[-1] == (protocol.SHELL_EXIT, b"\xff")
    assert b"tripped over this command" in packets[0][1]
    assert host.run(b"shell:echo still here") == b"still here\n"


@pytest.mark.parametrize("service", [b"reverse:forward:tcp:1;tcp:2", b"framebuffer:", b"jdwp:1234", b"nonsense"])
def test_unknown_services_are_refused_and_the_connection_goes_on(host: RawHost, service: bytes) -> None:
    host.handshake()
    local_id, reply = host.open(service)
    assert (reply.command, reply.arg0, reply.arg1) == (protocol.A_CLSE, 0, local_id)
    assert host.run(b"exec:echo next") == b"next\n"


@pytest.mark.parametrize(
    ("service", "typed", "expected_stdout"),
    [
        # Piped stdin (adb shell < script): no prompt, no echo, like sh reading a pipe.
        (b"shell,v2,raw:", b"echo hi\nfalse\n", b"hi\n"),
        # A terminal: the device prompts and echoes, and answers with CR LF line ends.
        (b"shell,v2,TERM=xterm-256color,pty:", b"echo hi\rfalse\r", b"sim:/ $ echo hi\r\nhi\r\nsim:/ $ false\r\nsim:/ $ "),
    ],
)
def test_interactive_shell_runs_stdin_lines(host: RawHost, phone: FakePhone, service: bytes, typed: bytes, expected_stdout: bytes) -> None:
    host.handshake()
    local_id, reply = host.open(service)
    before = b""
    if b"pty" in service:
        prompt = host.recv()
        host.send(protocol.A_OKAY, local_id, reply.arg0)
        before = prompt.payload
    # One WRTE: the sim acknowledges it before the shell can answer, so the OKAY is the next message.
    stdin = protocol.encode_shell_packet(protocol.SHELL_STDIN, typed) + protocol.encode_shell_packet(protocol.SHELL_CLOSE_STDIN)
    host.write(local_id, reply.arg0, stdin)
    packets = protocol.decode_shell_packets(before + host.read_stream(local_id, reply.arg0))
    stdout = b"".join(data for packet_id, data in packets if packet_id == protocol.SHELL_STDOUT)
    assert stdout == expected_stdout
    assert packets[-1] == (protocol.SHELL_EXIT, b"\x01")
    assert phone.command_log == ["echo hi", "false"]


def test_v1_interactive_shell_without_framing(host: RawHost) -> None:
    host.handshake()
    local_id, reply = host.open(b"shell:")
    assert host.recv().payload == b"sim:/ $ "
    host.send(protocol.A_OKAY, local_id, reply.arg0)
    host.write(local_id, reply.arg0, b"echo v1\nexit\n")
    assert host.read_stream(local_id, reply.arg0) == b"echo v1\r\nv1\r\nsim:/ $ exit\r\n"


def sync_exchange(host: RawHost, requests: bytes, reply_size: int) -> bytes:
    """Open sync:, send requests, read exactly reply_size bytes of replies, QUIT."""
    local_id, reply = host.open(b"sync:")
    assert reply.command == protocol.A_OKAY
    host.write(local_id, reply.arg0, requests)
    data = b""
    while len(data) < reply_size:
        message = host.recv()
        assert message.command == protocol.A_WRTE
        data += message.payload
        host.send(protocol.A_OKAY, local_id, reply.arg0)
    host.write(local_id, reply.arg0, protocol.encode_sync_request("QUIT", 0))
    assert host.read_stream(local_id, reply.arg0) == b""
    return data


def test_sync_stat_of_a_missing_file(host: RawHost) -> None:
    host.handshake()
    requests = protocol.encode_sync_request("STAT", b"/sdcard/missing") + protocol.encode_sync_request("STA2", b"/sdcard/missing")
    replies = sync_exchange(host, requests, 16 + 72)
    assert replies[:16] == protocol.encode_stat_v1(0, 0, 0)
    assert protocol.decode_stat_v2(replies[16:])["error"] == protocol.ENOENT


def test_sync_stat_and_list_of_existing_paths(host: RawHost, phone: FakePhone) -> None:
    phone.fs.write("/sdcard/a.txt", b"hello", 0o600, 1_700_000_000)
    host.handshake()
    requests = protocol.encode_sync_request("LST2", b"/sdcard/a.txt") + protocol.encode_sync_request("LIST", b"/sdcard")
    dent = protocol.encode_dent(stat.S_IFREG | 0o600, 5, 1_700_000_000, "a.txt")
    replies = sync_exchange(host, requests, 72 + len(dent) + 20)
    found = protocol.decode_stat_v2(replies[:72])
    assert (found["error"], found["mode"], found["size"], found["mtime"]) == (0, stat.S_IFREG | 0o600, 5, 1_700_000_000)
    assert replies[72:] == dent + protocol.encode_dent_done()


def test_sync_send_then_recv_round_trip_split_to_small_payloads(host: RawHost, phone: FakePhone) -> None:
    content = os.urandom(150_000)
    host.handshake()
    send = protocol.encode_sync_request("SEND", b"/data/local/tmp/blob,33261")
    send += protocol.sync_data_records(content)[:-8] + protocol.encode_sync_request("DONE", 1_650_000_000)
    recv = protocol.encode_sync_request("RECV", b"/data/local/tmp/blob")
    expected_recv = protocol.sync_data_records(content)
    replies = sync_exchange(host, send + recv, 8 + len(expected_recv))
    assert replies[:8] == protocol.sync_okay()
    assert replies[8:] == expected_recv
    assert phone.fs.files["/data/local/tmp/blob"] == (content, 0o755, 1_650_000_000)


@pytest.mark.parametrize(
    ("request_bytes", "message"),
    [
        (protocol.encode_sync_request("RECV", b"/sdcard/missing"), b"No such file or directory"),
        (protocol.encode_sync_request("RECV", b"/sdcard"), b"Is a directory"),
        (protocol.encode_sync_request("SEND", b"/sdcard,33188") + protocol.encode_sync_request("DONE", 0), b"Is a directory"),
        (protocol.encode_sync_request("SEND", b"/sdcard/no-mode") , b"path,mode"),
        (protocol.encode_sync_request("ZZZZ", 0), b"unknown sync request"),
    ],
)
def test_sync_errors_answer_fail_with_a_message(host: RawHost, request_bytes: bytes, message: bytes) -> None:
    host.handshake()
    local_id, reply = host.open(b"sync:")
    host.write(local_id, reply.arg0, request_bytes)
    answer = host.read_stream(local_id, reply.arg0)
    record_id, length = protocol.decode_sync_request(answer[:8])
    assert record_id == "FAIL"
    assert message in answer[8 : 8 + length]


def throw_garbage(port: int, garbage: bytes) -> None:
    """Send bytes that are not adb and insist that the sim hangs up on them."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as intruder:
        try:
            intruder.sendall(garbage)
            hung_up = intruder.recv(1) == b""
        except ConnectionResetError:
            # The sim closed while unread garbage was still queued: the kernel answers with a reset.
            hung_up = True
        except BrokenPipeError:
            hung_up = True
    assert hung_up


@pytest.mark.parametrize(
    "garbage",
    [b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", bytes(range(24)), os.urandom(4096)],
)
def test_garbage_drops_only_that_connection(server: PhoneServer, host: RawHost, garbage: bytes) -> None:
    host.handshake()
    throw_garbage(server.port, garbage)
    assert host.run(b"shell:echo unharmed") == b"unharmed\n"


def test_client_vanishing_mid_stream_frees_the_stream(server: PhoneServer, phone: FakePhone) -> None:
    dying = RawHost(server.port)
    dying.handshake()
    dying.open(b"exec:bytes 1000")
    assert dying.recv().command == protocol.A_WRTE
    assert server.open_streams == 1
    dying.close()
    wait_until(lambda: server.open_streams == 0, what="the abandoned stream to be freed")
    survivor = RawHost(server.port)
    try:
        survivor.handshake()
        assert survivor.run(b"exec:echo ok") == b"ok\n"
    finally:
        survivor.close()


def test_host_closing_a_stream_stops_its_writer(host: RawHost, server: PhoneServer) -> None:
    host.handshake()
    local_id, reply = host.open(b"exec:bytes 1000")
    assert host.recv().command == protocol.A_WRTE
    host.send(protocol.A_CLSE, local_id, reply.arg0)
    wait_until(lambda: server.open_streams == 0, what="the closed stream to be freed")
    assert host.run(b"exec:echo next") == b"next\n"


@pytest.mark.parametrize("phone_logs_commands", [True, False])
def test_each_command_is_logged_once(phone_logs_commands: bool) -> None:
    phone = FakePhone(logs_commands=phone_logs_commands)
    with PhoneServer(phone) as server:
        raw = RawHost(server.port)
        try:
            raw.handshake()
            raw.run(b"shell,v2,raw:echo one")
            raw.run(b"exec:echo two")
            raw.run(b"shell:crash")
        finally:
            raw.close()
    assert phone.command_log == ["echo one", "echo two", "crash"]
    assert (phone.counters["shell"], phone.counters["exec"]) == (2, 1)


def test_latency_delays_each_service_and_each_sync_reply(phone: FakePhone, monkeypatch: pytest.MonkeyPatch) -> None:
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float, *args: object) -> object:
        delays.append(delay)
        return await real_sleep(delay, *args)

    monkeypatch.setattr(asyncio, "sleep", recording_sleep)
    with PhoneServer(phone, latency_ms=5) as server:
        raw = RawHost(server.port)
        try:
            raw.handshake()
            assert raw.run(b"shell:echo slow") == b"slow\n"
            requests = protocol.encode_sync_request("STAT", b"/sdcard") + protocol.encode_sync_request("STA2", b"/sdcard")
            sync_exchange(raw, requests, 16 + 72)
        finally:
            raw.close()
    assert delays == [0.005, 0.005, 0.005]


def test_stop_is_idempotent_and_closes_connections(phone: FakePhone) -> None:
    server = PhoneServer(phone).start()
    assert server.start() is server
    raw = RawHost(server.port)
    raw.handshake()
    server.stop()
    server.stop()
    with pytest.raises((EOFError, ConnectionError)):
        raw.recv()
    raw.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=5).close()


def test_start_reports_a_port_in_use(server: PhoneServer, phone: FakePhone) -> None:
    with pytest.raises(OSError):
        PhoneServer(phone, port=server.port).start()


# --- the real adb server ------------------------------------------------------------------


@pytest.fixture(scope="module")
def adb_phone() -> FakePhone:
    return FakePhone()


@pytest.fixture(scope="module")
def adb_server(adb_phone: FakePhone) -> Iterator[PhoneServer]:
    with PhoneServer(adb_phone) as running:
        yield running


@pytest.fixture(scope="module")
def serial(private_adb: PrivateAdb, adb_server: PhoneServer) -> Iterator[str]:  # noqa: F811
    attached = private_adb.connect(adb_server.port)
    yield attached
    private_adb.disconnect(attached)


@pytest.fixture
def adb(private_adb: PrivateAdb) -> PrivateAdb:  # noqa: F811
    return private_adb


def test_adb_lists_the_sim_with_its_banner(adb: PrivateAdb, serial: str) -> None:
    listing = adb.run("devices", "-l").stdout.decode()
    line = next(line for line in listing.splitlines() if line.startswith(serial))
    assert "device product:sim_phone model:Sim_Phone device:sim" in line


def test_adb_shell_getprop_prints_a_number(adb: PrivateAdb, serial: str, adb_phone: FakePhone) -> None:
    result = adb.run("shell", "getprop", "ro.build.version.sdk", serial=serial)
    assert result.returncode == 0
    assert result.stdout.strip().isdigit()
    assert adb_phone.command_log[-1] == "getprop ro.build.version.sdk"


@pytest.mark.parametrize(
    ("command", "exit_code", "stdout", "stderr"),
    [
        (["false"], 1, b"", b""),
        (["true"], 0, b"", b""),
        (["nosuchcmd"], 127, b"", b"/system/bin/sh: nosuchcmd: inaccessible or not found\n"),
        (["both"], 3, b"to stdout\n", b"to stderr\n"),
    ],
)
def test_adb_shell_exit_codes_through_shell_v2(adb: PrivateAdb, serial: str, command: list[str], exit_code: int, stdout: bytes, stderr: bytes) -> None:
    result = adb.run("shell", *command, serial=serial)
    assert (result.returncode, result.stdout, result.stderr) == (exit_code, stdout, stderr)


def test_adb_exec_out_returns_raw_bytes(adb: PrivateAdb, serial: str, adb_phone: FakePhone) -> None:
    result = adb.run("exec-out", "bytes", "8", serial=serial)
    assert result.returncode == 0
    assert result.stdout == bytes(range(256)) * 8
    assert adb_phone.command_log[-1] == "bytes '8'"


def test_adb_push_then_pull_3_mb_is_byte_identical(adb: PrivateAdb, serial: str, tmp_path: Path, adb_phone: FakePhone) -> None:
    content = os.urandom(3 * 1024 * 1024 + 7)
    (tmp_path / "up.bin").write_bytes(content)
    pushed = adb.run("push", str(tmp_path / "up.bin"), "/sdcard/up.bin", serial=serial)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert adb_phone.fs.read("/sdcard/up.bin") == content
    pulled = adb.run("pull", "/sdcard/up.bin", str(tmp_path / "down.bin"), serial=serial)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert (tmp_path / "down.bin").read_bytes() == content


def test_adb_pull_of_a_missing_file_reports_it(adb: PrivateAdb, serial: str, tmp_path: Path) -> None:
    result = adb.run("pull", "/sdcard/missing.bin", str(tmp_path / "x"), serial=serial)
    assert result.returncode == 1
    assert b"No such file or directory" in result.stdout + result.stderr
    assert not (tmp_path / "x").exists()


def test_adb_ls_lists_pushed_files(adb: PrivateAdb, serial: str, adb_phone: FakePhone) -> None:
    adb_phone.fs.write("/data/local/tmp/listed.txt", b"12345", 0o644, 1_700_000_000)
    result = adb.run("ls", "/data/local/tmp", serial=serial)
    assert result.returncode == 0
    assert any(line.endswith(b" listed.txt") and b" 00000005 " in line for line in result.stdout.splitlines())


def test_adb_survives_garbage_on_the_port(adb: PrivateAdb, serial: str, adb_server: PhoneServer) -> None:
    for garbage in (b"\x00" * 24, b"CNXN but not really" * 10, os.urandom(100_000)):
        throw_garbage(adb_server.port, garbage)
    result = adb.run("shell", "echo", "after", "garbage", serial=serial)
    assert (result.returncode, result.stdout) == (0, b"after garbage\n")


def kill_a_pull_mid_stream(adb: PrivateAdb, serial: str, server: PhoneServer, fs: object, tmp_path: Path) -> None:
    """Start pulling a 64 MiB file, freeze and kill the client mid-stream, then check the sim recovers."""
    size = 64 * 1024 * 1024
    fs.write("/sdcard/huge.bin", b"\xa5" * size)  # type: ignore[attr-defined]
    target = tmp_path / "huge.bin"
    puller = adb.popen("pull", "/sdcard/huge.bin", str(target), serial=serial, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: target.exists() and target.stat().st_size > 1024 * 1024 or puller.poll() is not None, what="the pull to start streaming")
        # Stopped, the client reads nothing more: the adb server stops acknowledging and the sim's write waits.
        os.killpg(puller.pid, signal.SIGSTOP)
        assert puller.poll() is None, "the pull finished before it could be interrupted"
        assert target.stat().st_size < size
        assert server.open_streams >= 1
        os.killpg(puller.pid, signal.SIGKILL)
        puller.wait(timeout=10)
    finally:
        if puller.poll() is None:
            os.killpg(puller.pid, signal.SIGKILL)
            puller.wait(timeout=10)
    wait_until(lambda: server.open_streams == 0, what="the killed pull's stream to be freed")
    result = adb.run("shell", "echo", "alive", serial=serial)
    assert (result.returncode, result.stdout) == (0, b"alive\n")


def test_adb_pull_killed_mid_stream_leaves_the_server_serving(adb: PrivateAdb, serial: str, adb_server: PhoneServer, adb_phone: FakePhone, tmp_path: Path) -> None:
    try:
        kill_a_pull_mid_stream(adb, serial, adb_server, adb_phone.fs, tmp_path)
    finally:
        adb_phone.fs.files.pop("/sdcard/huge.bin", None)


def test_twenty_parallel_adb_shell_calls_are_all_answered(adb: PrivateAdb, serial: str) -> None:
    calls = [adb.popen("shell", "echo", f"call-{n}", serial=serial, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n in range(20)]
    outputs = []
    try:
        for call in calls:
            stdout, _stderr = call.communicate(timeout=30)
            outputs.append((call.returncode, stdout))
    finally:
        for call in calls:
            if call.poll() is None:
                os.killpg(call.pid, signal.SIGKILL)
                call.wait(timeout=10)
    assert outputs == [(0, f"call-{n}\n".encode()) for n in range(20)]


def test_a_slow_command_does_not_stall_other_calls(adb: PrivateAdb, serial: str, adb_phone: FakePhone) -> None:
    adb_phone.gate.clear()
    slow = adb.popen("shell", "gate", serial=serial, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: "gate" in adb_phone.command_log, what="the slow command to start")
        quick = adb.run("shell", "echo", "meanwhile", serial=serial, timeout_s=20)
        assert (quick.returncode, quick.stdout) == (0, b"meanwhile\n")
        assert slow.poll() is None
        adb_phone.gate.set()
        stdout, _stderr = slow.communicate(timeout=20)
        assert (slow.returncode, stdout) == (0, b"gate opened\n")
    finally:
        adb_phone.gate.set()
        if slow.poll() is None:
            os.killpg(slow.pid, signal.SIGKILL)
            slow.wait(timeout=10)


def test_adb_install_streams_the_apk_to_the_phone(adb: PrivateAdb, serial: str, adb_phone: FakePhone, tmp_path: Path) -> None:
    apk = tmp_path / "app.apk"
    apk.write_bytes(os.urandom(300_000))
    result = adb.run("install", "-r", str(apk), serial=serial)
    assert (result.returncode, result.stdout.splitlines()[-1]) == (0, b"Success"), result.stdout + result.stderr
    assert adb_phone.installed[-1] == apk.read_bytes()
    assert adb_phone.command_log[-1].startswith("cmd package install -r /data/local/tmp/")
    assert not [path for path in adb_phone.fs.files if ".adb-install-" in path], "the staged APK was left behind"


def test_adb_shell_with_piped_stdin_runs_each_line(adb: PrivateAdb, serial: str) -> None:
    result = adb.run("shell", serial=serial, stdin=b"echo first\nfalse\necho last")
    assert (result.returncode, result.stdout) == (0, b"first\nlast\n")


def test_pure_python_adb_shell_push_and_pull(adb: PrivateAdb, serial: str, adb_phone: FakePhone, tmp_path: Path) -> None:
    # The plugin's device layer talks through pure-python-adb: shell v1 and sync STAT/SEND/RECV.
    from ppadb.client import Client

    device = Client("127.0.0.1", adb.port).device(serial)
    assert device.shell("both") == "to stdout\nto stderr\n"
    content = os.urandom(1_000_003)
    (tmp_path / "up.bin").write_bytes(content)
    device.push(str(tmp_path / "up.bin"), "/data/local/tmp/pp.bin")
    assert adb_phone.fs.read("/data/local/tmp/pp.bin") == content
    device.pull("/data/local/tmp/pp.bin", str(tmp_path / "down.bin"))
    assert (tmp_path / "down.bin").read_bytes() == content


def test_adb_counts_services_on_the_phone(adb: PrivateAdb, serial: str, adb_phone: FakePhone) -> None:
    before = adb_phone.counters.copy()
    adb.run("shell", "true", serial=serial)
    adb.run("exec-out", "true", serial=serial)
    adb.run("pull", "/sdcard/missing.bin", "/dev/null", serial=serial)
    delta = adb_phone.counters - before
    assert (delta["shell"], delta["exec"], delta["sync"]) == (1, 1, 1)


# --- the real simulated Android behind the real adb server --------------------------------


@pytest.fixture(scope="module")
def android() -> Phone:
    return Phone()


@pytest.fixture(scope="module")
def android_server(android: Phone) -> Iterator[PhoneServer]:
    with PhoneServer(android) as running:
        yield running


@pytest.fixture(scope="module")
def android_serial(private_adb: PrivateAdb, android_server: PhoneServer) -> Iterator[str]:  # noqa: F811
    attached = private_adb.connect(android_server.port)
    yield attached
    private_adb.disconnect(attached)


@pytest.mark.parametrize(
    ("command", "exit_code", "stdout_check"),
    [
        (["getprop", "ro.build.version.sdk"], 0, lambda out: out.strip().isdigit()),
        (["false"], 1, lambda out: out == b""),
        (["nosuchcmd"], 127, lambda out: out == b""),
        (["echo", "hello"], 0, lambda out: out == b"hello\n"),
    ],
)
def test_real_phone_shell_through_adb(adb: PrivateAdb, android_serial: str, command: list[str], exit_code: int, stdout_check: Callable[[bytes], bool]) -> None:
    result = adb.run("shell", *command, serial=android_serial)
    assert result.returncode == exit_code, result.stderr
    assert stdout_check(result.stdout), result.stdout


def test_real_phone_exec_out_uiautomator_dump(adb: PrivateAdb, android_serial: str) -> None:
    result = adb.run("exec-out", "uiautomator", "dump", "/dev/tty", serial=android_serial)
    assert result.returncode == 0
    assert result.stdout.startswith(b"<?xml")
    assert b"<hierarchy" in result.stdout


def test_real_phone_push_pull_and_stat(adb: PrivateAdb, android_serial: str, android: Phone, tmp_path: Path) -> None:
    content = os.urandom(3 * 1024 * 1024)
    (tmp_path / "up.bin").write_bytes(content)
    assert adb.run("push", str(tmp_path / "up.bin"), "/data/local/tmp/up.bin", serial=android_serial).returncode == 0
    assert adb.run("pull", "/data/local/tmp/up.bin", str(tmp_path / "down.bin"), serial=android_serial).returncode == 0
    assert (tmp_path / "down.bin").read_bytes() == content
    missing = adb.run("pull", "/sdcard/missing.bin", str(tmp_path / "missing.bin"), serial=android_serial)
    assert missing.returncode == 1
    assert b"No such file or directory" in missing.stdout + missing.stderr
    assert android.counters["sync"] >= 3


def test_real_phone_app_storage_is_closed_to_push_and_pull(adb: PrivateAdb, android_serial: str, tmp_path: Path) -> None:
    # adbd runs as the shell user: only run-as reaches an app's private files, as on a phone.
    private = "/data/data/dev.jasonpearson.automobile.playground/shared_prefs/planted.xml"
    (tmp_path / "planted.xml").write_bytes(b"<map />")
    pushed = adb.run("push", str(tmp_path / "planted.xml"), private, serial=android_serial)
    assert pushed.returncode == 1 and b"Permission denied" in pushed.stdout + pushed.stderr
    pulled = adb.run("pull", "/data/data/dev.jasonpearson.automobile.playground/nothing", str(tmp_path / "x"), serial=android_serial)
    assert pulled.returncode == 1


def test_real_phone_twenty_parallel_shells(adb: PrivateAdb, android_serial: str) -> None:
    calls = [adb.popen("shell", "echo", f"n{n}", serial=android_serial, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n in range(20)]
    try:
        outputs = [(call.communicate(timeout=30)[0], call.returncode) for call in calls]
    finally:
        for call in calls:
            if call.poll() is None:
                os.killpg(call.pid, signal.SIGKILL)
                call.wait(timeout=10)
    assert outputs == [(f"n{n}\n".encode(), 0) for n in range(20)]


def test_real_phone_pull_killed_mid_stream(adb: PrivateAdb, android_serial: str, android_server: PhoneServer, android: Phone, tmp_path: Path) -> None:
    kill_a_pull_mid_stream(adb, android_serial, android_server, android.fs, tmp_path)
    assert adb.run("shell", "rm", "/sdcard/huge.bin", serial=android_serial).returncode == 0
