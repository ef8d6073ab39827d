"""An MCP server command -> a started stdio server spoken to in plain JSON-RPC lines: initialize, tools/list, tools/call, close.

The replay agent and the tools/list probe need only these four steps. Doing them with the
standard library keeps both from importing the MCP SDK (about half a second of CPU per
process, paid on every run), and it starts the server in the caller's own process group (the
SDK's client puts it in a new session), so stopping the agent's group stops its server too.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

#: The revision offered in `initialize`; servers answer with the one they speak.
PROTOCOL_VERSION = "2025-06-18"
CLIENT_INFO = {"name": "agentbench", "version": "1"}
#: How long a closed server gets to exit on its own, then after SIGTERM, before SIGKILL.
CLOSE_GRACE_S = 2.0
_METHOD_NOT_FOUND = -32601


class McpClientError(Exception):
    """The server did not start, broke the protocol, answered with an error, or went quiet past a deadline."""


class McpTimeout(McpClientError):
    """The server did not answer before the deadline."""


class StdioClient:
    """One MCP server over stdio: newline-delimited JSON-RPC on its stdin and stdout.

    Use as a context manager; ``close()`` ends the server (stdin closed, then TERM, then KILL),
    whatever happened before.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        errlog: IO[Any] | int | None = None,
    ) -> None:
        """Start the server.

        Args:
            command: The server executable.
            args: Its arguments.
            env: Its whole environment (None: ours).
            cwd: Its working directory.
            errlog: Where its stderr goes (a file, a descriptor, or None for ours).

        Raises:
            McpClientError: The command could not be started.
        """
        self.command = command
        try:
            self.process = subprocess.Popen(
                [command, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog,
                env=dict(env) if env is not None else None, cwd=cwd, bufsize=0,
            )
        except OSError as exc:
            raise McpClientError(f"could not start `{command}`: {exc.strerror or exc}") from exc
        self._buffer = b""
        self._next_id = 0
        self.server_info: dict[str, Any] = {}
        self.protocol_version: str | None = None

    def __enter__(self) -> StdioClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---------------------------------------------------------------- the four steps

    def initialize(self, *, timeout_s: float) -> dict[str, Any]:
        """The handshake: `initialize`, then `notifications/initialized`; returns the server's result."""
        result = self.request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
            timeout_s=timeout_s,
        )
        self.server_info = dict(result.get("serverInfo") or {})
        self.protocol_version = result.get("protocolVersion")
        self.notify("notifications/initialized")
        return result

    def list_tools(self, *, timeout_s: float) -> list[dict[str, Any]]:
        """Every tool the server lists (all pages), as the JSON objects it sent."""
        tools: list[dict[str, Any]] = []
        cursor = None
        deadline = time.monotonic() + timeout_s
        while True:
            page = self.request("tools/list", {"cursor": cursor} if cursor else {}, timeout_s=deadline - time.monotonic())
            tools += [tool for tool in page.get("tools") or [] if isinstance(tool, dict) and isinstance(tool.get("name"), str)]
            cursor = page.get("nextCursor")
            if not cursor:
                return tools

    def call_tool(self, name: str, arguments: Mapping[str, Any], *, timeout_s: float) -> dict[str, Any]:
        """`tools/call`; a JSON-RPC error comes back as an error result, as an agent shows it to the model.

        Returns:
            The result object (`content`, optional `structuredContent`, `isError`).
        """
        try:
            return self.request("tools/call", {"name": name, "arguments": dict(arguments)}, timeout_s=timeout_s)
        except _RemoteError as exc:
            return {"content": [{"type": "text", "text": f"MCP error {exc.code}: {exc.message}"}], "isError": True}

    def close(self, grace_s: float = CLOSE_GRACE_S) -> None:
        """End the server: close its stdin (the MCP way to say goodbye), then TERM, then KILL."""
        process = self.process
        for stream in (process.stdin, process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        for stop in (None, process.terminate, process.kill):
            if stop is not None:
                try:
                    stop()
                except ProcessLookupError:
                    pass
            try:
                process.wait(timeout=grace_s)
                return
            except subprocess.TimeoutExpired:
                continue

    # ---------------------------------------------------------------- JSON-RPC

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification (no answer expected)."""
        self._send({"jsonrpc": "2.0", "method": method, **({"params": dict(params)} if params is not None else {})})

    def request(self, method: str, params: Mapping[str, Any], *, timeout_s: float) -> dict[str, Any]:
        """Send one request and wait for its answer, answering the server's own requests meanwhile.

        Raises:
            McpClientError: No answer before the deadline, the server exited, or a protocol error.
        """
        self._next_id += 1
        request_id = self._next_id
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)})
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            message = self._receive(deadline, what=method)
            if "method" in message:
                self._answer_server(message)
                continue
            if message.get("id") != request_id:
                continue  # an answer to nothing we still wait for
            if "error" in message:
                error = message["error"] if isinstance(message["error"], dict) else {}
                raise _RemoteError(error.get("code"), str(error.get("message", "")), method)
            result = message.get("result")
            if not isinstance(result, dict):
                raise McpClientError(f"`{self.command}` answered {method} with {json.dumps(result)[:200]}, not an object")
            return result

    def _answer_server(self, message: Mapping[str, Any]) -> None:
        if "id" not in message:
            return  # notifications (logging, progress, list changes): nothing to do
        if message.get("method") == "ping":
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        else:
            # No capability was offered (sampling, roots, elicitation), so none is served.
            error = {"code": _METHOD_NOT_FOUND, "message": f"method not supported: {message.get('method')}"}
            self._send({"jsonrpc": "2.0", "id": message["id"], "error": error})

    def _send(self, message: Mapping[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(data)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise McpClientError(f"`{self.command}` stopped reading its stdin ({self._exit_status()})") from exc

    def _receive(self, deadline: float, *, what: str) -> dict[str, Any]:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while True:
            line, newline, rest = self._buffer.partition(b"\n")
            if newline:
                self._buffer = rest
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    raise McpClientError(f"`{self.command}` wrote a line that is not JSON-RPC: {line[:200]!r}") from None
                if isinstance(message, dict):
                    return message
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise McpTimeout(f"`{self.command}` did not answer {what} in time")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise McpClientError(f"`{self.command}` closed its stdout before answering {what} ({self._exit_status()})")
            self._buffer += chunk

    def _exit_status(self) -> str:
        try:
            code = self.process.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            return "still running"
        return f"exit status {code}" if code >= 0 else f"killed by signal {-code}"


class _RemoteError(McpClientError):
    """A JSON-RPC error answer."""

    def __init__(self, code: Any, message: str, method: str) -> None:
        super().__init__(f"the server refused {method}: {message} (code {code})")
        self.code = code
        self.message = message
