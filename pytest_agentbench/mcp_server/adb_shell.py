"""agentbench-adb-shell: an MCP stdio server with one tool, `shell`, that runs `adb shell COMMAND` on the pinned phone.

Raw adb, benchmarked as just another server (the `adb-shell` profile). This is the one place an
agent's own command line reaches a device shell, which is the tool's whole point: it is the
agent's shell by definition, so `verify.noShell` counts every call to it. The command goes to the
device as `sh -c COMMAND`, one quoted word, exactly what `adb shell COMMAND` asks the device to run.
The server is pinned and claims the phone like the built-in one (`AGENTBENCH_DEVICE_SERIAL`,
`AUTOMOBILE_ADB_SERVER_COORDINATION_DIR`, the adb endpoint variables).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Annotated

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from pytest_agentbench import __version__
from pytest_agentbench.device.adb import Adb
from pytest_agentbench.device.shellscript import sh
from pytest_agentbench.mcp_server.config import ServerConfig
from pytest_agentbench.mcp_server.driver import PhoneDriver
from pytest_agentbench.mcp_server.hub import DeviceHub
from pytest_agentbench.mcp_server.stdio import hub_lifespan, serve_stdio

SERVER_NAME = "adb-shell"
LOG_FILE_NAME = "agentbench-adb-shell.log"
COMMAND_TIMEOUT_S = 120.0
_OUTPUT_CHARS = 20_000
logger = logging.getLogger("agentbench.adb-shell")


def build_server(config: ServerConfig | None = None, *, adb: Adb | None = None) -> MCPServer:
    """Build the adb-shell server.

    Args:
        config: Settings; read from the environment when None.
        adb: The device-layer client; one for `config.endpoint` when None.

    Returns:
        The server, ready for `run("stdio")` or an in-process `mcp.Client`.
    """
    config = config if config is not None else ServerConfig.from_environ()
    hub = DeviceHub(config, adb if adb is not None else Adb(config.endpoint))

    server = MCPServer(SERVER_NAME, version=__version__, lifespan=hub_lifespan(hub))
    server.hub = hub  # type: ignore[attr-defined]

    async def shell(
        command: Annotated[str, Field(description="A command line for the phone's shell, as after `adb shell`")],
        device: Annotated[str, Field(description="Serial of the phone; empty means the pinned phone")] = "",
    ) -> str:
        """Run a command in the Android phone's shell (adb shell) and return its output and exit status."""
        if not command.strip():
            raise ToolError("shell needs a command, e.g. `dumpsys power`")

        def run(driver: PhoneDriver) -> tuple[str, int]:
            result = hub.adb.shell(driver.serial, sh("sh", "-c", command), check=False, timeout_s=COMMAND_TIMEOUT_S)
            return result.stdout, result.exit_code

        output, status = await anyio.to_thread.run_sync(hub.call, device, run)
        logger.info("shell %r -> exit %s", command, status)
        shown = output if len(output) <= _OUTPUT_CHARS else output[:_OUTPUT_CHARS] + "\n... (output cut)"
        if status != 0:
            raise ToolError(f"{shown.rstrip()}\n(exit {status})".lstrip())
        return shown or "(no output)"

    server.add_tool(shell, name="shell", structured_output=False)
    return server


USAGE = ("usage: agentbench-adb-shell  (or python -m pytest_agentbench.mcp_server.adb_shell)\n\nOne MCP tool, shell, that runs "
         "`adb shell COMMAND` on AGENTBENCH_DEVICE_SERIAL (logs to AGENTBENCH_LOG_DIR).")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server on stdio until the client closes it (settings come from the environment)."""
    return serve_stdio(argv, program="agentbench-adb-shell", usage=USAGE, log_file_name=LOG_FILE_NAME, build=build_server)


if __name__ == "__main__":
    sys.exit(main())
