"""Test builders for the relay: a real MCP SDK stdio server that logs every tools/call it runs, a hub in front of it, and a raw-socket agent.

The server reads its stdin the way every project server does (the SDK's `stdio_server`: a text
wrapper with universal newlines and `errors="replace"`), so a byte stream the hub mis-frames
shows up as a call in the server's own log (`calls.jsonl`) that `relay.jsonl` lacks. Tools:
`hold` waits until `release` is called (so a request stays pending as long as a test needs),
`fail` answers `isError`, any other name answers "ok".
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_agentbench.run.invocation import relay_socket_path
from pytest_agentbench.run.relay_hub import RelayHub, ServerLaunch

CALL_SERVER = textwrap.dedent('''
    import json, sys
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    log = open(sys.argv[1], "a", encoding="ascii")
    released = anyio.Event()

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name=name, input_schema={"type": "object"})
                                            for name in ("observe", "shell", "hold", "release", "fail")])

    async def call_tool(ctx, params):
        # Logged first, before any await: the call ran as soon as this line is in the file.
        log.write(json.dumps({"id": ctx.request_id, "tool": params.name, "arguments": params.arguments or {}},
                             ensure_ascii=True, sort_keys=True) + "\\n")
        log.flush()
        if params.name == "hold":
            await released.wait()
        elif params.name == "release":
            released.set()
        return types.CallToolResult(content=[types.TextContent(type="text", text="no" if params.name == "fail" else "ok")],
                                    is_error=params.name == "fail")

    server = Server("calls", on_list_tools=list_tools, on_call_tool=call_tool)

    async def main():
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
''')

INITIALIZE = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def line(message: Any, **dumps: Any) -> bytes:
    """One message as an agent would frame it (LF), `json.dumps` options passed through."""
    return json.dumps(message, **dumps).encode("utf-8") + b"\n"


def call(request_id: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 30.0) -> Any:
    """Poll `condition` until it is truthy; fail naming `what` after the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.005)


class RawAgent:
    """An agent that writes raw bytes to the hub's socket (as agentbench-relay would pass them) and collects every line back."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.received: list[dict[str, Any]] = []
        self.raw_lines: list[bytes] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except OSError:
                return
            if not data:
                return
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            with self._lock:
                for raw in lines:
                    self.raw_lines.append(raw)
                    self.received.append(json.loads(raw))

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def answer(self, request_id: Any, timeout_s: float = 30.0) -> dict[str, Any]:
        """Wait for the response carrying `request_id`."""
        def found() -> dict[str, Any] | None:
            with self._lock:
                return next((m for m in self.received if "method" not in m and m.get("id") == request_id
                             and type(m.get("id")) is type(request_id)), None)
        return wait_for(found, f"the answer to request {request_id!r}", timeout_s)

    def errors_with_null_id(self) -> list[dict[str, Any]]:
        with self._lock:
            return [m for m in self.received if "error" in m and m.get("id") is None]

    def handshake(self) -> None:
        self.send(line(INITIALIZE))
        self.answer("init")
        self.send(line(INITIALIZED))

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self._reader.join(timeout=30)
        self.sock.close()


class CallServerHub:
    """A RelayHub in this process in front of CALL_SERVER; `executed()` is the server's log, `relayed()` the hub's."""

    def __init__(self, directory: Path, **limits: int) -> None:
        self.directory = directory
        self.server_log = directory / "calls.jsonl"
        self.relay_log = directory / "relay.jsonl"
        script = directory / "call_server.py"
        script.write_text(CALL_SERVER, encoding="utf-8")
        self.socket_dir = Path(tempfile.mkdtemp(prefix="agentbench-relay-test-"))
        launch = ServerLaunch(argv=(sys.executable, str(script), str(self.server_log)), env=dict(os.environ), cwd=directory)
        self.hub = RelayHub(socket_dir=self.socket_dir, log_path=self.relay_log, servers={"dev": launch},
                            stderr_dir=directory, **limits).start()

    def agent(self) -> RawAgent:
        agent = RawAgent(relay_socket_path(self.socket_dir, "dev"))
        agent.handshake()
        return agent

    def stop(self) -> None:
        """Stop the hub (and so the server); safe to call again."""
        self.hub.stop()
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(self.socket_dir)

    def executed(self) -> list[dict[str, Any]]:
        """Every tools/call the server ran: {id, tool, arguments}, in order."""
        if not self.server_log.exists():
            return []
        return [json.loads(raw) for raw in self.server_log.read_bytes().split(b"\n") if raw]

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in self.relay_log.read_bytes().split(b"\n") if raw]


def as_executed(tool: str, arguments: Any, server_id: Any) -> str:
    """One call in the form both logs are compared in."""
    return json.dumps({"id": server_id, "tool": tool, "arguments": arguments or {}}, ensure_ascii=True, sort_keys=True)
