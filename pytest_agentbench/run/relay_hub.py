"""Relay connections on the harness's unix sockets -> the real MCP servers, started by the harness, and relay.jsonl: every message they carried.

The agent's `--mcp-config` names only `agentbench-relay --socket <dir>/<server>.sock`
(`mcp_server/relay.py`, a dumb pipe). For each connection the hub starts the server's real
command (with the server environment the agent never sees) in a process group of its own.

The hub is the framing authority (docs/relay.md): it never passes the agent's bytes on. It
reads each LF-terminated line, validates it (`run/relay_frames.py`: strict UTF-8, one JSON-RPC
2.0 object, no batch, within the size limit, a tools/call with well-formed params, a request id
not already pending), writes its record to `relay.jsonl`, and only then writes the message to
the server re-encoded as one compact ASCII JSON line, under an id of the hub's own. A line it
refuses is logged (`refused`) and never reaches the server; a refused request gets a JSON-RPC
error reply. The server's lines come back the same way: parsed, logged, re-encoded with the
agent's id restored; a server line the hub cannot read is logged and dropped. So the calls in
the log are the calls the server was sent, one for one.

`relay.jsonl` is ASCII JSON, one object per line:

* `hub`: the servers the agent's config declares (written first);
* `connect` / `disconnect`: a relay connection and the server process behind it;
* `request`: a request from the agent, written before it is forwarded (method, the agent's
  `id`, the hub's `serverId`; tool and arguments for a `tools/call`);
* `initialize`, `tools/list`: the handshake and the tool names the server listed;
* `call`: one `tools/call` with server, tool, arguments, `id`, `serverId`, result status
  (`ok`, `error` for `isError`, `rpc-error`, `no-response`), and start/end wall and monotonic
  times taken when the request reached the hub and the answer left the server;
* `response`: the answer to any other request (ping, resources/list, ...), with its status;
* `message`: a notification either way, a server's request to the agent, the agent's answer;
* `refused`: a line not forwarded (`direction` from-agent or from-server), the rule it broke,
  its size and its first characters;
* `relay-error`: a fault of the hub's own that ended one direction of a connection.

`run/relaylog.py` reads the file back into typed records for the audit.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.run.invocation import relay_socket_path
from pytest_agentbench.run.relay_frames import (
    AGENT_MESSAGE_LIMIT,
    INVALID_REQUEST,
    SERVER_MESSAGE_LIMIT,
    LineFramer,
    Message,
    Oversized,
    Refusal,
    encode,
    error_reply,
    excerpt,
    read_message,
)
from pytest_agentbench.run.runner import stop_process_group, track_group

#: The relay log's file name in the run directory.
RELAY_LOG_NAME = "relay.jsonl"
_CHUNK = 1 << 16
#: Seconds a server gets to exit after its stdin closed, then after SIGTERM.
_SERVER_GRACE_S = 2.0
_ERROR_TEXT_CHARS = 300


@dataclass(frozen=True)
class ServerLaunch:
    """How the hub starts one declared server: argv, whole environment, working directory."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path


class _Log:
    """relay.jsonl, one ASCII JSON object per line, written under a lock and flushed at once.

    ASCII-only (`ensure_ascii=True`): no character an agent puts in an argument (U+2028, U+0085,
    a raw CR) can end a line, so `run/relaylog.py` reads the file split on LF alone.
    """

    def __init__(self, path: Path) -> None:
        self._handle: IO[bytes] = open(path, "ab")
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=True, default=str).encode("ascii") + b"\n"
        with self._lock:
            if not self._handle.closed:
                self._handle.write(line)
                self._handle.flush()

    def close(self) -> None:
        with self._lock:
            self._handle.close()


def _text_of(result: Mapping[str, Any]) -> str:
    parts = [str(block.get("text", "")) for block in result.get("content") or [] if isinstance(block, dict) and block.get("type") == "text"]
    return "\n".join(parts)


def _now() -> tuple[float, float]:
    return time.time(), time.monotonic()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class _Connection:
    """One relay connection: its server process, the two pumps between them, and the ids in flight.

    The hub gives every request it forwards an id of its own (1, 2, 3, ... per connection) and
    maps the answer back to the agent's id, so the server never sees an id the agent chose: no
    two requests the server runs can share one, whatever the agent sends or the server's id
    rules (the MCP SDK treats "7" and 7 as one id).
    """

    def __init__(self, hub: RelayHub, server: str, number: int, conn: socket.socket) -> None:
        self.hub, self.server, self.number, self.conn = hub, server, number, conn
        #: hub id -> the agent's request: method, params, agent id, times.
        self.pending: dict[int, dict[str, Any]] = {}
        #: the agent's ids in flight (canonical JSON) -> hub id.
        self.agent_ids: dict[str, int] = {}
        #: the server's own requests to the agent still unanswered (canonical JSON ids).
        self.server_requests: set[str] = set()
        self.next_id = 0
        self.lock = threading.Lock()
        self.send_lock = threading.Lock()
        self.process: subprocess.Popen | None = None

    def _base(self) -> dict[str, Any]:
        return {"server": self.server, "connection": self.number}

    def run(self) -> None:
        launch = self.hub.servers[self.server]
        log = self.hub.log
        stderr_path = self.hub.stderr_dir / f"mcp-{self.server}.stderr"
        try:
            with open(stderr_path, "ab") as errlog:
                self.process = subprocess.Popen(
                    list(launch.argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog,
                    env=dict(launch.env), cwd=str(launch.cwd), bufsize=0, start_new_session=True,
                )
        except OSError as exc:
            log.write({"event": "server-failed", **self._base(), "reason": f"could not start `{launch.argv[0]}`: {exc.strerror or exc}"})
            with contextlib.suppress(OSError):
                self.conn.close()
            return
        track_group(self.process.pid)
        self.hub.register(self)
        log.write({"event": "connect", **self._base(), "pid": self.process.pid, "wall": time.time(), "monotonic": time.monotonic()})
        upstream = threading.Thread(target=self._client_to_server, name=f"relay-up-{self.server}", daemon=True)
        upstream.start()
        self._server_to_client()
        upstream.join(timeout=5.0)
        self.finish()

    # -- agent -> server ---------------------------------------------------------------------

    def _client_to_server(self) -> None:
        assert self.process is not None and self.process.stdin is not None
        stdin_fd = self.process.stdin.fileno()
        framer = LineFramer(self.hub.agent_limit)
        try:
            while True:
                data = self.conn.recv(_CHUNK)
                if not data:
                    break
                for line in framer.feed(data):
                    self._from_agent(line, stdin_fd)
            tail = framer.finish()
            if tail is not None:
                self._from_agent(tail, stdin_fd)
        except OSError:
            pass
        except Exception as exc:  # a fault of the hub's own: on the record, and the server still ends
            self.hub.log.write({"event": "relay-error", **self._base(), "direction": "to-server", "error": repr(exc)[:300]})
        with contextlib.suppress(OSError):
            self.process.stdin.close()

    def _from_agent(self, line: bytes | Oversized, stdin_fd: int) -> None:
        """Log, then forward in the canonical framing, or refuse: the only way bytes reach the server."""
        now = _now()
        outcome = read_message(line, limit=self.hub.agent_limit, from_agent=True)
        if outcome is None:
            return
        if isinstance(outcome, Refusal):
            self._refuse(outcome, line, now)
            return
        body = outcome.body
        if outcome.kind == "request":
            key = _key(outcome.id)
            with self.lock:
                if key in self.agent_ids:
                    duplicate = True
                else:
                    duplicate = False
                    self.next_id += 1
                    hub_id = self.next_id
                    self.agent_ids[key] = hub_id
                    self.pending[hub_id] = {"method": outcome.method, "params": outcome.params, "id": outcome.id,
                                            "key": key, "wall": now[0], "monotonic": now[1]}
            if duplicate:
                self._refuse(Refusal(INVALID_REQUEST, f"request id {key[:60]} is already pending; use a new id for each request",
                                     method=outcome.method, request_id=outcome.id, tool=_tool_of(outcome.method, outcome.params)),
                             line, now)
                return
            record = {"event": "request", **self._base(), "id": outcome.id, "serverId": hub_id, "method": outcome.method,
                      "wall": now[0], "monotonic": now[1]}
            if outcome.method == "tools/call":
                arguments = outcome.params.get("arguments")
                record.update(tool=outcome.params["name"], arguments=arguments if isinstance(arguments, dict) else {})
            self.hub.log.write(record)
            body = {**body, "id": hub_id}
        elif outcome.kind == "response":
            key = _key(outcome.id)
            with self.lock:
                known = key in self.server_requests
                self.server_requests.discard(key)
            if not known:
                self._refuse(Refusal(INVALID_REQUEST, "the response answers no request the server sent", reply=False,
                                     request_id=outcome.id), line, now)
                return
            self._note_message("to-server", outcome, now)
        elif outcome.method == "notifications/cancelled":
            body = self._translate_cancel(outcome, line, now)
            if body is None:
                return
            self._note_message("to-server", outcome, now, cancels={"id": outcome.params["requestId"], "serverId": body["params"]["requestId"]})
        else:
            self._note_message("to-server", outcome, now)
        _write_all(stdin_fd, encode(body))

    def _translate_cancel(self, outcome: Message, line: bytes | Oversized, now: tuple[float, float]) -> dict[str, Any] | None:
        """A cancellation names the agent's id; the server knows the request by the hub's."""
        target = outcome.params.get("requestId")
        with self.lock:
            hub_id = self.agent_ids.get(_key(target)) if target is not None else None
        if hub_id is None:
            self._refuse(Refusal(INVALID_REQUEST, "the cancellation names no pending request", reply=False,
                                 method=outcome.method, request_id=target), line, now)
            return None
        return {**outcome.body, "params": {**outcome.params, "requestId": hub_id}}

    def _refuse(self, refusal: Refusal, line: bytes | Oversized, now: tuple[float, float], *, direction: str = "from-agent") -> None:
        """Log a line that is not forwarded; a refused request from the agent gets a JSON-RPC error."""
        record = {"event": "refused", **self._base(), "direction": direction, "code": refusal.code, "reason": refusal.reason}
        if refusal.method is not None:
            record["method"] = refusal.method
        if refusal.tool is not None:
            record["tool"] = refusal.tool
        if refusal.request_id is not None:
            record["id"] = refusal.request_id
        record.update(bytes=line.size if isinstance(line, Oversized) else len(line), excerpt=excerpt(line), wall=now[0], monotonic=now[1])
        self.hub.log.write(record)
        if direction == "from-agent" and refusal.reply:
            self._send(encode(error_reply(refusal.reply_id, refusal.code, refusal.reason)))

    def _note_message(self, direction: str, message: Message, now: tuple[float, float], **extra: Any) -> None:
        record = {"event": "message", **self._base(), "direction": direction, "kind": message.kind}
        if message.method is not None:
            record["method"] = message.method
        if message.kind != "notification":
            record["id"] = message.id
        record.update(extra, wall=now[0], monotonic=now[1])
        self.hub.log.write(record)

    # -- server -> agent ---------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        with self.send_lock:
            try:
                self.conn.sendall(data)
            except OSError:
                # The relay is gone; keep reading so the server is not blocked on its pipe.
                pass

    def _server_to_client(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        framer = LineFramer(self.hub.server_limit)
        try:
            while True:
                data = os.read(fd, _CHUNK)
                if not data:
                    break
                for line in framer.feed(data):
                    self._from_server(line)
            tail = framer.finish()
            if tail is not None:
                self._from_server(tail)
        except OSError:
            pass
        except Exception as exc:  # a fault of the hub's own: on the record, and the agent's side still closes
            self.hub.log.write({"event": "relay-error", **self._base(), "direction": "to-agent", "error": repr(exc)[:300]})
        with contextlib.suppress(OSError):
            self.conn.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.conn.close()

    def _from_server(self, line: bytes | Oversized) -> None:
        """Log, then pass to the agent in the canonical framing; what the hub cannot read is dropped, and logged."""
        now = _now()
        outcome = read_message(line, limit=self.hub.server_limit, from_agent=False)
        if outcome is None:
            return
        if isinstance(outcome, Refusal):
            self._refuse(outcome, line, now, direction="from-server")
            return
        body = outcome.body
        if outcome.kind == "response":
            with self.lock:
                request = self.pending.pop(outcome.id, None) if type(outcome.id) is int else None
                if request is not None:
                    self.agent_ids.pop(request["key"], None)
            if request is None:
                self._refuse(Refusal(INVALID_REQUEST, "the server answered a request the relay never sent it", reply=False,
                                     request_id=outcome.id), line, now, direction="from-server")
                return
            self.hub.log.write(_record(self._base(), request, outcome.id, body, now))
            body = {**body, "id": request["id"]}
        else:
            if outcome.kind == "request":
                with self.lock:
                    self.server_requests.add(_key(outcome.id))
            self._note_message("to-agent", outcome, now)
        self._send(encode(body))

    def finish(self) -> None:
        """Stop the server's group, write what never got an answer, and the disconnect."""
        if self.process is not None:
            with contextlib.suppress(OSError):
                if self.process.stdin is not None:
                    self.process.stdin.close()
            try:
                self.process.wait(timeout=_SERVER_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
            stop_process_group(self.process.pid, grace_s=_SERVER_GRACE_S)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=1.0)
        with self.lock:
            left, self.pending, self.agent_ids = sorted(self.pending.items()), {}, {}
        ended = _now()
        for hub_id, request in left:
            self.hub.log.write(_record(self._base(), request, hub_id, None, ended))
        code = self.process.returncode if self.process is not None else None
        self.hub.log.write({"event": "disconnect", **self._base(), "exitCode": code, "wall": ended[0], "monotonic": ended[1]})
        self.hub.unregister(self)


def _key(request_id: Any) -> str:
    return json.dumps(request_id, sort_keys=True)


def _tool_of(method: str | None, params: Mapping[str, Any]) -> str | None:
    return params.get("name") if method == "tools/call" and isinstance(params.get("name"), str) else None


def _record(base: dict[str, Any], request: dict[str, Any], hub_id: int, response: dict[str, Any] | None,
            ended: tuple[float, float]) -> dict[str, Any]:
    method, params = request["method"], request["params"]
    times = {"startedAt": request["wall"], "endedAt": ended[0], "startMonotonic": request["monotonic"], "endMonotonic": ended[1]}
    ids = {"id": request["id"], "serverId": hub_id}
    error = response.get("error") if response is not None else None
    result = response.get("result") if response is not None and isinstance(response.get("result"), dict) else {}
    if method == "initialize":
        info = result.get("serverInfo") if isinstance(result.get("serverInfo"), dict) else {}
        return {"event": "initialize", **base, **ids, "client": params.get("clientInfo"), "serverInfo": info,
                "protocolVersion": result.get("protocolVersion"), "error": error, **times}
    if method == "tools/list":
        names = [tool["name"] for tool in result.get("tools") or [] if isinstance(tool, dict) and isinstance(tool.get("name"), str)]
        return {"event": "tools/list", **base, **ids, "tools": names, "nextCursor": result.get("nextCursor"),
                "error": error, **times}
    if response is None:
        status, is_error = "no-response", False
    elif error is not None:
        status, is_error = "rpc-error", False
    else:
        is_error = method == "tools/call" and result.get("isError") is True
        status = "error" if is_error else "ok"
    if method != "tools/call":
        return {"event": "response", **base, **ids, "method": method, "status": status, **times}
    arguments = params.get("arguments")
    record = {"event": "call", **base, **ids, "tool": str(params.get("name", "")),
              "arguments": arguments if isinstance(arguments, dict) else {}, "status": status, "isError": is_error,
              "error": (error.get("message") if isinstance(error, dict) else str(error)) if error is not None else None, **times}
    if is_error:
        record["errorText"] = _text_of(result)[:_ERROR_TEXT_CHARS]
    return record


class RelayHub:
    """The harness's side of the relay: one listening socket per declared server, the servers it started, relay.jsonl.

    Use as a context manager (or `start()` / `stop()`); `stop()` is safe to call more than once
    and stops every server the hub started, by process group.
    """

    def __init__(self, *, socket_dir: Path, log_path: Path, servers: Mapping[str, ServerLaunch], stderr_dir: Path,
                 agent_limit: int = AGENT_MESSAGE_LIMIT, server_limit: int = SERVER_MESSAGE_LIMIT) -> None:
        self.socket_dir = Path(socket_dir)
        self.agent_limit, self.server_limit = agent_limit, server_limit
        self.log_path = Path(log_path)
        self.servers = dict(servers)
        self.stderr_dir = Path(stderr_dir)
        self.log = _Log(self.log_path)
        self._listeners: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._connections: set[_Connection] = set()
        self._lock = threading.Lock()
        self._count = 0
        self._stopped = False

    def __enter__(self) -> RelayHub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> RelayHub:
        """Write the log's header and listen on every declared server's socket.

        Raises:
            AgentbenchError: A socket cannot be made (the directory is gone, the path too long).
        """
        self.log.write({"event": "hub", "servers": {name: {"command": list(launch.argv)} for name, launch in self.servers.items()},
                        "wall": time.time(), "monotonic": time.monotonic()})
        for name in self.servers:
            path = relay_socket_path(self.socket_dir, name)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                listener.bind(str(path))
                listener.listen(8)
            except OSError as exc:
                listener.close()
                self.stop()
                raise AgentbenchError(f"the MCP relay cannot listen on {path}: {exc.strerror or exc}") from None
            self._listeners.append(listener)
            thread = threading.Thread(target=self._accept, args=(name, listener), name=f"relay-accept-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _accept(self, name: str, listener: socket.socket) -> None:
        while not self._stopped:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                if self._stopped:
                    conn.close()
                    return
                self._count += 1
                number = self._count
            connection = _Connection(self, name, number, conn)
            thread = threading.Thread(target=connection.run, name=f"relay-{name}-{number}", daemon=True)
            thread.start()
            with self._lock:
                self._threads.append(thread)

    def register(self, connection: _Connection) -> None:
        with self._lock:
            self._connections.add(connection)

    def unregister(self, connection: _Connection) -> None:
        with self._lock:
            self._connections.discard(connection)

    def stop(self) -> None:
        """Stop listening, end every server's group, wait for the pumps, close the log."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            listeners, self._listeners = self._listeners, []
            connections = list(self._connections)
        for listener in listeners:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                listener.close()
        for connection in connections:
            if connection.process is not None:
                with contextlib.suppress(OSError):
                    if connection.process.stdin is not None:
                        connection.process.stdin.close()
                stop_process_group(connection.process.pid, grace_s=_SERVER_GRACE_S)
            with contextlib.suppress(OSError):
                connection.conn.close()
        with self._lock:
            threads = list(self._threads)
        deadline = time.monotonic() + 10.0
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self.log.write({"event": "hub-stopped", "wall": time.time(), "monotonic": time.monotonic()})
        self.log.close()
        for name in self.servers:
            with contextlib.suppress(OSError):
                relay_socket_path(self.socket_dir, name).unlink()
