"""The built-in MCP server's environment (AGENTBENCH_* and adb endpoint variables) -> ServerConfig."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.device.adb import AdbEndpoint
from pytest_agentbench.servers.screenshots import SCREENSHOTS_ENV


@dataclass(frozen=True)
class ServerConfig:
    """What the `agentbench` server profile tells the server through its environment.

    Attributes:
        pinned_serial: The only serial this server may touch, or None to serve any online device.
        data_dir: Private scratch space (None when not given).
        log_dir: Where the server writes its log file (None: no log file).
        db_dir: Private database directory (unused by this server, created for parity).
        socket_dir: Private socket directory; the claim names a socket path inside it.
        instructions: Whether the MCP `instructions` block is sent (`AGENTBENCH_MCP_INSTRUCTIONS=1`).
        claim_root: The claim root (`AUTOMOBILE_ADB_SERVER_COORDINATION_DIR`), None for the default.
        endpoint: The adb server to talk to.
        screenshots: Save a screenshot after each device call into `data_dir/screenshots`
            (`AGENTBENCH_SCREENSHOTS=1`; the harness sets it only for `--agentbench-html`).
    """

    pinned_serial: str | None
    data_dir: Path | None
    log_dir: Path | None
    db_dir: Path | None
    socket_dir: Path | None
    instructions: bool
    claim_root: Path | None
    endpoint: AdbEndpoint
    screenshots: bool = False

    @classmethod
    def from_environ(cls, env: Mapping[str, str] | None = None) -> ServerConfig:
        """Read the server's settings from an environment.

        Args:
            env: The environment; `os.environ` when None.

        Returns:
            The settings; empty variables count as unset.
        """
        env = os.environ if env is None else env

        def path(name: str) -> Path | None:
            value = env.get(name, "").strip()
            return Path(value) if value else None

        claim_root = path("AUTOMOBILE_ADB_SERVER_COORDINATION_DIR") or path("AUTO_MOBILE_ADB_SERVER_COORDINATION_DIR")
        return cls(
            pinned_serial=env.get("AGENTBENCH_DEVICE_SERIAL", "").strip() or None,
            data_dir=path("AGENTBENCH_DATA_DIR"),
            log_dir=path("AGENTBENCH_LOG_DIR"),
            db_dir=path("AGENTBENCH_DB_DIR"),
            socket_dir=path("AGENTBENCH_SOCKET_DIR"),
            instructions=env.get("AGENTBENCH_MCP_INSTRUCTIONS", "").strip() == "1",
            claim_root=claim_root,
            endpoint=AdbEndpoint.from_environ(env),
            screenshots=env.get(SCREENSHOTS_ENV, "").strip() == "1",
        )

    def socket_path(self) -> str:
        """The socket path recorded in this server's device claims (informational, as AutoMobile's)."""
        base = self.socket_dir if self.socket_dir is not None else Path(os.environ.get("TMPDIR", "/tmp"))
        return str(base / f"agentbench-mcp-{os.getpid()}.sock")
