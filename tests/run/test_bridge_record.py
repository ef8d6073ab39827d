"""The sandbox's model bridge -> model-bridge.jsonl: every upstream connection it opened or could not open, and every refusal, read back as a BridgeLog."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_agentbench.run.bridgelog import BridgeLogWriter, read_bridge_log
from pytest_agentbench.run.netbridge import Endpoint, NetBridge


@pytest.fixture()
def model_host() -> Iterator[int]:
    """A loopback server that answers one line per connection (stands in for a model API)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def serve() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            with client:
                client.sendall(b"ok: " + client.recv(1024))

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def through(path: Path, request: bytes = b"hi") -> bytes:
    """Send `request` through a bridge socket and read until the bridge or the host closes (a reset is a close)."""
    data = b""
    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(10)
        client.connect(str(path))
        try:
            client.sendall(request)
            while chunk := client.recv(4096):
                data += chunk
        except (ConnectionResetError, BrokenPipeError):
            pass  # the bridge closed first (a refused upstream): what came back is all there is
    return data


def test_every_upstream_connection_and_refusal_is_recorded(tmp_path: Path, model_host: int) -> None:
    up, down = Endpoint("127.0.0.1", model_host), Endpoint("127.0.0.1", closed_port())
    log_path = tmp_path / "model-bridge.jsonl"
    writer = BridgeLogWriter(log_path, [str(up), str(down)])
    bridge = NetBridge(tmp_path, record=writer.write)
    to_up, to_down = bridge.forward("up", up), bridge.forward("down", down)
    proxy = bridge.proxy("proxy", [up, down])
    bridge.start()
    try:
        assert through(to_up) == b"ok: hi"
        assert through(to_down) == b""  # refused upstream: the agent's connection is closed
        assert b"403" in through(proxy, b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n")
        assert b"502" in through(proxy, f"CONNECT {down} HTTP/1.1\r\n\r\n".encode())
    finally:
        bridge.close()
        writer.close()
    log = read_bridge_log(log_path)
    assert log.endpoints == (str(up), str(down)) and log.problems == ()
    assert [(c.endpoint, c.via, c.ok) for c in log.connects] == [(str(up), "forward", True), (str(down), "forward", False),
                                                                  (str(down), "proxy", False)]
    assert all(c.error.startswith("ECONNREFUSED") for c in log.failures), log.failures
    # How many of the agent's connections were in flight (this one included; an ended one may still be closing).
    assert all(1 <= c.open <= 4 for c in log.connects), log.connects
    assert log.refused == ("evil.example:443",)
    # ASCII only, one record a line: nothing a host name holds can split or join records.
    assert log_path.read_bytes().isascii() and len(log_path.read_text().split("\n")) == 6


def test_a_missing_bridge_log_is_unavailable_with_the_reason(tmp_path: Path) -> None:
    log = read_bridge_log(tmp_path / "model-bridge.jsonl")
    assert log.unavailable.startswith("the model bridge's log model-bridge.jsonl cannot be read: No such file")
