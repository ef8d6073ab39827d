"""Relay connections on the harness's unix sockets -> the real MCP servers, started by the harness, and relay.jsonl: every call they carried.

The agent's `--mcp-config` names only `agentbench-relay --socket <dir>/<server>.sock`
(`mcp_server/relay.py`). For each connection the hub starts the server's real command (with
the server environment the agent never sees) in a process group of its own, pipes JSON-RPC
both ways and writes one JSON line per event to the run directory's `relay.jsonl`:

* `hub`: the servers the agent's config declares (written first);
* `connect` / `disconnect`: a relay connection and the server process behind it;
* `initialize`, `tools/list`: the handshake and the tool names the server listed;
* `call`: one `tools/call` with server, tool, arguments, JSON-RPC id, result status (`ok`,
  `error` for `isError`, `rpc-error`, `no-response`), and start/end wall and monotonic times
  taken when the request reached the hub and the answer left the server.

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
    """relay.jsonl, one JSON object per line, written under a lock and flushed at once."""

    def __init__(self, path: Path) -> None:
        self._handle: IO[str] = open(path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if not self._handle.closed:
                self._handle.write(line)
                self._handle.flush()

    def close(self) -> None:
        with self._lock:
            self._handle.close()


def _lines(buffer: bytearray, data: bytes) -> list[bytes]:
    """Append `data` to `buffer` and take out every complete line."""
    buffer += data
    if b"\n" not in data:
        return []
    *complete, rest = bytes(buffer).split(b"\n")
    buffer[:] = rest
    return [line for line in complete if line.strip()]


def _message(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _text_of(result: Mapping[str, Any]) -> str:
    parts = [str(block.get("text", "")) for block in result.get("content") or [] if isinstance(block, dict) and block.get("type") == "text"]
    return "\n".join(parts)


class _Connection:
    """One relay connection: its server process and the two pumps between them."""

    def __init__(self, hub: RelayHub, server: str, number: int, conn: socket.socket) -> None:
        self.hub, self.server, self.number, self.conn = hub, server, number, conn
        self.pending: dict[Any, dict[str, Any]] = {}
        self.lock = threading.Lock()
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

    def _client_to_server(self) -> None:
        buffer = bytearray()
        assert self.process is not None and self.process.stdin is not None
        stdin = self.process.stdin
        try:
            while True:
                data = self.conn.recv(_CHUNK)
                if not data:
                    break
                # Requests are noted before they are passed on, so the answer always finds them.
                for line in _lines(buffer, data):
                    self._note_request(line)
                stdin.write(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            stdin.close()

    def _server_to_client(self) -> None:
        buffer = bytearray()
        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        try:
            while True:
                data = os.read(fd, _CHUNK)
                if not data:
                    break
                ended = (time.time(), time.monotonic())
                try:
                    self.conn.sendall(data)
                except OSError:
                    # The relay is gone; keep reading so the server is not blocked on its pipe.
                    pass
                for line in _lines(buffer, data):
                    self._note_response(line, ended)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            self.conn.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.conn.close()

    def _note_request(self, line: bytes) -> None:
        message = _message(line)
        if message is None or "method" not in message:
            return
        method = message.get("method")
        if method not in ("tools/call", "initialize", "tools/list") or "id" not in message:
            return
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        entry = {"method": method, "wall": time.time(), "monotonic": time.monotonic(), "params": params}
        with self.lock:
            self.pending[_key(message["id"])] = {**entry, "id": message["id"]}

    def _note_response(self, line: bytes, ended: tuple[float, float]) -> None:
        message = _message(line)
        if message is None or "method" in message or "id" not in message:
            return
        with self.lock:
            request = self.pending.pop(_key(message["id"]), None)
        if request is None:
            return
        self.hub.log.write(_record(self._base(), request, message, ended))

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
            left, self.pending = list(self.pending.values()), {}
        ended = (time.time(), time.monotonic())
        for request in left:
            self.hub.log.write(_record(self._base(), request, None, ended))
        code = self.process.returncode if self.process is not None else None
        self.hub.log.write({"event": "disconnect", **self._base(), "exitCode": code, "wall": ended[0], "monotonic": ended[1]})
        self.hub.unregister(self)


def _key(request_id: Any) -> str:
    return json.dumps(request_id, sort_keys=True)


def _record(base: dict[str, Any], request: dict[str, Any], response: dict[str, Any] | None, ended: tuple[float, float]) -> dict[str, Any]:
    method, params = request["method"], request["params"]
    times = {"startedAt": request["wall"], "endedAt": ended[0], "startMonotonic": request["monotonic"], "endMonotonic": ended[1]}
    error = response.get("error") if response is not None else None
    result = response.get("result") if response is not None and isinstance(response.get("result"), dict) else {}
    if method == "initialize":
        info = result.get("serverInfo") if isinstance(result.get("serverInfo"), dict) else {}
        return {"event": "initialize", **base, "id": request["id"], "client": params.get("clientInfo"), "serverInfo": info,
                "protocolVersion": result.get("protocolVersion"), "error": error, **times}
    if method == "tools/list":
        names = [tool["name"] for tool in result.get("tools") or [] if isinstance(tool, dict) and isinstance(tool.get("name"), str)]
        return {"event": "tools/list", **base, "id": request["id"], "tools": names, "nextCursor": result.get("nextCursor"),
                "error": error, **times}
    arguments = params.get("arguments")
    if response is None:
        status, is_error = "no-response", False
    elif error is not None:
        status, is_error = "rpc-error", False
    else:
        is_error = result.get("isError") is True
        status = "error" if is_error else "ok"
    record = {"event": "call", **base, "id": request["id"], "tool": str(params.get("name", "")),
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

    def __init__(self, *, socket_dir: Path, log_path: Path, servers: Mapping[str, ServerLaunch], stderr_dir: Path) -> None:
        self.socket_dir = Path(socket_dir)
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
