"""agentbench-mcp: the built-in Android MCP stdio server (AutoMobile tool names) on the official MCP SDK."""

from __future__ import annotations

from pytest_agentbench.mcp_server.config import ServerConfig
from pytest_agentbench.mcp_server.server import SERVER_NAME, build_server

__all__ = ["SERVER_NAME", "ServerConfig", "build_server"]
