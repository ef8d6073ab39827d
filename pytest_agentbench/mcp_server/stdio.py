"""A server builder + the process environment -> a stdio MCP server process: help, logging to AGENTBENCH_LOG_DIR, SIGTERM, claims released.

The start-up both of the project's device servers share (`agentbench-mcp`, `agentbench-adb-shell`).
Only the standard library is imported at module level, so `python -m pytest_agentbench.mcp_server`
can still hand the run to a warm-start server before the MCP SDK is imported.
"""

from __future__ import annotations

import logging
import resource
import signal
import sys
from collections.abc import Callable, Sequence
from contextlib import asynccontextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_agentbench.mcp_server.config import ServerConfig
    from pytest_agentbench.mcp_server.hub import DeviceHub


def configure_logging(config: ServerConfig, log_file_name: str) -> None:
    """Log to a file in AGENTBENCH_LOG_DIR (stderr without one); stdout is the protocol channel and must stay clean."""
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    if config.log_dir is None:
        root.addHandler(logging.StreamHandler(sys.stderr))
        return
    config.log_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(config.log_dir / log_file_name, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)


def _exit_on_sigterm(signum: int, _frame: FrameType | None) -> None:
    # The harness stops servers by process group with SIGTERM; unwinding through the
    # server's lifespan is what releases the device claims.
    raise SystemExit(128 + signum)


def hub_lifespan(hub: DeviceHub) -> Callable[[Any], Any]:
    """The server lifespan that releases the hub's device claims when the stdio session ends."""

    @asynccontextmanager
    async def lifespan(_server: Any) -> Any:
        try:
            yield {}
        finally:
            hub.release_all()

    return lifespan


def serve_stdio(
    argv: Sequence[str] | None,
    *,
    program: str,
    usage: str,
    log_file_name: str,
    build: Callable[[ServerConfig], Any],
    make_dirs: Callable[[ServerConfig], Sequence[Any]] = lambda config: (config.socket_dir,),
    log_cpu: bool = False,
) -> int:
    """Run a server on stdio until the client closes it.

    Args:
        argv: Command-line arguments; only `--help` is understood (settings come from the environment).
        program: The console script's name, for messages.
        usage: The `--help` text.
        log_file_name: The log file under AGENTBENCH_LOG_DIR.
        build: Builds the server from the environment's settings (`build_server`).
        make_dirs: The private directories to create before the server starts.
        log_cpu: Log the process's CPU time at exit (a per-run budget, read by tests/perf/scale_out.py).

    Returns:
        The exit status (0, 2 for unexpected arguments, 130 after Ctrl+C).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["-h"], ["--help"]):
        print(usage)
        return 0
    if args:
        print(f"{program}: unexpected arguments {' '.join(args)!r}; configure it through the environment (see --help)",
              file=sys.stderr)
        return 2
    from pytest_agentbench.mcp_server.config import ServerConfig

    config = ServerConfig.from_environ()
    configure_logging(config, log_file_name)
    for directory in make_dirs(config):
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    server = build(config)
    log = logging.getLogger(f"agentbench.{program}")
    log.info("%s starting: pinned=%s adb=%s", program, config.pinned_serial, config.endpoint)
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        return 130
    finally:
        server.hub.release_all()
        if log_cpu:
            usage_now = resource.getrusage(resource.RUSAGE_SELF)
            log.info("%s exiting: cpu %.3fs (user %.3f, sys %.3f)", program, usage_now.ru_utime + usage_now.ru_stime,
                     usage_now.ru_utime, usage_now.ru_stime)
    return 0
