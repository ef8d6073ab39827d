"""Tests for device/adb.py, device/hostprotocol.py and device/shellscript.py: pure parsers, quoting, and calls against a real private adb server."""

from __future__ import annotations

import os
import shlex
import socket
import struct
import subprocess
import threading
import time

import pytest

from pytest_agentbench.device.adb import Adb, AdbEndpoint, DeviceInfo, RemoteStat
from pytest_agentbench.device.hostprotocol import (
    _parse_connect_reply,
    _parse_devices_l,
    _parse_exit_marker,
    _parse_socket_spec,
    _parse_stat_reply,
)
from pytest_agentbench.device.shellscript import Script, as_script, quote, sh
from pytest_agentbench.errors import DeviceError, DeviceLost, DeviceUnavailable

from adbserver import free_port

# ---------------------------------------------------------------- endpoint


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, AdbEndpoint("localhost", 5037)),
        ({"ANDROID_ADB_SERVER_PORT": "15037"}, AdbEndpoint("localhost", 15037)),
        ({"ANDROID_ADB_SERVER_ADDRESS": "10.0.0.2", "ANDROID_ADB_SERVER_PORT": "6000"}, AdbEndpoint("10.0.0.2", 6000)),
        ({"ADB_SERVER_SOCKET": "tcp:127.0.0.1:7000", "ANDROID_ADB_SERVER_PORT": "6000"}, AdbEndpoint("127.0.0.1", 7000)),
        ({"ADB_SERVER_SOCKET": "tcp:7001"}, AdbEndpoint("localhost", 7001)),
        ({"ADB_SERVER_SOCKET": "tcp:[::1]:7002"}, AdbEndpoint("::1", 7002)),
        ({"ADB_SERVER_SOCKET": "  ", "ANDROID_ADB_SERVER_PORT": "6001"}, AdbEndpoint("localhost", 6001)),
    ],
)
def test_endpoint_from_environ(env, expected):
    assert AdbEndpoint.from_environ(env) == expected


@pytest.mark.parametrize(
    "env",
    [
        {"ANDROID_ADB_SERVER_PORT": "abc"},
        {"ANDROID_ADB_SERVER_PORT": "0"},
        {"ANDROID_ADB_SERVER_PORT": "70000"},
        {"ADB_SERVER_SOCKET": "localabstract:adb"},
        {"ADB_SERVER_SOCKET": "tcp:host:"},
    ],
)
def test_endpoint_from_environ_rejects(env):
    with pytest.raises(ValueError):
        AdbEndpoint.from_environ(env)


@pytest.mark.parametrize(
    ("endpoint", "scope"),
    [
        (AdbEndpoint(), "tcp-localhost-5037"),
        (AdbEndpoint("127.0.0.1", 15037), "tcp-127.0.0.1-15037"),
        (AdbEndpoint("::1", 5037), "tcp-__1-5037"),
    ],
)
def test_endpoint_scope(endpoint, scope):
    assert endpoint.scope == scope


def test_endpoint_environ_round_trips():
    endpoint = AdbEndpoint("127.0.0.1", 15123)
    assert AdbEndpoint.from_environ(endpoint.environ()) == endpoint


def test_parse_socket_spec_plain():
    assert _parse_socket_spec("tcp:example.org:5038") == AdbEndpoint("example.org", 5038)


# ---------------------------------------------------------------- parsers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        (
            "emulator-5554          device product:sdk_gphone64 model:sdk_gphone64 device:emu64a transport_id:1\n",
            [DeviceInfo("emulator-5554", "device", "sdk_gphone64", "sdk_gphone64", "emu64a", 1)],
        ),
        ("127.0.0.1:15555        offline transport_id:3\n", [DeviceInfo("127.0.0.1:15555", "offline", transport_id=3)]),
        ("R58M123 unauthorized usb:1-1 transport_id:2\n", [DeviceInfo("R58M123", "unauthorized", transport_id=2)]),
        (
            "R58M124 no permissions (user in plugdev group; are your udev rules wrong?); see [http://d.android.com] usb:1-2\n",
            [DeviceInfo("R58M124", "no permissions")],
        ),
        ("a device\nb offline\n\n", [DeviceInfo("a", "device"), DeviceInfo("b", "offline")]),
        ("weird futurestate model:x\n", [DeviceInfo("weird", "futurestate", model="x")]),
    ],
)
def test_parse_devices_l(text, expected):
    assert _parse_devices_l(text) == expected


def test_parse_devices_l_rejects_line_without_state():
    with pytest.raises(ValueError):
        _parse_devices_l("lonely-serial\n")


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (b"hello\n__m__:0\n", (b"hello\n", 0)),
        (b"no newline__m__:1\n", (b"no newline", 1)),
        (b"__m__:127\n", (b"", 127)),
        (b"__m__:5\n then __m__:3\r\n", (b"__m__:5\n then ", 3)),
        (b"__m__:3", (b"", 3)),
        (b"\x89PNG\x00\xff__m__:0\n", (b"\x89PNG\x00\xff", 0)),
        (b"out\n__m__:127\nsh: x: not found\n", (b"out\nsh: x: not found\n", 127)),
    ],
)
def test_parse_exit_marker(output, expected):
    assert _parse_exit_marker(output, b"__m__") == expected


@pytest.mark.parametrize("output", [b"", b"cut off mid", b"__m__:", b"__m__:x\n"])
def test_parse_exit_marker_rejects(output):
    with pytest.raises(ValueError):
        _parse_exit_marker(output, b"__m__")


@pytest.mark.parametrize(
    ("reply", "attached"),
    [
        ("connected to 127.0.0.1:15555", True),
        ("already connected to 127.0.0.1:15555", True),
        ("failed to connect to '127.0.0.1:15555': Connection refused", False),
        ("cannot connect to 127.0.0.1:1: Connection refused", False),
    ],
)
def test_parse_connect_reply(reply, attached):
    assert _parse_connect_reply(reply) is attached


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (b"STAT" + struct.pack("<III", 0o100644, 12, 1700000000), RemoteStat(0o100644, 12, 1700000000)),
        (b"STAT" + bytes(12), None),
    ],
)
def test_parse_stat_reply(reply, expected):
    assert _parse_stat_reply(reply) == expected


@pytest.mark.parametrize("reply", [b"FAIL" + bytes(12), b"STAT" + bytes(4)])
def test_parse_stat_reply_rejects(reply):
    with pytest.raises(ValueError):
        _parse_stat_reply(reply)


# ---------------------------------------------------------------- quoting and scripts

HOSTILE_VALUES = [
    "plain",
    "two words",
    "it's",
    '"double"',
    "$(touch /tmp/pwned)",
    "`id`",
    "a; rm -rf /",
    "x && y || z",
    "back\\slash",
    "$HOME",
    "*",
    "new\nline",
    "",
    "ünïcødé 完了",
]


@pytest.mark.parametrize("value", HOSTILE_VALUES)
def test_quote_is_one_literal_word(value):
    assert shlex.split(quote(value)) == [value]


@pytest.mark.parametrize("value", HOSTILE_VALUES)
def test_quote_survives_a_real_posix_shell(value):
    # /bin/sh stands in for the device shell: printf prints its argument back verbatim.
    printed = subprocess.run(["/bin/sh", "-c", f"printf %s {quote(value)}"], capture_output=True, text=True, check=True)
    assert printed.stdout == value


@pytest.mark.parametrize("bad", ["nul\0byte", True])
def test_quote_rejects(bad):
    with pytest.raises(ValueError):
        quote(bad)


def test_quote_numbers_and_paths(tmp_path):
    assert quote(3) == "3"
    assert quote(tmp_path) == shlex.quote(str(tmp_path))


@pytest.mark.parametrize(
    ("script", "text"),
    [
        (sh("pm", "clear", "com.example"), "pm clear com.example"),
        (sh("input", "text", "hi there"), "input text 'hi there'"),
        (Script.join([["am", "force-stop", "a.b"], sh("pm", "clear", "a.b")], sep="&&"), "am force-stop a.b && pm clear a.b"),
        (Script.join([["true"], ["false"]]), "true; false"),
        (Script.join([["a"], ["b"]], sep="||"), "a || b"),
        (Script.join([sh("x")], sep="&&"), "x"),
        (Script.join([Script.join([["a"], ["b"]], sep="&&"), ["c"]], sep="&&"), "a && b && c"),
        (sh("pm", "list", "features").quiet(), "pm list features 2>/dev/null"),
        (sh("echo", "$x").stdout_to("/sdcard/my file"), "echo '$x' > '/sdcard/my file'"),
    ],
)
def test_script_text(script, text):
    assert script.text == text
    assert str(script) == text


@pytest.mark.parametrize(
    "build",
    [
        lambda: Script.join([]),
        lambda: Script.join([["a"]], sep="&"),
        lambda: Script.join([Script.join([["a"], ["b"]], sep=";"), ["c"]], sep="&&"),
        lambda: Script.join([Script.join([["a"], ["b"]], sep="&&"), ["c"]], sep="|"),
        lambda: Script.join([Script.join([["a"], ["b"]], sep="||"), ["c"]], sep="&&"),
        lambda: Script.join([["a"], ["b"]]).quiet(),
        lambda: Script.command(),
    ],
)
def test_script_refuses_ambiguous_or_empty(build):
    with pytest.raises(ValueError):
        build()


def test_as_script_refuses_a_bare_string():
    with pytest.raises(TypeError):
        as_script("rm -rf /sdcard")


def test_script_join_runs_in_a_real_shell():
    script = Script.join([sh("echo", "a b"), Script.join([["false"], ["echo", "fallback"]], sep="||")], sep="||")
    assert script.text == "echo 'a b' || false || echo fallback"
    out = subprocess.run(["/bin/sh", "-c", script.text], capture_output=True, text=True)
    assert out.stdout == "a b\n"


# ---------------------------------------------------------------- a fake adb server (socket level)


class _FakeAdbServer:
    """Answers the host protocol from a table, so Adb's framing and error paths run for real."""

    def __init__(self, replies):
        self.replies = replies  # service -> bytes to send back, or a callable(conn)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.seen: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _read_request(self, conn):
        length = int(conn.recv(4).decode(), 16)
        return conn.recv(length).decode()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                try:
                    while True:
                        request = self._read_request(conn)
                        self.seen.append(request)
                        reply = self.replies.get(request, b"FAIL0007unknown")
                        if callable(reply):
                            reply(conn)
                            break
                        conn.sendall(reply)
                        if reply != b"OKAY":  # a bare OKAY (transport) is followed by the service request
                            break
                except (OSError, ValueError):
                    pass

    def close(self):
        self.listener.close()


def _text(body: str) -> bytes:
    data = body.encode()
    return b"OKAY" + f"{len(data):04x}".encode() + data


@pytest.fixture
def fake_server():
    servers = []

    def make(replies):
        server = _FakeAdbServer(replies)
        servers.append(server)
        return server, Adb(AdbEndpoint("127.0.0.1", server.port))

    yield make
    for server in servers:
        server.close()


def test_devices_and_round_trips_over_the_wire(fake_server):
    server, adb = fake_server({"host:devices-l": _text("s1 device model:M\ns2 offline\n")})
    assert adb.devices() == [DeviceInfo("s1", "device", model="M"), DeviceInfo("s2", "offline")]
    assert adb.round_trips == 1


def test_shell_exit_status_from_marker(fake_server):
    def shell_reply(conn):
        request = conn.recv(4096).decode()
        marker = request.split("echo ")[-1].split(":")[0]
        conn.sendall(b"OKAY" + b"partial line" + f"{marker}:3\n".encode())

    server, adb = fake_server({"host:transport:s1": lambda conn: (conn.sendall(b"OKAY"), shell_reply(conn))})
    result = adb.shell("s1", ["ls", "/no such"], check=False)
    assert result.stdout == "partial line"
    assert result.exit_code == 3
    with pytest.raises(DeviceError) as raised:
        adb.shell("s1", ["ls", "/no such"])
    assert raised.value.exit_code == 3
    assert raised.value.command == "ls '/no such'"
    assert "partial line" in str(raised.value)


def test_shell_output_cut_short_is_device_lost(fake_server):
    def cut(conn):
        conn.sendall(b"OKAY")
        conn.recv(4096)
        conn.sendall(b"OKAY" + b"half of the outp")

    server, adb = fake_server({"host:transport:s1": cut})
    with pytest.raises(DeviceLost):
        adb.shell("s1", ["cat", "/sdcard/big"])


def test_unknown_serial_is_unavailable(fake_server):
    message = b"device 'gone' not found"
    server, adb = fake_server({"host:transport:gone": b"FAIL" + b"%04x" % len(message) + message})
    with pytest.raises(DeviceUnavailable):
        adb.shell("gone", ["true"])


def test_silent_server_times_out_as_device_lost(fake_server):
    def hang(conn):
        conn.sendall(b"OKAY")
        conn.recv(4096)
        conn.sendall(b"OKAY")
        time.sleep(3)

    server, adb = fake_server({"host:transport:s1": hang})
    started = time.monotonic()
    with pytest.raises(DeviceLost):
        adb.shell("s1", ["sleep", "100"], timeout_s=0.5)
    assert time.monotonic() - started < 15  # hang detector, not a performance bound


def test_nothing_listening_is_device_lost():
    adb = Adb(AdbEndpoint("127.0.0.1", free_port()))
    assert not adb.server_running()
    with pytest.raises(DeviceLost):
        adb.devices()


def test_connect_failure_is_device_error(fake_server):
    server, adb = fake_server({"host:connect:127.0.0.1:1": _text("failed to connect to '127.0.0.1:1': Connection refused")})
    with pytest.raises(DeviceError, match="Connection refused"):
        adb.connect("127.0.0.1", 1)


def test_push_and_pull_sync_framing(fake_server):
    stored = {}

    def sync_session(conn):
        conn.sendall(b"OKAY")
        conn.recv(4 + 5)  # "0005sync:"
        conn.sendall(b"OKAY")
        stream = conn.makefile("rb")
        while True:
            header = stream.read(8)
            if len(header) < 8:
                return
            kind, length = header[:4], struct.unpack("<I", header[4:])[0]
            if kind == b"SEND":
                path = stream.read(length).decode().split(",")[0]
                data = bytearray()
                while True:
                    chunk_header = stream.read(8)
                    chunk_kind, chunk_len = chunk_header[:4], struct.unpack("<I", chunk_header[4:])[0]
                    if chunk_kind == b"DONE":
                        break
                    data += stream.read(chunk_len)
                stored[path] = bytes(data)
                conn.sendall(b"OKAY" + bytes(4))
            elif kind == b"RECV":
                path = stream.read(length).decode()
                if path not in stored:
                    message = b"No such file or directory"
                    conn.sendall(b"FAIL" + struct.pack("<I", len(message)) + message)
                    continue
                data = stored[path]
                for start in range(0, len(data), 65536):
                    chunk = data[start:start + 65536]
                    conn.sendall(b"DATA" + struct.pack("<I", len(chunk)) + chunk)
                conn.sendall(b"DONE" + bytes(4))
            elif kind == b"QUIT":
                return

    server, adb = fake_server({"host:transport:s1": sync_session})
    payload = bytes(range(256)) * 1000 + b"tail"
    adb.push("s1", payload, "/data/local/tmp/blob")
    assert stored["/data/local/tmp/blob"] == payload
    assert adb.pull("s1", "/data/local/tmp/blob") == payload
    with pytest.raises(DeviceError, match="No such file"):
        adb.pull("s1", "/missing")


# ---------------------------------------------------------------- a real adb server


def test_real_server_lists_no_devices_and_answers_version(private_adb_server):
    adb = private_adb_server.client()
    assert adb.version() >= 39
    assert adb.devices() == []
    with pytest.raises(DeviceUnavailable, match="nosuchserial"):
        adb.shell("nosuchserial", ["true"])


def test_ensure_server_starts_one_when_nothing_listens(tmp_path):
    port = free_port()
    adb = Adb(AdbEndpoint("127.0.0.1", port))
    try:
        adb.ensure_server()
        assert adb.server_running()
        assert adb.devices() == []
    finally:
        subprocess.run(["adb", "-P", str(port), "kill-server"], capture_output=True, timeout=30)


def test_server_dying_is_device_lost(private_adb_server):
    adb = private_adb_server.client()
    assert adb.devices() == []
    private_adb_server.stop()
    with pytest.raises(DeviceLost):
        adb.devices()


# ---------------------------------------------------------------- a simulated phone behind the real adb server


@pytest.fixture(scope="module")
def sim(module_adb_server):
    pytest.importorskip("pytest_agentbench.sim.phone", reason="the simulated Android (sim/phone.py) is not there yet")
    from pytest_agentbench.sim.fleet import SimFleet

    with SimFleet(count=1, adb=module_adb_server.client()) as fleet:
        yield fleet


@pytest.fixture
def adb(sim):
    # A fresh client per test, so round_trips counts only that test's calls.
    return Adb(sim.adb.endpoint)


def test_sim_listed_as_device_with_banner(sim, adb):
    (info,) = [info for info in adb.devices() if info.serial == sim.serials[0]]
    assert info.state == "device"
    assert info.model == sim.phones[0].banner_props["ro.product.model"].replace(" ", "_")


@pytest.mark.parametrize(
    ("args", "exit_code"),
    [(["true"], 0), (["false"], 1), (["nosuchcmd"], 127), (Script.join([["false"], ["true"]], sep="||"), 0)],
)
def test_shell_exit_status(sim, adb, args, exit_code):
    assert adb.shell(sim.serials[0], args, check=False).exit_code == exit_code


def test_shell_check_raises_with_command_and_output(sim, adb):
    with pytest.raises(DeviceError) as raised:
        adb.shell(sim.serials[0], ["nosuchcmd", "arg one"])
    assert raised.value.exit_code == 127
    assert raised.value.command == "nosuchcmd 'arg one'"
    assert "nosuchcmd" in raised.value.output


def test_shell_output_without_trailing_newline(sim, adb):
    serial = sim.serials[0]
    adb.push(serial, b"no newline at the end", "/data/local/tmp/nonl.txt")
    result = adb.shell(serial, ["cat", "/data/local/tmp/nonl.txt"])
    assert (result.stdout, result.exit_code) == ("no newline at the end", 0)


@pytest.mark.parametrize("value", [v for v in HOSTILE_VALUES if "\n" not in v])
def test_hostile_values_reach_the_device_literally(sim, adb, value):
    serial = sim.serials[0]
    phone = sim.phones[0]
    target = "/data/local/tmp/quoted value.txt"
    adb.shell(serial, Script.join([sh("rm", "-f", "/data/local/tmp/pwned"), sh("echo", value).stdout_to(target)]))
    assert adb.pull(serial, target) == (value + "\n").encode()
    assert adb.shell(serial, ["echo", value]).stdout == value + "\n"
    # Had the shell run `$(touch ...)` or split on `;`, the side effect would be on the phone.
    assert phone.fs.stat("/data/local/tmp/pwned") is None


def test_exec_out_returns_raw_bytes(sim, adb):
    serial = sim.serials[0]
    payload = bytes(range(256)) * 4 + b"\r\n\x00end"
    adb.push(serial, payload, "/data/local/tmp/raw.bin")
    assert adb.exec_out(serial, ["cat", "/data/local/tmp/raw.bin"]) == payload
    assert adb.exec_out(serial, ["screencap", "-p"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert adb.exec_out(serial, ["cat", "/data/local/tmp/missing.bin"]) == b""
    with pytest.raises(DeviceError) as raised:
        adb.exec_out(serial, ["cat", "/data/local/tmp/missing.bin"], check=True)
    assert raised.value.exit_code == 1


def test_push_pull_3mb_identical_and_stat(sim, adb):
    serial = sim.serials[0]
    payload = os.urandom(3 * 1024 * 1024)
    adb.push(serial, payload, "/sdcard/big.bin", mode=0o600)
    assert adb.pull(serial, "/sdcard/big.bin") == payload
    stat = adb.stat(serial, "/sdcard/big.bin")
    assert stat is not None and stat.size == len(payload)
    assert adb.stat(serial, "/sdcard/missing.bin") is None
    with pytest.raises(DeviceError):
        adb.pull(serial, "/sdcard/missing.bin")


def test_round_trips_count_each_command(sim, adb):
    serial = sim.serials[0]
    adb.shell(serial, Script.join([["true"], ["true"], ["true"]], sep="&&"))
    adb.exec_out(serial, ["true"])
    assert adb.round_trips == 2


def test_twenty_parallel_shell_calls(sim, adb):
    serial = sim.serials[0]
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def call(index: int) -> None:
        try:
            results[index] = adb.shell(serial, ["echo", f"call {index}"]).stdout
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(index,)) for index in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert results == {index: f"call {index}\n" for index in range(20)}
    assert adb.round_trips == 20


def test_phone_stopped_during_a_call_is_device_lost(private_adb_server):
    pytest.importorskip("pytest_agentbench.sim.phone", reason="the simulated Android (sim/phone.py) is not there yet")
    from pytest_agentbench.sim.fleet import SimFleet

    adb = private_adb_server.client()
    with SimFleet(count=1, adb=adb) as fleet:
        serial = fleet.serials[0]
        adb.shell(serial, ["true"])
        # Every reply now waits 3 s, so the call below is in flight when the phone goes away.
        fleet.servers[0].latency_ms = 3000
        threading.Timer(0.5, fleet.servers[0].stop).start()
        started = time.monotonic()
        with pytest.raises(DeviceLost):
            adb.shell(serial, ["getprop", "ro.build.version.sdk"], timeout_s=60)
        assert time.monotonic() - started < 15  # hang detector, not a performance bound


def test_adb_server_killed_during_a_call_is_device_lost(private_adb_server):
    pytest.importorskip("pytest_agentbench.sim.phone", reason="the simulated Android (sim/phone.py) is not there yet")
    from pytest_agentbench.sim.fleet import SimFleet

    adb = private_adb_server.client()
    with SimFleet(count=1, adb=adb) as fleet:
        fleet.servers[0].latency_ms = 3000
        threading.Timer(0.5, private_adb_server.stop).start()
        started = time.monotonic()
        with pytest.raises(DeviceLost):
            adb.pull(fleet.serials[0], "/system/build.prop", timeout_s=60)
        assert time.monotonic() - started < 15


def test_device_states_device_and_offline(private_adb_server):
    pytest.importorskip("pytest_agentbench.sim.phone", reason="the simulated Android (sim/phone.py) is not there yet")
    from pytest_agentbench.sim.fleet import SimFleet

    adb = private_adb_server.client()
    with SimFleet(count=2, adb=adb) as fleet:
        online, gone = fleet.serials
        fleet.servers[1].stop()
        deadline = time.monotonic() + 15
        states = {}
        while time.monotonic() < deadline:
            states = {info.serial: info.state for info in adb.devices()}
            if states.get(gone) == "offline":
                break
            time.sleep(0.05)
        assert states == {online: "device", gone: "offline"}
        with pytest.raises(DeviceUnavailable, match="offline"):
            adb.shell(gone, ["true"])
        assert adb.shell(online, ["true"]).exit_code == 0


@pytest.mark.parametrize(
    ("build", "text"),
    [
        (lambda: Script.join([Script.join([["a"], ["b"]], sep="&&"), ["c"]], sep=";"), "a && b; c"),
        (lambda: Script.join([Script.join([["a"], ["b"]], sep="|"), ["c"]], sep="&&"), "a | b && c"),
        (lambda: Script.join([Script.join([["am", "x"], ["grep", "-q", "^0$"]], sep="|"), ["c"]], sep="&&"), "am x | grep -q '^0$' && c"),
    ],
    ids=["and-chain inside a list", "pipe inside an and-chain", "quoted pattern in a pipe"],
)
def test_script_keeps_tighter_groups_inside_looser_operators(build, text):
    assert build().text == text
