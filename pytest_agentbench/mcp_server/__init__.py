"""agentbench-mcp: the built-in Android MCP stdio server (AutoMobile tool names) on the official MCP SDK."""

from __future__ import annotations

from typing import Any

__all__ = ["SERVER_NAME", "ServerConfig", "build_server"]


def __getattr__(name: str) -> Any:
    # Lazy, so `python -m pytest_agentbench.mcp_server` can hand off to a warm start before the
    # MCP SDK is imported (see __main__.py).
    if name == "ServerConfig":
        from pytest_agentbench.mcp_server.config import ServerConfig

        return ServerConfig
    if name in ("SERVER_NAME", "build_server"):
        from pytest_agentbench.mcp_server import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
