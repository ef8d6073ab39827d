"""agentbench-relay + the harness's hub -> the real server started outside the agent, every call in relay.jsonl, every server stopped by group."""

from __future__ import annotations

import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from pytest_agentbench.run.invocation import relay_entry
from pytest_agentbench.run.relay_hub import RelayHub, ServerLaunch
from pytest_agentbench.run.relaylog import read_relay_log
from pytest_agentbench.servers.mcpclient import McpClientError, StdioClient

# A server that answers by tool: ok, isError, a JSON-RPC error, or never (and dies); it writes its
# pid and ignores SIGTERM when asked, so only the hub's SIGKILL ends it.
SERVER = textwrap.dedent('''
    import json, os, signal, sys
    open(sys.argv[1], "w").write(str(os.getpid()))
    if os.environ.get("STUBBORN"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        reply = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "initialize":
            reply["result"] = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "t", "version": "1"}}
        elif method == "tools/list":
            reply["result"] = {"tools": [{"name": name, "inputSchema": {}} for name in ("ok", "bad", "rpc", "die")]}
        else:
            name = message["params"]["name"]
            if name == "die":
                os._exit(3)
            if name == "rpc":
                reply["error"] = {"code": -32602, "message": "unknown argument"}
            else:
                reply["result"] = {"content": [{"type": "text", "text": "no such element" if name == "bad" else "fine"}],
                                   "isError": name == "bad"}
        sys.stdout.write(json.dumps(reply) + "\\n")
        sys.stdout.flush()
    if os.environ.get("STUBBORN"):
        import time
        time.sleep(600)
''')


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _hub(tmp_path: Path, **env: str) -> tuple[RelayHub, Path, Path]:
    script = tmp_path / "server.py"
    script.write_text(SERVER, encoding="utf-8")
    pid_file = tmp_path / "server.pid"
    socket_dir = Path(tempfile.mkdtemp(prefix="agentbench-relay-test-"))
    launch = ServerLaunch(argv=(sys.executable, str(script), str(pid_file)), env={**os.environ, **env}, cwd=tmp_path)
    hub = RelayHub(socket_dir=socket_dir, log_path=tmp_path / "relay.jsonl", servers={"dev": launch}, stderr_dir=tmp_path)
    return hub.start(), socket_dir, pid_file


def _client(socket_dir: Path) -> StdioClient:
    entry = relay_entry(socket_dir, "dev")
    client = StdioClient(entry["command"], entry["args"])
    client.initialize(timeout_s=30)
    client.list_tools(timeout_s=30)
    return client


def test_every_call_is_logged_with_its_status_and_times(tmp_path: Path) -> None:
    hub, socket_dir, pid_file = _hub(tmp_path)
    try:
        with _client(socket_dir) as client:
            assert client.call_tool("ok", {"a": 1}, timeout_s=30)["isError"] is False
            assert client.call_tool("bad", {}, timeout_s=30)["isError"] is True
            assert client.call_tool("rpc", {}, timeout_s=30)["isError"] is True  # shown as an error result
            with pytest.raises(McpClientError):
                client.call_tool("die", {"why": "test"}, timeout_s=30)
    finally:
        hub.stop()
    relay = read_relay_log(tmp_path / "relay.jsonl")
    assert relay.declared_servers == ("dev",) and relay.connections == 1 and not relay.problems
    assert relay.listed_tools["dev"] == frozenset({"ok", "bad", "rpc", "die"})
    assert [(c.tool, dict(c.arguments), c.status) for c in relay.calls] == [
        ("ok", {"a": 1}, "ok"), ("bad", {}, "error"), ("rpc", {}, "rpc-error"), ("die", {"why": "test"}, "no-response")]
    assert relay.calls[1].error_text == "no such element" and relay.calls[2].error == "unknown argument"
    for call in relay.calls:
        assert call.start_monotonic <= call.end_monotonic and call.started_at <= call.ended_at
    assert not any(socket_dir.iterdir()), "the sockets are removed"


def test_the_hub_stops_a_server_that_outlives_its_client_by_group(tmp_path: Path) -> None:
    hub, socket_dir, pid_file = _hub(tmp_path, STUBBORN="1")
    client = _client(socket_dir)
    client.call_tool("ok", {}, timeout_s=30)
    pid = int(pid_file.read_text())
    assert os.getpgid(pid) == pid, "the server runs in a process group of its own"
    # The agent vanishes without closing anything (SIGKILL): its relay dies with it.
    client.process.kill()
    client.process.wait()
    started = time.monotonic()
    hub.stop()
    assert not _alive(pid), "the hub left its server running"
    assert time.monotonic() - started < 15
    records = (tmp_path / "relay.jsonl").read_text(encoding="utf-8")
    assert '"event": "disconnect"' in records and records.rstrip().endswith("}")


def test_a_server_that_cannot_start_is_recorded(tmp_path: Path) -> None:
    socket_dir = Path(tempfile.mkdtemp(prefix="agentbench-relay-test-"))
    launch = ServerLaunch(argv=(str(tmp_path / "no-such-server"),), env=dict(os.environ), cwd=tmp_path)
    with RelayHub(socket_dir=socket_dir, log_path=tmp_path / "relay.jsonl", servers={"dev": launch}, stderr_dir=tmp_path):
        entry = relay_entry(socket_dir, "dev")
        with pytest.raises(McpClientError), StdioClient(entry["command"], entry["args"]) as client:
            client.initialize(timeout_s=30)
    relay = read_relay_log(tmp_path / "relay.jsonl")
    (failure,) = relay.server_failures
    assert failure.startswith("dev: could not start") and relay.calls == ()
