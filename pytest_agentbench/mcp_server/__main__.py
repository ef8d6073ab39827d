"""Process environment -> a running agentbench-mcp stdio server that logs to AGENTBENCH_LOG_DIR.

`python -m pytest_agentbench.mcp_server` (the agentbench profile's command) first offers the run
to the session's warm-start server (pytest_agentbench.warm), so the MCP SDK is imported here
only when there is none; the server itself is `main`.
"""

from __future__ import annotations

import logging
import resource
import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_agentbench.mcp_server.config import ServerConfig

LOG_FILE_NAME = "agentbench-mcp.log"


def _configure_logging(config: ServerConfig) -> None:
    """Log to a file in AGENTBENCH_LOG_DIR; stdout is the protocol channel and must stay clean."""
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    if config.log_dir is None:
        root.addHandler(logging.StreamHandler(sys.stderr))
        return
    config.log_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(config.log_dir / LOG_FILE_NAME, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)


def _exit_on_sigterm(signum: int, _frame: FrameType | None) -> None:
    # The harness stops servers by process group with SIGTERM; unwinding through the
    # server's lifespan is what releases the device claims.
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server on stdio until the client closes it.

    Args:
        argv: Command-line arguments; only `--help` is understood (settings come from the environment).

    Returns:
        The exit status.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["-h"], ["--help"]):
        print(
            "usage: agentbench-mcp\n\nThe built-in Android MCP stdio server. Settings come from the environment:\n"
            "  AGENTBENCH_DEVICE_SERIAL      serve only this serial\n"
            "  AGENTBENCH_LOG_DIR            write agentbench-mcp.log here\n"
            "  AGENTBENCH_DATA_DIR, AGENTBENCH_DB_DIR, AGENTBENCH_SOCKET_DIR   private state\n"
            "  AGENTBENCH_MCP_INSTRUCTIONS=1 send the MCP instructions block\n"
            "  AGENTBENCH_SCREENSHOTS=1      save a screenshot after each device call under AGENTBENCH_DATA_DIR/screenshots\n"
            "  AUTOMOBILE_ADB_SERVER_COORDINATION_DIR  device claim root\n"
            "  ADB_SERVER_SOCKET, ANDROID_ADB_SERVER_ADDRESS, ANDROID_ADB_SERVER_PORT  adb server"
        )
        return 0
    if args:
        print(f"agentbench-mcp: unexpected arguments {' '.join(args)!r}; configure it through the environment "
              "(see --help)", file=sys.stderr)
        return 2
    from pytest_agentbench.mcp_server.config import ServerConfig
    from pytest_agentbench.mcp_server.server import build_server

    config = ServerConfig.from_environ()
    _configure_logging(config)
    for directory in (config.data_dir, config.db_dir, config.socket_dir):
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    server = build_server(config)
    logging.getLogger("agentbench.mcp").info(
        "agentbench-mcp starting: pinned=%s adb=%s", config.pinned_serial, config.endpoint
    )
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        return 130
    finally:
        server.hub.release_all()  # type: ignore[attr-defined]
        _log_cpu()
    return 0


def _log_cpu() -> None:
    # Our own CPU per run is a budget (tests/perf/scale_out.py reads this line).
    usage = resource.getrusage(resource.RUSAGE_SELF)
    logging.getLogger("agentbench.mcp").info(
        "agentbench-mcp exiting: cpu %.3fs (user %.3f, sys %.3f)", usage.ru_utime + usage.ru_stime, usage.ru_utime, usage.ru_stime
    )


if __name__ == "__main__":
    from pytest_agentbench.warm.entry import mcp

    sys.exit(mcp())
