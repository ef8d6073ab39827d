"""Tests for agents/mcp_client.py: both MCP clients (the standard library's and the official SDK's) connect the same server the same way."""

from __future__ import annotations

import io
import sys
from contextlib import AsyncExitStack

import anyio
import pytest

from pytest_agentbench.agents.mcp_client import McpConnection, McpServer, Permissions

SERVER = {"type": "stdio", "command": sys.executable, "args": ["-m", "pytest_agentbench.mcp_server"],
          "env": {"ANDROID_ADB_SERVER_PORT": "1", "AGENTBENCH_DEVICE_SERIAL": "emulator-5554"}}


def _connect(client: str, tmp_path) -> tuple[str, list[str], dict]:
    async def body() -> tuple[str, list[str], dict]:
        connection = McpConnection(
            servers=[McpServer("agentbench", {**SERVER, "env": {**SERVER["env"], "AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": str(tmp_path)}})],
            permissions=Permissions(allowed=["mcp__agentbench"], disallowed=[]), stderr=io.StringIO(),
            environ={"PATH": "/usr/bin:/bin"}, program="test", client=client,  # type: ignore[arg-type]
        )
        async with AsyncExitStack() as stack:
            await connection.connect(stack, timeout_s=60)
            (server,) = connection.servers
            # A device the server is not pinned to: refused by the server, answered as an error result.
            result = await server.client.call_tool("observe", {"device": "not-this-one"})
            return server.status, sorted(server.tools), result

    return anyio.run(body)


@pytest.mark.parametrize("client", ["stdlib", "sdk"])
def test_both_clients_connect_list_the_tools_and_return_error_results(client: str, tmp_path) -> None:
    status, tools, result = _connect(client, tmp_path)
    assert status == "connected"
    assert {"observe", "tapOn", "listDevices"} <= set(tools)
    assert result["isError"] is True
    assert any("not-this-one" in block.get("text", "") for block in result["content"])


def test_a_server_that_cannot_start_is_failed_with_either_client(tmp_path) -> None:
    async def body(client: str) -> str:
        connection = McpConnection(servers=[McpServer("gone", {"type": "stdio", "command": str(tmp_path / "no-such-server")})],
                                   permissions=Permissions(allowed=[], disallowed=[]), stderr=io.StringIO(), environ={},
                                   program="test", client=client)  # type: ignore[arg-type]
        async with AsyncExitStack() as stack:
            await connection.connect(stack, timeout_s=10)
        return connection.servers[0].status

    assert [anyio.run(body, client) for client in ("stdlib", "sdk")] == ["failed", "failed"]
