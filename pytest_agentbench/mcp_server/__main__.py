"""Process environment -> a running agentbench-mcp stdio server that logs to AGENTBENCH_LOG_DIR.

`python -m pytest_agentbench.mcp_server` (the agentbench profile's command) first offers the run
to the session's warm-start server (pytest_agentbench.warm), so the MCP SDK is imported here
only when there is none; the server itself is `main`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_agentbench.mcp_server.stdio import serve_stdio

if TYPE_CHECKING:
    from pytest_agentbench.mcp_server.config import ServerConfig

LOG_FILE_NAME = "agentbench-mcp.log"
USAGE = (
    "usage: agentbench-mcp\n\nThe built-in Android MCP stdio server. Settings come from the environment:\n"
    "  AGENTBENCH_DEVICE_SERIAL      serve only this serial\n"
    "  AGENTBENCH_LOG_DIR            write agentbench-mcp.log here\n"
    "  AGENTBENCH_DATA_DIR, AGENTBENCH_DB_DIR, AGENTBENCH_SOCKET_DIR   private state\n"
    "  AGENTBENCH_MCP_INSTRUCTIONS=1 send the MCP instructions block\n"
    "  AGENTBENCH_SCREENSHOTS=1      save a screenshot after each device call under AGENTBENCH_DATA_DIR/screenshots\n"
    "  AUTOMOBILE_ADB_SERVER_COORDINATION_DIR  device claim root\n"
    "  ADB_SERVER_SOCKET, ANDROID_ADB_SERVER_ADDRESS, ANDROID_ADB_SERVER_PORT  adb server"
)


def _build(config: ServerConfig) -> Any:
    # Imported only now: the MCP SDK is what a warm start saves.
    from pytest_agentbench.mcp_server.server import build_server

    return build_server(config)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the built-in server on stdio until the client closes it (settings come from the environment)."""
    return serve_stdio(
        argv, program="agentbench-mcp", usage=USAGE, log_file_name=LOG_FILE_NAME, build=_build,
        make_dirs=lambda config: (config.data_dir, config.db_dir, config.socket_dir), log_cpu=True,
    )


if __name__ == "__main__":
    from pytest_agentbench.warm.entry import mcp

    sys.exit(mcp())
