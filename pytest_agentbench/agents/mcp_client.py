"""--mcp-config values + Claude's permission flags -> connected MCP servers whose calls are permission-checked and written as stream-json."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TextIO

import anyio
import anyio.to_thread

from pytest_agentbench.agents.cli_options import ParsedArgs, split_tool_list
from pytest_agentbench.agents.stream import StreamWriter, mcp_tool_result_shape
from pytest_agentbench.audit.transcript import short_tool_name
from pytest_agentbench.servers.mcpclient import McpClientError, StdioClient

# How long a server may take to start and list its tools; Claude's knob, honoured the same way.
DEFAULT_CONNECT_TIMEOUT_S = 30.0
# A device action on a slow phone can take a while; the harness's timeoutSeconds bounds the run.
TOOL_CALL_TIMEOUT_S = 600.0
DEVICE_SERIAL_VARIABLE = "AGENTBENCH_DEVICE_SERIAL"


class ConfigProblem(Exception):
    """An invalid --mcp-config; the message is what Claude Code prints."""


class ServerSession(Protocol):
    """A connected MCP server as McpConnection uses it (the standard-library client or the SDK's)."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """`tools/call`: the result as JSON (`content`, `structuredContent`, `isError`)."""
        ...


class _StdlibSession:
    """The standard-library client (servers/mcpclient.py) behind the async interface."""

    def __init__(self, client: StdioClient) -> None:
        self.client = client

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return await anyio.to_thread.run_sync(lambda: self.client.call_tool(name, arguments, timeout_s=TOOL_CALL_TIMEOUT_S))
        except McpClientError as exc:
            return {"content": [{"type": "text", "text": f"MCP error: {exc}"}], "isError": True}


class _SdkSession:
    """The official MCP SDK's ClientSession behind the same interface."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            with anyio.fail_after(TOOL_CALL_TIMEOUT_S):
                result = await self.session.call_tool(name, arguments)
        except Exception as exc:  # noqa: BLE001 - a server that died or hung answers with an error result
            return {"content": [{"type": "text", "text": f"MCP error: {exc}"}], "isError": True}
        return result.model_dump(by_alias=True, exclude_none=True, mode="json")


@dataclass
class McpServer:
    """One configured server and, once connected, its session and tool names."""

    name: str
    config: dict[str, Any]
    status: str = "failed"
    client: ServerSession | None = None
    tools: list[str] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        env = self.config.get("env") or {}
        return {str(key): str(value) for key, value in env.items()} if isinstance(env, Mapping) else {}


def load_mcp_configs(values: list[str]) -> dict[str, dict[str, Any]]:
    """Merge every `--mcp-config` value (a JSON file or a JSON string) into name -> server config.

    Args:
        values: The raw `--mcp-config` values.

    Returns:
        The servers by name, later configs winning.

    Raises:
        ConfigProblem: A file is missing, a value is not JSON, or `mcpServers` is not a mapping.
    """
    servers: dict[str, dict[str, Any]] = {}
    for value in values:
        text = value.strip()
        if text.startswith("{"):
            source = "the --mcp-config JSON string"
        else:
            source = value
            try:
                text = Path(value).read_text(encoding="utf-8")
            except FileNotFoundError:
                raise ConfigProblem(f"MCP config file not found: {value}") from None
            except OSError as exc:
                raise ConfigProblem(f"MCP config file {value} cannot be read: {exc.strerror}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigProblem(f"{source} is not valid JSON: {exc.msg} (line {exc.lineno})") from None
        entries = data.get("mcpServers") if isinstance(data, dict) else None
        if not isinstance(entries, dict) or not all(isinstance(entry, dict) for entry in entries.values()):
            raise ConfigProblem(f"{source}: expected {{\"mcpServers\": {{NAME: {{\"command\": ..., \"args\": [...]}}}}}}")
        servers.update(entries)
    return servers


def rule_matches(rule: str, tool_name: str) -> bool:
    """Whether a permission rule names a tool, as Claude Code matches them.

    `mcp__srv` and `mcp__srv__*` cover every tool of that server, `mcp__srv__tool` one tool,
    and a built-in name (`Bash`) itself; content rules such as `Bash(git *)` never cover a whole tool.
    """
    if "(" in rule:
        return False
    if rule == tool_name:
        return True
    if rule.startswith("mcp__") and tool_name.startswith("mcp__"):
        if rule.endswith("__*"):
            return tool_name.startswith(rule[:-1])
        if rule.count("__") == 1:
            return tool_name.startswith(rule + "__")
    return False


@dataclass
class Permissions:
    """The run's tool permissions: --allowedTools, --disallowedTools, --permission-mode."""

    allowed: list[str]
    disallowed: list[str]
    bypass: bool = False

    @classmethod
    def from_args(cls, args: ParsedArgs) -> Permissions:
        """The permissions a Claude Code command line grants."""
        return cls(
            allowed=split_tool_list(list(args.get("allowedTools", []))),  # type: ignore[arg-type]
            disallowed=split_tool_list(list(args.get("disallowedTools", []))),  # type: ignore[arg-type]
            bypass=args.get("permission-mode") == "bypassPermissions" or args.has("dangerously-skip-permissions"),
        )

    def disallowed_tool(self, name: str) -> bool:
        """A denied tool is removed from the agent's tool list altogether."""
        return any(rule_matches(rule, name) for rule in self.disallowed)

    def granted(self, name: str) -> bool:
        """Whether a call may run without asking (in print mode nobody can be asked)."""
        return self.bypass or any(rule_matches(rule, name) for rule in self.allowed)


@dataclass(frozen=True)
class CallOutcome:
    """What one MCP call came back with: its text, whether it is an error, and why it did not run (if it did not)."""

    text: str
    is_error: bool
    structured: Any = None
    refused: str | None = None  # "no-such-tool" | "permission-denied" | None (the server answered)


def text_of(content: list[Any]) -> str:
    """The text blocks of an MCP result (JSON content blocks) joined by newlines."""
    return "\n".join(str(block.get("text", "")) for block in content if isinstance(block, Mapping) and block.get("type") == "text")


def _file_backed(stream: TextIO) -> TextIO:
    """A stream a child process can inherit: `stream` itself when it has a file descriptor."""
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        # In-memory streams (tests) have no descriptor; the server's stderr goes to ours.
        return sys.__stderr__
    return stream


_SYSTEM_PROMPT_SERIAL = re.compile(r"Use only the Android device with serial (\S+?);")


def serial_from_system_prompt(text: object) -> str | None:
    """The serial the harness's sentence in `--append-system-prompt` names (the agent's config no
    longer carries the server's pinned serial: the server runs behind the harness's relay)."""
    found = _SYSTEM_PROMPT_SERIAL.search(str(text or ""))
    return found.group(1) if found else None


@dataclass
class McpConnection:
    """The servers of --mcp-config, connected as Claude Code connects them, and the run's permissions.

    `client` chooses how: `stdlib` (servers/mcpclient.py, no SDK import, the replay agent's
    choice) or `sdk` (the official MCP SDK's stdio client, agentbench-agent's). The SDK starts
    the server in a session of its own; the harness's post-run step finds it by the run token.
    """

    servers: list[McpServer]
    permissions: Permissions
    stderr: TextIO
    environ: Mapping[str, str]
    program: str
    client: Literal["stdlib", "sdk"] = "stdlib"
    #: The serial the harness's system prompt names (`serial_from_system_prompt`), when it names one.
    device_hint: str | None = None

    async def connect(self, stack: AsyncExitStack, timeout_s: float) -> None:
        """Start and initialize every server; one that fails stays `failed` and the run goes on."""
        for server in self.servers:
            await self._connect_one(server, stack, timeout_s)

    async def _connect_one(self, server: McpServer, stack: AsyncExitStack, timeout_s: float) -> None:
        transport = server.config.get("type", "stdio")
        command = server.config.get("command")
        if transport != "stdio" or not isinstance(command, str):
            self.warn(f"MCP server {server.name!r}: only stdio servers with a 'command' can be started")
            return
        args = [str(arg) for arg in server.config.get("args") or []]
        # Claude Code starts a server with its own whole environment, the config's env on top.
        env = {**self.environ, **server.env}
        if self.client == "sdk":
            await self._connect_sdk(server, stack, command, args, env, timeout_s)
            return
        # The standard library's client: no half second of SDK imports per run, and the server
        # stays in this process group, so stopping the agent's group stops it too.
        try:
            client = await anyio.to_thread.run_sync(lambda: StdioClient(command, args, env=env, errlog=_file_backed(self.stderr)))
        except McpClientError as exc:
            self.warn(f"MCP server {server.name!r} failed to start: {exc}")
            return
        deadline = time.monotonic() + timeout_s

        def handshake() -> list[dict[str, Any]]:
            client.initialize(timeout_s=deadline - time.monotonic())
            return client.list_tools(timeout_s=deadline - time.monotonic())

        try:
            listing = await anyio.to_thread.run_sync(handshake)
        except McpClientError as exc:
            self.warn(f"MCP server {server.name!r} failed to start: {exc}")
            client.close()
            return
        stack.callback(client.close)
        server.client = _StdlibSession(client)
        server.status = "connected"
        server.tools = [tool["name"] for tool in listing]

    async def _connect_sdk(self, server: McpServer, stack: AsyncExitStack, command: str, args: list[str],
                           env: dict[str, str], timeout_s: float) -> None:
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        inner = AsyncExitStack()
        try:
            read, write = await inner.enter_async_context(
                stdio_client(StdioServerParameters(command=command, args=args, env=env), errlog=_file_backed(self.stderr))
            )
            session = await inner.enter_async_context(ClientSession(read, write))
            # The deadline covers the handshake only: a cancel scope around the contexts entered
            # above would end before they do, which anyio refuses.
            with anyio.fail_after(timeout_s):
                await session.initialize()
                listing = await session.list_tools()
        except Exception as exc:  # noqa: BLE001 - a server that cannot start is `failed`, as Claude reports it
            await inner.aclose()
            self.warn(f"MCP server {server.name!r} failed to start: {exc}")
            return
        stack.push_async_callback(inner.aclose)
        server.client = _SdkSession(session)
        server.status = "connected"
        server.tools = [tool.name for tool in listing.tools]

    def warn(self, message: str) -> None:
        """One line on stderr, prefixed with the program name."""
        self.stderr.write(f"{self.program}: {message}\n")
        self.stderr.flush()

    def statuses(self) -> list[dict[str, str]]:
        """The init event's `mcp_servers`."""
        return [{"name": server.name, "status": server.status} for server in self.servers]

    def tool_names(self) -> list[str]:
        """The init event's `tools`: every connected server's tools that are not disallowed."""
        names = [f"mcp__{server.name}__{tool}" for server in self.servers for tool in server.tools]
        return [name for name in names if not self.permissions.disallowed_tool(name)]

    def resolve(self, tool: str) -> tuple[str, McpServer | None]:
        """A tool name (bare or `mcp__<server>__<tool>`) -> its full MCP name and the server that has it."""
        short = short_tool_name(tool)
        if tool.startswith("mcp__"):
            server_name = tool[len("mcp__"):].rsplit("__", 1)[0]
            for server in self.servers:
                if server.name == server_name:
                    return tool, server
            if len(self.servers) != 1:
                return tool, None
            # A transcript recorded against another server name (mcp__auto-mobile__observe).
        for server in self.servers:
            if short in server.tools:
                return f"mcp__{server.name}__{short}", server
        if len(self.servers) == 1:
            return f"mcp__{self.servers[0].name}__{short}", self.servers[0]
        return tool, None

    async def pinned_device(self, listing_tool: str | None = "listDevices") -> str | None:
        """The device serial the server is pinned to (its config env), else the first device its listing tool shows."""
        for server in self.servers:
            if server.env.get(DEVICE_SERIAL_VARIABLE):
                return server.env[DEVICE_SERIAL_VARIABLE]
        if self.environ.get(DEVICE_SERIAL_VARIABLE):
            return self.environ[DEVICE_SERIAL_VARIABLE]
        if self.device_hint:
            return self.device_hint
        for server in self.servers:
            if server.client is not None and listing_tool and listing_tool in server.tools:
                result = await server.client.call_tool(listing_tool, {})
                if not result.get("isError"):
                    return device_from_listing(result.get("structuredContent"), text_of(result.get("content") or []))
        return None

    async def call(self, writer: StreamWriter, tool: str, arguments: dict[str, Any]) -> tuple[str, CallOutcome]:
        """Call a tool in the current turn, as Claude Code would: tool_use, permission check, tool_result.

        Args:
            writer: Where the tool_use and tool_result events go.
            tool: A bare or full tool name.
            arguments: The call's arguments.

        Returns:
            The full tool name and what came back (a refusal is an error outcome with `refused` set).
        """
        name, server = self.resolve(tool)
        tool_use_id = writer.tool_use(name, arguments, server=server.name if server and server.client else None)
        available = server is not None and server.client is not None and short_tool_name(name) in server.tools
        if self.permissions.disallowed_tool(name) or not available:
            writer.no_such_tool(tool_use_id, name)
            return name, CallOutcome(f"No such tool available: {name}", True, refused="no-such-tool")
        if not self.permissions.granted(name):
            writer.deny(tool_use_id, name, arguments)
            return name, CallOutcome(f"permission to use {name} was not granted (--allowedTools)", True, refused="permission-denied")
        assert server is not None and server.client is not None
        result = await server.client.call_tool(short_tool_name(name), arguments)
        blocks = [block for block in result.get("content") or [] if isinstance(block, dict)]
        is_error, structured = bool(result.get("isError")), result.get("structuredContent")
        content, tool_use_result = mcp_tool_result_shape(blocks, structured, is_error)
        writer.tool_result(tool_use_id, content, tool_use_result, is_error=is_error)
        return name, CallOutcome(text_of(blocks), is_error, structured)


def connect_timeout(environ: Mapping[str, str]) -> float:
    """Seconds a server may take to start: `MCP_CONNECT_TIMEOUT_MS`, as Claude Code reads it."""
    try:
        return float(environ["MCP_CONNECT_TIMEOUT_MS"]) / 1000
    except (KeyError, ValueError):
        return DEFAULT_CONNECT_TIMEOUT_S


def device_from_listing(structured: Any, text: str) -> str | None:
    """The first device serial in a device-listing result (structured content or text)."""
    candidates: list[Any] = []
    if isinstance(structured, Mapping):
        candidates = list(structured.get("devices") or structured.get("result") or [])
        if isinstance(structured.get("result"), str):
            text = structured["result"]
            candidates = []
    for item in candidates:
        if isinstance(item, str):
            return item
        if isinstance(item, Mapping):
            for key in ("serial", "deviceId", "id", "name"):
                if isinstance(item.get(key), str):
                    return item[key]
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        data = None
    if data is not None and data != structured and isinstance(data, (Mapping, list)):
        return device_from_listing(data if isinstance(data, Mapping) else {"devices": data}, "")
    match = re.search(r"\b(emulator-\d+|[\w.-]+:\d+|[A-Za-z0-9]{6,})\b", text or "")
    return match.group(1) if match else None
