"""agentbench-relay + the harness's hub -> the real server started outside the agent, every call in relay.jsonl, every server stopped by group."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from pytest_agentbench.run.invocation import relay_entry, relay_socket_path
from pytest_agentbench.run.relay_hub import RelayHub, ServerLaunch
from pytest_agentbench.run.relaylog import read_relay_log
from pytest_agentbench.servers.mcpclient import McpClientError, StdioClient
from relaycalls import CallServerHub, RawAgent, call, line, wait_for

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
            reply["result"] = {"tools": [{"name": name, "inputSchema": {}} for name in ("ok", "bad", "rpc", "die", "garble")]}
        else:
            name = message["params"]["name"]
            if name == "die":
                os._exit(3)
            if name == "garble":
                # Lines the hub cannot read or route, then a notification, before the real answer.
                sys.stdout.flush()
                sys.stdout.buffer.write(b"not json\\r\\n" + b'{"jsonrpc":"2.0","id":999,"result":{}}\\n' + b"\\xff\\xfe\\n"
                                        + '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"\u2028"}}\\n'.encode())
                sys.stdout.buffer.flush()
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
    assert relay.listed_tools["dev"] == frozenset({"ok", "bad", "rpc", "die", "garble"})
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


def test_the_log_is_ascii_and_every_request_is_logged_before_it_is_forwarded(tmp_path: Path) -> None:
    hub, socket_dir, _ = _hub(tmp_path)
    try:
        with _client(socket_dir) as client:
            client.call_tool("ok", {"text": "tap\u2028here\u0085now"}, timeout_s=30)
    finally:
        hub.stop()
    data = (tmp_path / "relay.jsonl").read_bytes()
    assert data.isascii() and "\u2028" not in data.decode()
    records = [json.loads(raw) for raw in data.split(b"\n") if raw]
    events = [(r["event"], r.get("method") or r.get("tool"), r.get("serverId")) for r in records if "serverId" in r]
    # The hub's own ids, in order; each request's record comes before its answer's.
    assert events == [("request", "initialize", 1), ("initialize", None, 1), ("request", "tools/list", 2), ("tools/list", None, 2),
                      ("request", "tools/call", 3), ("call", "ok", 3)]
    (call,) = read_relay_log(tmp_path / "relay.jsonl").calls
    assert dict(call.arguments) == {"text": "tap\u2028here\u0085now"} and call.server_id == 3


def test_server_lines_the_hub_cannot_read_or_route_are_dropped_and_logged(tmp_path: Path) -> None:
    hub, socket_dir, _ = _hub(tmp_path)
    try:
        agent = RawAgent(relay_socket_path(socket_dir, "dev"))
        agent.handshake()
        agent.send(line(call(41, "garble")))
        assert agent.answer(41)["result"]["content"][0]["text"] == "fine"
        notice = wait_for(lambda: [m for m in agent.received if m.get("method") == "notifications/message"], "the notification")
        assert notice[0]["params"]["data"] == "\u2028"
        agent.close()
    finally:
        hub.stop()
    assert all(raw.isascii() for raw in agent.raw_lines) and not any(b"not json" in raw for raw in agent.raw_lines)
    relay = read_relay_log(tmp_path / "relay.jsonl")
    assert [(r.direction, r.reason.split(" (")[0]) for r in relay.refusals] == [
        ("from-server", "the message is not one JSON value"), ("from-server", "the server answered a request the relay never sent it"),
        ("from-server", "the message is not UTF-8")]
    assert [(c.tool, c.status) for c in relay.calls] == [("garble", "ok")]


def test_a_cancellation_reaches_the_server_under_the_hubs_id(tmp_path: Path) -> None:
    hub = CallServerHub(tmp_path)
    try:
        agent = hub.agent()
        agent.send(line(call(5, "hold")))
        wait_for(hub.executed, "the server to run hold")
        agent.send(line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}))
        agent.send(line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77}}))
        agent.send(line(call(6, "release")))
        agent.answer(6)
        agent.close()
    finally:
        hub.stop()
    records = hub.records()
    (cancel,) = [r for r in records if r["event"] == "message" and r["method"] == "notifications/cancelled"]
    assert cancel["cancels"] == {"id": 5, "serverId": 2}
    (refused,) = [r for r in records if r["event"] == "refused"]
    assert refused["reason"] == "the cancellation names no pending request" and refused["id"] == 77
    relay = read_relay_log(hub.relay_log)
    assert [(c.request_id, c.tool, c.status) for c in relay.calls] == [(5, "hold", "no-response"), (6, "release", "ok")]


def test_the_log_reads_split_on_lf_alone(tmp_path: Path) -> None:
    # A log written before the hub escaped non-ASCII (raw U+2028/U+0085 inside strings) still reads whole.
    header = {"event": "hub", "servers": {"dev": {}}}
    old = {"event": "call", "server": "dev", "id": 1, "tool": "type", "arguments": {"text": "a\u2028b\u0085c\x0cd"}, "status": "ok",
           "startMonotonic": 1.0}
    log = tmp_path / "relay.jsonl"
    log.write_bytes(b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in (header, old)))
    relay = read_relay_log(log)
    assert not relay.problems and [dict(c.arguments) for c in relay.calls] == [{"text": "a\u2028b\u0085c\x0cd"}]


def test_a_request_the_hub_logged_but_never_saw_answered_is_a_call_without_response(tmp_path: Path) -> None:
    records = [
        {"event": "hub", "servers": {"dev": {}}},
        {"event": "request", "server": "dev", "connection": 1, "id": 9, "serverId": 4, "method": "tools/call", "tool": "shell",
         "arguments": {"c": "id"}, "wall": 5.0, "monotonic": 2.0},
        {"event": "request", "server": "dev", "connection": 1, "id": 8, "serverId": 3, "method": "tools/call", "tool": "observe",
         "arguments": {}, "wall": 4.0, "monotonic": 1.0},
        {"event": "call", "server": "dev", "connection": 1, "id": 8, "serverId": 3, "tool": "observe", "arguments": {}, "status": "ok",
         "startMonotonic": 1.0, "endMonotonic": 1.5},
        {"event": "refused", "server": "dev", "connection": 1, "direction": "from-agent", "code": -32700, "reason": "the message is not UTF-8",
         "bytes": 80, "excerpt": "{\\xff"},
    ]
    log = tmp_path / "relay.jsonl"
    log.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    relay = read_relay_log(log)
    assert [(c.request_id, c.tool, c.status, c.server_id) for c in relay.calls] == [(8, "observe", "ok", 3), (9, "shell", "no-response", 4)]
    assert [(r.direction, r.reason) for r in relay.refusals] == [("from-agent", "the message is not UTF-8")]
