"""The agent's device actions -> calls of the MCP server's own tools (by the profile's tool map), each one written to the stream.

The agent never touches adb: every look and every tap is a real `tools/call` on the server in
`--mcp-config`, so the transcript shows `mcp__<server>__<tool>` calls the audit counts as device use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_agentbench.agents.mcp_client import DEVICE_SERIAL_VARIABLE, McpConnection, device_from_listing
from pytest_agentbench.agents.model.ui_tree import TreeError, UiTree, parse_observation
from pytest_agentbench.agents.stream import StreamWriter
from pytest_agentbench.servers.agent_tools import AgentToolMap


class DeviceCallFailed(Exception):
    """A server tool answered with an error (or refused the call); the message is a sentence for the model."""


class ServerGone(Exception):
    """The MCP server stopped answering (the transport failed, not a tool): the episode cannot go on."""


@dataclass
class McpDevice:
    """One phone as the agent reaches it through one MCP server.

    Attributes:
        connection: The connected servers and the run's permissions.
        writer: Where each call's tool_use and tool_result go.
        tools: The profile's tool map.
        device: The serial passed as `{device}` (empty until `resolve`: the server's pinned phone).
        environ: The agent's environment (a pinned serial may be there).
    """

    connection: McpConnection
    writer: StreamWriter
    tools: AgentToolMap
    device: str = ""
    environ: Mapping[str, str] = field(default_factory=dict)

    async def resolve(self) -> str:
        """Find the serial to act on (see `resolve_device`) unless one was given; returns it."""
        if not self.device:
            self.device = await resolve_device(self.connection, self.writer, self.tools, self.environ)
        return self.device

    async def call(self, action: str, **values: Any) -> str:
        """Perform one action of the tool map (`tap`, `back`, ...) with its placeholder values.

        Returns:
            The server's answer text.

        Raises:
            DeviceCallFailed: The server answered with an error or the call was refused.
            ServerGone: The server's transport failed.
        """
        template = self.tools.actions[action]
        arguments = template.fill({"device": self.device, **values})
        try:
            _, outcome = await self.connection.call(self.writer, template.tool, arguments)
        except Exception as exc:  # noqa: BLE001 - a dead server or broken pipe ends the episode, whatever the class
            raise ServerGone(f"the MCP server stopped answering during {template.tool}: {exc!r}") from exc
        if outcome.is_error:
            raise DeviceCallFailed(f"{template.tool} failed: {outcome.text.strip() or 'the server gave no reason'}")
        return outcome.text

    async def observe(self) -> UiTree:
        """Look at the screen through the server's observe tool.

        Raises:
            DeviceCallFailed: The tool failed, or its answer is not a screen of the profile's format.
            ServerGone: The server's transport failed.
        """
        text = await self.call("observe")
        try:
            return parse_observation(text, self.tools.observe_format)
        except TreeError as exc:
            raise DeviceCallFailed(str(exc)) from exc


async def resolve_device(connection: McpConnection, writer: StreamWriter, tools: AgentToolMap, environ: Mapping[str, str]) -> str:
    """The serial to pass as `{device}`: the pinned one, else the first the server lists, else empty.

    The built-in server is pinned by the harness (`AGENTBENCH_DEVICE_SERIAL` in its config env);
    for a server that cannot be pinned the harness requires exactly one online device, which the
    profile's listing tool then names (that call is in the transcript like any other).
    """
    for server in connection.servers:
        if server.env.get(DEVICE_SERIAL_VARIABLE):
            return server.env[DEVICE_SERIAL_VARIABLE]
    if environ.get(DEVICE_SERIAL_VARIABLE):
        return environ[DEVICE_SERIAL_VARIABLE]
    if not tools.list_devices:
        # A pinned server: the harness's system prompt names its serial (the server runs behind
        # the harness's relay, so its config env is not the agent's to read).
        return connection.device_hint or ""
    try:
        _, outcome = await connection.call(writer, tools.list_devices, {})
    except Exception as exc:  # noqa: BLE001 - as for any call: a dead server ends the episode
        raise ServerGone(f"the MCP server stopped answering during {tools.list_devices}: {exc!r}") from exc
    if outcome.is_error:
        raise DeviceCallFailed(f"{tools.list_devices} failed: {outcome.text.strip()}")
    return device_from_listing(outcome.structured, outcome.text) or ""
