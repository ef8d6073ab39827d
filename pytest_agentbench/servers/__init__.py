"""MCP server profile names + project settings -> ServerProfile: command, private state, scrub rules, build files."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from pytest_agentbench.errors import ConfigError
from pytest_agentbench.servers.agent_tools import AGENTBENCH_TOOLS, MOBILE_MCP_TOOLS, AgentToolMap

PACKAGE_ROOT = Path(__file__).resolve().parent.parent

# AutoMobile keeps device claims here; both spellings are kept through the scrub so a resident
# daemon's claims are still honoured by the run's own server.
COORDINATION_DIR_NAMES = ("AUTOMOBILE_ADB_SERVER_COORDINATION_DIR", "AUTO_MOBILE_ADB_SERVER_COORDINATION_DIR")


#: Set in every MCP server's environment to a random token per run: whatever the server starts
#: inherits it, so the run's own leftover daemons are found after the agent's group is gone,
#: even when they detached into a process group of their own.
RUN_TOKEN_ENV = "AGENTBENCH_RUN_TOKEN"


@dataclass(frozen=True)
class DaemonSpec:
    """How a run's private daemon is told apart from an interloper and stopped after the agent.

    Attributes:
        socket_dir_env: The private-state variable of the directory its sockets live in; a live
            device claim whose socketPath lies there belongs to this run.
        stop_command: argv run with the server's environment before anything is signalled
            (the server's own clean stop, if it has one).
    """

    socket_dir_env: str | None = None
    stop_command: tuple[str, ...] = ()


def _frozen(mapping: Mapping[str, str] | None = None) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class ServerProfile:
    """One MCP server the agent can be given: how to start it and how to keep its runs apart.

    Attributes:
        name: The MCP server name in the generated config; tools are ``mcp__<name>__<tool>``.
        command: argv that starts the server over stdio.
        private_state: Environment variable -> subdirectory of the run directory, fresh per run.
        scrub: Inherited variables removed from the agent's (and so the server's) environment:
            a trailing ``*`` makes an entry a prefix, otherwise it is an exact name.
        keep: Names kept even though ``scrub`` matches them.
        build_files: Glob patterns (absolute) of the files that make up the server's build, for
            the ``serverBuild`` fingerprint.
        pinnable: Whether the server can be restricted to one device serial.
        pin_env: The variable that pins the server to a serial (pinnable servers only).
        instructions_env: The variable set to ``1`` by ``--server-instructions``, if the server
            has an instructions switch.
        screenshots_env: The variable set to ``1`` when the HTML report wants a screenshot
            after each device call (servers/screenshots.py), if the server can take them.
        fixed_env: Variables always set in the server's environment.
        stale_build: Says why the server's build is older than its sources (None when it is
            not), for servers that run from a build; a stale build is refused, never measured.
        daemon: How the run's private daemon is found and stopped after the agent exits.
        agent_tools: Which of the server's tools ``agentbench-agent`` observes and acts with
            (None: the model agent cannot drive this server).
        shell_tools: Short names of the server's tools that run commands (``verify.noShell``
            counts them besides those whose schema takes a command, see ``probe.is_shell_schema``).
    """

    name: str
    command: tuple[str, ...]
    private_state: Mapping[str, str] = field(default_factory=_frozen)
    scrub: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    build_files: tuple[str, ...] = ()
    pinnable: bool = False
    pin_env: str | None = None
    instructions_env: str | None = None
    screenshots_env: str | None = None
    fixed_env: Mapping[str, str] = field(default_factory=_frozen)
    stale_build: Callable[[], str | None] | None = None
    daemon: DaemonSpec = field(default_factory=DaemonSpec)
    agent_tools: AgentToolMap | None = None
    shell_tools: tuple[str, ...] = ()

    def scrubs(self, variable: str) -> bool:
        """Tell whether an inherited variable must be removed before the run.

        Args:
            variable: An environment variable name.

        Returns:
            True when a ``scrub`` entry matches the name and ``keep`` does not list it.
        """
        if variable in self.keep:
            return False
        for entry in self.scrub:
            if entry.endswith("*"):
                if variable.startswith(entry[:-1]):
                    return True
            elif variable == entry:
                return True
        return False

    def private_dirs(self, run_dir: Path) -> dict[str, Path]:
        """Map each private-state variable to its absolute directory inside a run directory.

        Args:
            run_dir: The run directory (made absolute here).

        Returns:
            Variable name -> ``run_dir / subdirectory``.
        """
        base = Path(run_dir).absolute()
        return {variable: base / subdir for variable, subdir in self.private_state.items()}


def agentbench_profile() -> ServerProfile:
    """The project's own Android MCP server (``pytest_agentbench.mcp_server``), pinned to one serial."""
    return ServerProfile(
        name="agentbench",
        command=(sys.executable, "-m", "pytest_agentbench.mcp_server"),
        private_state=_frozen(
            {
                "AGENTBENCH_DATA_DIR": "data",
                "AGENTBENCH_LOG_DIR": "logs",
                "AGENTBENCH_DB_DIR": "db",
                "AGENTBENCH_SOCKET_DIR": "sock",
            }
        ),
        # An inherited serial, state dir or instructions switch would point the server at another
        # phone or another run's state, or turn instructions on without --server-instructions.
        scrub=(
            "AGENTBENCH_DEVICE_SERIAL",
            "AGENTBENCH_DATA_DIR",
            "AGENTBENCH_LOG_DIR",
            "AGENTBENCH_DB_DIR",
            "AGENTBENCH_SOCKET_DIR",
            "AGENTBENCH_MCP_INSTRUCTIONS",
            "AGENTBENCH_SCREENSHOTS",
        ),
        keep=(),
        build_files=(str(PACKAGE_ROOT / "**" / "*.py"), str(PACKAGE_ROOT / "schema" / "*.json")),
        pinnable=True,
        pin_env="AGENTBENCH_DEVICE_SERIAL",
        instructions_env="AGENTBENCH_MCP_INSTRUCTIONS",
        screenshots_env="AGENTBENCH_SCREENSHOTS",
        daemon=DaemonSpec(socket_dir_env="AGENTBENCH_SOCKET_DIR"),
        agent_tools=AGENTBENCH_TOOLS,
    )


def adb_shell_profile() -> ServerProfile:
    """Raw adb as an MCP server (``pytest_agentbench.mcp_server.adb_shell``): one `shell` tool on the pinned phone."""
    return ServerProfile(
        name="adb-shell",
        command=(sys.executable, "-m", "pytest_agentbench.mcp_server.adb_shell"),
        private_state=_frozen({"AGENTBENCH_LOG_DIR": "logs", "AGENTBENCH_SOCKET_DIR": "sock"}),
        scrub=("AGENTBENCH_DEVICE_SERIAL", "AGENTBENCH_DATA_DIR", "AGENTBENCH_LOG_DIR", "AGENTBENCH_DB_DIR",
               "AGENTBENCH_SOCKET_DIR", "AGENTBENCH_MCP_INSTRUCTIONS"),
        build_files=(str(PACKAGE_ROOT / "mcp_server" / "*.py"), str(PACKAGE_ROOT / "device" / "*.py")),
        pinnable=True,
        pin_env="AGENTBENCH_DEVICE_SERIAL",
        daemon=DaemonSpec(socket_dir_env="AGENTBENCH_SOCKET_DIR"),
        shell_tools=("shell",),
    )


AUTOMOBILE_BUILD_COMMAND = "bun run build"


def automobile_stale_build(checkout: Path) -> str | None:
    """Why an AutoMobile checkout's `dist/src/index.js` cannot be benchmarked, or None.

    The device-use check classifies tools from the server's own listing while the run executes
    the build, so a build older than any file in `src/` or `schemas/tool-definitions.json` would
    measure code that is not the checkout's (seed 000).

    Args:
        checkout: The AutoMobile repository checkout.

    Returns:
        A sentence naming the newest source file and the build command, or None when the build
        is newer than every source (or there are no sources to compare with).
    """
    checkout = Path(checkout)
    index = checkout / "dist" / "src" / "index.js"
    sources = [path for path in (checkout / "src").rglob("*") if path.is_file()] if (checkout / "src").is_dir() else []
    schema = checkout / "schemas" / "tool-definitions.json"
    if schema.is_file():
        sources.append(schema)
    if not sources:
        return None
    newest = max(sources, key=lambda path: path.stat().st_mtime)
    if not index.is_file():
        return (f"the AutoMobile checkout {checkout} is not built ({index} is missing); "
                f"run `{AUTOMOBILE_BUILD_COMMAND}` in {checkout} first")
    if newest.stat().st_mtime > index.stat().st_mtime:
        return (f"the AutoMobile build {index} is older than {newest.relative_to(checkout)}; "
                f"run `{AUTOMOBILE_BUILD_COMMAND}` in {checkout} so the run measures the checkout's code")
    return None


def auto_mobile_profile(checkout: Path) -> ServerProfile:
    """AutoMobile's MCP server run from a built checkout (``node dist/src/index.js``).

    Args:
        checkout: The AutoMobile repository checkout (absolute or relative to the rootdir).
    """
    checkout = Path(checkout).absolute()
    return ServerProfile(
        name="auto-mobile",
        command=("node", str(checkout / "dist" / "src" / "index.js")),
        private_state=_frozen(
            {
                "AUTOMOBILE_AUX_SOCKET_DIR": "sock",
                "AUTOMOBILE_DB_DIR": "db",
                "AUTOMOBILE_DATA_DIR": "data",
                "AUTOMOBILE_LOG_DIR": "logs",
            }
        ),
        # A state override such as AUTOMOBILE_DB_PATH would beat the run's values, and
        # AUTOMOBILE_DISABLED_TOOLS would quietly change the toolset; NODE_ENV=test arms the
        # server's test-only guards.
        scrub=("AUTOMOBILE_*", "AUTO_MOBILE_*", "NODE_ENV"),
        keep=COORDINATION_DIR_NAMES,
        build_files=(
            str(checkout / "dist" / "**" / "*"),
            str(checkout / "schemas" / "tool-definitions.json"),
            str(checkout / "bun.lock"),
            str(checkout / "package.json"),
        ),
        pinnable=False,
        stale_build=lambda: automobile_stale_build(checkout),
        # AutoMobile's daemon is a separate process by design; its claims name a socket in the
        # run's private socket directory.
        daemon=DaemonSpec(socket_dir_env="AUTOMOBILE_AUX_SOCKET_DIR"),
    )


def mobile_mcp_profile() -> ServerProfile:
    """mobile-mcp (``@mobilenext/mobile-mcp``), pinned to a released version, telemetry off."""
    return ServerProfile(
        name="mobile-mcp",
        command=("npx", "-y", "@mobilenext/mobile-mcp@1.0.4"),
        private_state=_frozen(),
        scrub=("MOBILEMCP_*",),
        build_files=(),
        pinnable=False,
        fixed_env=_frozen({"MOBILEMCP_DISABLE_TELEMETRY": "1"}),
        # Its `mobilecli daemon` detaches into its own process group and claims nothing: it is
        # found by the run token it inherits.
        daemon=DaemonSpec(),
        agent_tools=MOBILE_MCP_TOOLS,
    )


PROFILE_NAMES = ("agentbench", "auto-mobile", "mobile-mcp", "adb-shell")


def get_profile(name: str, *, automobile_dir: Path | None = None) -> ServerProfile:
    """Resolve the configured server profile.

    Args:
        name: One of ``PROFILE_NAMES`` (the ``agentbench_server`` ini option).
        automobile_dir: The AutoMobile checkout (ini ``agentbench_automobile_dir``); required
            for ``auto-mobile``.

    Returns:
        The profile.

    Raises:
        ConfigError: Unknown name, or ``auto-mobile`` without a checkout directory.
    """
    if name == "agentbench":
        return agentbench_profile()
    if name == "auto-mobile":
        if automobile_dir is None:
            raise ConfigError(
                "agentbench_server = auto-mobile needs the AutoMobile checkout: set the ini option "
                "agentbench_automobile_dir to the directory that holds dist/src/index.js"
            )
        return auto_mobile_profile(automobile_dir)
    if name == "mobile-mcp":
        return mobile_mcp_profile()
    if name == "adb-shell":
        return adb_shell_profile()
    raise ConfigError(f"agentbench_server = {name!r} is not a known MCP server profile; expected one of {', '.join(PROFILE_NAMES)}")
