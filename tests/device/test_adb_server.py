"""The session's adb server (device/server.py): a stuck one not ours is named with what to do, a stuck one ours is restarted, and the one a session started is stopped even when stuck."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator

import pytest
from adbserver import adb_binary, free_port

from pytest_agentbench.device.adb import SERVER_MARK, Adb, AdbEndpoint
from pytest_agentbench.device.server import ensure_answering, ensure_server, listener, stop_server
from pytest_agentbench.errors import DeviceUnavailable

needs_adb = pytest.mark.skipif(adb_binary() is None, reason="no adb executable (install Debian's `adb` package)")
needs_proc = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finding a port's process reads Linux /proc")


@contextlib.contextmanager
def stuck_listener() -> Iterator[int]:
    """A port that accepts connections (the kernel completes them) and never answers: a stuck adb server."""
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen(16)
        yield port


@contextlib.contextmanager
def harness_server() -> Iterator[Adb]:
    """A real adb server started the way the harness starts one (marked), killed by pid afterwards whatever became of it."""
    adb = Adb(AdbEndpoint("127.0.0.1", free_port()))
    adb.ensure_server()
    try:
        yield adb
    finally:
        found = listener(adb.endpoint.port)
        if found is not None:
            os.kill(found.pid, signal.SIGKILL)


def _wait(condition, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] == "Z"
    except OSError:
        return True


@needs_proc
def test_a_stuck_server_the_harness_did_not_start_is_named_with_what_to_do() -> None:
    with stuck_listener() as port:
        adb = Adb(AdbEndpoint("127.0.0.1", port))
        with pytest.raises(DeviceUnavailable) as excinfo:
            ensure_server(adb, answer_timeout_s=0.5)
        # Still there: it is not ours to kill.
        assert adb.server_running()
    message = str(excinfo.value)
    assert message.startswith(f"the adb server at 127.0.0.1:{port} accepts connections but did not answer `host:version` within 0.5 s "
                              f"(process {os.getpid()}: `")
    assert f"pytest-agentbench did not start it, so it is left alone; stop it with `kill {os.getpid()}`" in message
    assert f"`adb -P {port} kill-server` cannot reach a server that does not answer), then run again" in message


def test_an_answering_server_is_used_as_it_is(private_adb_server) -> None:
    adb = private_adb_server.client()
    assert ensure_server(adb) is False and ensure_answering(adb) is False
    assert private_adb_server.alive()


def test_nothing_listening_is_left_to_the_pool() -> None:
    adb = Adb(AdbEndpoint("127.0.0.1", free_port()))
    assert ensure_answering(adb) is False and not adb.server_running()


@needs_adb
@needs_proc
def test_a_server_the_harness_started_is_marked() -> None:
    with harness_server() as adb:
        found = listener(adb.endpoint.port)
        assert found is not None and found.ours, found
        assert f"tcp:{adb.endpoint.port}" in found.command
        with open(f"/proc/{found.pid}/environ", "rb") as environ:
            assert f"{SERVER_MARK}={os.getpid()}".encode() in environ.read().split(b"\0")


@needs_adb
@needs_proc
def test_a_stuck_server_the_harness_started_is_restarted() -> None:
    with harness_server() as adb:
        stuck = listener(adb.endpoint.port)
        os.kill(stuck.pid, signal.SIGSTOP)
        assert ensure_server(adb, answer_timeout_s=0.5) is True
        assert _wait(lambda: _gone(stuck.pid)), "the stuck server is still there"
        fresh = listener(adb.endpoint.port)
        assert fresh is not None and fresh.pid != stuck.pid and fresh.ours
        assert adb.version(timeout_s=5) >= 39
        stop_server(adb)
        assert not adb.server_running()


@needs_adb
@needs_proc
def test_the_session_stops_the_server_it_started_even_when_stuck() -> None:
    with harness_server() as adb:
        stuck = listener(adb.endpoint.port)
        os.kill(stuck.pid, signal.SIGSTOP)
        # `adb kill-server` asks the server, which answers nothing: its process is killed instead.
        stop_server(adb, timeout_s=1)
        assert not adb.server_running()
        assert _wait(lambda: _gone(stuck.pid)), "the stuck server is still there"


@needs_adb
@needs_proc
def test_a_session_on_a_stuck_server_stops_before_collection_naming_it(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from suitefiles import make_suites

    make_suites(pytester, "first", "second", "third")
    with stuck_listener() as port:
        monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(port))
        monkeypatch.delenv("ADB_SERVER_SOCKET", raising=False)
        result = pytester.runpytest_subprocess("benchmark/", "--device", "sim", "--claude", "agentbench-replay", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and f"the adb server at localhost:{port} accepts connections but did not answer" in errors[0], result.stderr.str()
    assert f"kill {os.getpid()}" in errors[0]
    assert "collected" not in result.stdout.str()
